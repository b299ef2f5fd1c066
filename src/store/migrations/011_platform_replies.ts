import type { CapabilityMigration } from './index.js';

/**
 * The replies a chat-platform channel (Telegram, Slack) has delivered
 * (DECISIONS §16, ADR 0027): one row per turn, written once the reply's
 * last message is posted, holding the turn status it showed. At start a
 * channel delivers the recent turns of its chats that have no row, or one
 * with another status, so a process killed between a turn's outcome and
 * its reply still answers once after the restart.
 *
 * - `status` is the turn status the delivered reply showed (`completed`,
 *   `waiting_approval`…): a paused turn resumed to its end is owed again.
 * - Rows of turns older than the catch-up window are deleted by the channel.
 */
export const migration011: CapabilityMigration = {
  name: '011_platform_replies',
  sqlite: [
    `create table platform_replies (
      event_id text primary key,
      platform text not null,
      status text not null,
      delivered_at text not null
    )`,
    'create index platform_replies_age on platform_replies (delivered_at)',
  ],
  postgres: [
    `create table platform_replies (
      event_id text collate "C" primary key,
      platform text collate "C" not null,
      status text collate "C" not null,
      delivered_at text collate "C" not null
    )`,
    'create index platform_replies_age on platform_replies (delivered_at)',
  ],
};
