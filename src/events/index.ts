/** Events: the in-process live feed behind WebSocket `subscribe`, and the wrapper that publishes route writes on it. */
export { EventBus, TOPICS, type BusEvent, type BusListener, type Topic } from './event-bus.js';
export { publishWrites } from './publish-writes.js';
