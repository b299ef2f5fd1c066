import { turnsTopicEvent, type ClusterBus, type EventBus } from '../events/index.js';
import type { MessagePath } from './message-path.js';

/**
 * Connects the message path to the live feed and, where several gateways
 * share the database, to the cross-process bus (ADR 0025): stored turn
 * events feed the `turns` topic here; on a shared bus they are relayed to
 * the other gateways, and theirs arrive as turn events, wake-ups, freed
 * sessions and interrupt requests.
 */
export function connectTurns(messages: MessagePath, bus: EventBus, cluster: ClusterBus): void {
  const toFeed = (event: Parameters<typeof turnsTopicEvent>[0]): void => {
    if (bus.hasLocalListeners('turns')) bus.deliver(turnsTopicEvent(event));
  };
  messages.tap(toFeed);
  if (!cluster.shared) return;
  messages.relay((event) => cluster.publishTurn(event));
  cluster.receive({
    feed: (event) => bus.deliver(event),
    turn: (event) => {
      if (messages.deliverRemote(event)) toFeed(event);
    },
    wake: (eventId) => messages.wake(eventId),
    session: (sessionKey) => messages.sessionFree(sessionKey),
    interrupt: (eventId, reason) => void messages.interruptHere(eventId, reason),
    turnWanted: (eventId) => messages.follows(eventId) || bus.hasLocalListeners('turns'),
    sessionWanted: (sessionKey) => messages.waitsOn(sessionKey),
  });
}

/**
 * What the message path asks of the cross-process bus and the live feed:
 * whether the bus carries wake-ups now, freed sessions and interrupt requests
 * for the other gateways, and each acceptance on the `sessions` topic.
 */
export function pathHooks(
  cluster: ClusterBus,
  bus: EventBus,
): {
  busConnected(): boolean;
  onSessionFree(sessionKey: string): void;
  interruptElsewhere(eventId: string, reason: string): boolean;
  onAccepted(sessionKey: string, eventId: string): void;
} {
  return {
    busConnected: () => cluster.shared && cluster.connected(),
    onSessionFree: (sessionKey) => cluster.publishSessionFree(sessionKey),
    interruptElsewhere: (eventId, reason) => cluster.publishInterrupt(eventId, reason),
    onAccepted: (sessionKey, eventId) => {
      if (bus.hasListeners('sessions')) bus.publish('sessions', 'updated', { id: sessionKey, event_id: eventId });
    },
  };
}
