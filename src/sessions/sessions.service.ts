import { errors } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Transaction } from 'kysely';
import type { Database, Store } from '../store/index.js';
import { ownsSession } from './session-owner.js';
import { presentSession } from './sessions.presenter.js';
import {
  countSessions,
  createSession,
  deleteSession,
  firstUserText,
  getSession,
  history,
  listSessions,
  type ListSessionsOptions,
  type MessageRecord,
  type SessionOrigin,
  type SessionPage,
  type SessionRecord,
} from './sessions.repo.js';

/** The part of the event outbox (the message path's `EventOutbox`, ADR 0040) sessions write through. */
export interface SessionOutbox {
  wants(type: string): boolean;
  write(
    trx: Transaction<Database>,
    events: ReadonlyArray<{ type: string; timestamp: string; data: Record<string, unknown> }>,
  ): Promise<number>;
  committed(): void;
}

/**
 * Sessions (spec: Sessions; DECISIONS §2, §5): the reads and writes behind
 * the API. Messages reach a session through the message path, not here.
 */
export class SessionService {
  constructor(
    private readonly options: {
      store: Store;
      clock: Clock;
      ids: IdGenerator;
      /** Event subscriptions (DECISIONS §20): `session.created` written with the session (the message path's outbox). */
      outbox?: SessionOutbox | null;
    },
  ) {}

  /** One page of sessions, newest activity first. */
  list(options: ListSessionsOptions): Promise<SessionPage> {
    return listSessions(this.options.store.db, options);
  }

  /** Creates `gateway:<channel>:<generated id>` (DECISIONS §5), owned and run as `origin` says (§17-18). */
  async create(input: { channel: string; metadata: Record<string, unknown> } & SessionOrigin): Promise<SessionRecord> {
    const key = `gateway:${input.channel}:${this.options.ids.next('chat')}`;
    const now = isoTime(this.options.clock.now());
    const outbox = this.options.outbox ?? null;
    const reported = outbox !== null && outbox.wants('session.created');
    const session = await this.options.store.writer.run(async (trx) => {
      const made = await createSession(trx, { ...input, key, now });
      if (reported) await outbox.write(trx, [{ type: 'session.created', timestamp: now, data: presentSession(made) }]);
      return made;
    });
    if (reported) outbox.committed();
    return session;
  }

  /**
   * The session of `key`; 404 when there is none (or it was deleted), and
   * when it is not the caller's (`scope`, see `ownerScope`): existence must
   * not leak (DECISIONS §18).
   */
  async require(key: string, scope: string | null = null): Promise<SessionRecord> {
    const session = await getSession(this.options.store.db, key);
    if (!session || !ownsSession(scope, session.principal)) throw errors.notFound('session');
    return session;
  }

  /** `session` with the source of its title read (one indexed row). */
  async withTitle(session: SessionRecord): Promise<SessionRecord> {
    return { ...session, firstUserText: await firstUserText(this.options.store.db, session.key, session.contextEpoch) };
  }

  /** Deletes a session's messages and context (memory stays; the key starts a new epoch); 404 when there is none. */
  async delete(key: string): Promise<void> {
    const now = isoTime(this.options.clock.now());
    const deleted = await this.options.store.writer.run((trx) => deleteSession(trx, key, now));
    if (!deleted) throw errors.notFound('session');
  }

  /** The newest `limit` entries of the session's current context, in chronological order. */
  history(session: SessionRecord, limit: number): Promise<{ items: MessageRecord[]; total: number }> {
    return history(this.options.store.db, session.key, session.contextEpoch, limit);
  }

  /** Sessions in all and active ones (health). */
  counts(): Promise<{ total: number; active: number }> {
    return countSessions(this.options.store.db);
  }
}
