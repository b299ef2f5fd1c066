/** Event subscriptions: signed outbound webhooks, durable through an outbox (DECISIONS §20, ADR 0040). */
export { openSubscriptions, type Subscriptions, type SubscriptionsDeps } from './subscriptions.module.js';
export { EVENT_TYPES, type EventType } from './subscriptions.events.js';
export { signedHeaders } from './subscriptions.sign.js';
