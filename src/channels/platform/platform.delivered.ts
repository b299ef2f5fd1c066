import type { Kysely } from 'kysely';
import type { Database } from '../../store/index.js';
import { REPLY_OWED_STATUSES, listTurnsWithoutReply } from '../../turns/index.js';

/**
 * The replies a platform channel has delivered (`platform_replies`,
 * migration 011), and the recent turns of its chats whose reply is still
 * owed: a process killed after a turn's outcome was written but before its
 * reply was posted answers it once after the restart (DECISIONS §16).
 */
export interface DeliveredReplies {
  /** Records that the reply of `eventId`, showing `status`, has been posted. */
  delivered(eventId: string, status: string): Promise<void>;
  /** The turns of this platform's chats, settled or paused since `sinceIso`, with no reply showing their status. */
  owed(sinceIso: string, limit: number): Promise<string[]>;
  /** Forgets the records delivered before `beforeIso` (older than any catch-up looks). */
  prune(beforeIso: string): Promise<void>;
}

/** `DeliveredReplies` of `platform` in the gateway's database. */
export function deliveredReplies(db: Kysely<Database>, platform: string, now: () => string): DeliveredReplies {
  const shown = [...REPLY_OWED_STATUSES];
  return {
    async delivered(eventId, status) {
      await db
        .insertInto('platform_replies')
        .values({ event_id: eventId, platform, status, delivered_at: now() })
        .onConflict((oc) =>
          oc.column('event_id').doUpdateSet((eb) => ({
            status: eb.ref('excluded.status'),
            delivered_at: eb.ref('excluded.delivered_at'),
          })),
        )
        .execute();
    },
    owed(sinceIso, limit) {
      return listTurnsWithoutReply(db, platform, shown, sinceIso, limit);
    },
    async prune(beforeIso) {
      await db
        .deleteFrom('platform_replies')
        .where('platform', '=', platform)
        .where('delivered_at', '<', beforeIso)
        .execute();
    },
  };
}
