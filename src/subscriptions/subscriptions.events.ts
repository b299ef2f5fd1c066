/** The events a subscription may ask for (DECISIONS §20); `*` asks for every one. */
export const EVENT_TYPES = [
  'message.received',
  'turn.completed',
  'turn.failed',
  'turn.waiting_approval',
  'session.created',
  'task.completed',
  'cron.fired',
  'channel.state_changed',
] as const;

/** One event type. */
export type EventType = (typeof EVENT_TYPES)[number];

/** The test event `POST /subscriptions/{id}/test` sends; no subscription asks for it. */
export const PING_EVENT = 'subscription.ping';

/** Every event name a subscription's `events` may hold. */
export const EVENT_NAMES = ['*', ...EVENT_TYPES] as const;

/** True when a subscription asking for `events` wants `type`. */
export function wantsEvent(events: readonly string[], type: string): boolean {
  return events.includes('*') || events.includes(type);
}
