/**
 * Events: the live feed behind WebSocket `subscribe` (`publisher(topic)` feeds http's route-write wrapper), and the
 * cross-process bus (ADR 0025) that carries the feed, turn events and wake-ups between gateways.
 */
export { EventBus, TOPICS, turnsTopicEvent, type BusEvent, type BusListener, type Topic } from './event-bus.js';
export {
  BusUnavailableError,
  busUrlForDisplay,
  localBusAdapter,
  type BusAdapter,
  type BusConnectionListener,
  type BusDriver,
  type BusMessageHandler,
} from './bus-adapter.js';
export {
  busSubjects,
  busTimers,
  ClusterBus,
  HEARTBEAT_MS,
  type BusDropReason,
  type BusHealth,
  type BusLogger,
  type BusObserver,
  type BusPeer,
  type BusReceivers,
  type BusTimers,
  type BusTurnEvent,
  type ClusterBusOptions,
} from './cluster-bus.js';
export { openClusterBus, type OpenBusOptions } from './bus.js';
