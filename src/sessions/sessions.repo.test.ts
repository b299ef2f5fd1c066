import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import {
  type MessageRecord,
  type SessionCursor,
  appendMessage,
  bumpEpoch,
  contextMessages,
  countSessions,
  createSession,
  deleteSession,
  ensureSession,
  ensureSessionCreated,
  getSession,
  history,
  listSessions,
  touchSession,
  touchSessionCounted,
} from './sessions.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
/** ISO timestamp `minutes` after the base time. */
const at = (minutes: number): string => new Date(BASE + minutes * 60_000).toISOString();
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

function message(sessionKey: string, n: number, epoch: number, extra: Partial<MessageRecord> = {}): MessageRecord {
  return {
    id: `msg_${String(n).padStart(4, '0')}`,
    sessionKey,
    contextEpoch: epoch,
    role: n % 2 === 0 ? 'user' : 'assistant',
    content: `m${n}`,
    toolCalls: null,
    toolCallId: null,
    name: null,
    eventId: `evt_${n}`,
    createdAt: at(n),
    ...extra,
  };
}

describeBackends('sessions repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  /** Executors on separate connections where the backend has them (PostgreSQL pools), for real races. */
  async function executors(): Promise<Kysely<Database>[]> {
    if (backend.name === 'sqlite') return [db];
    const others = await Promise.all(range(3).map(() => t.reopen()));
    return [db, ...others.map((s) => s.db)];
  }

  describe('ensure, create, get', () => {
    it('creates a missing session, then returns the live one unchanged', async () => {
      const created = await ensureSession(db, {
        key: 'gateway:api:1',
        channel: 'api',
        metadata: { a: 1 },
        now: at(0),
      });
      expect(created).toEqual({
        key: 'gateway:api:1',
        channel: 'api',
        status: 'active',
        createdAt: at(0),
        lastActive: at(0),
        messageCount: 0,
        contextEpoch: 0,
        metadata: { a: 1 },
        deletedAt: null,
        agent: 'main',
        principal: 'default',
      });
      const again = await ensureSession(db, { key: 'gateway:api:1', channel: 'other', metadata: { b: 2 }, now: at(5) });
      expect(again).toEqual(created);
      expect(await getSession(db, 'gateway:api:1')).toEqual(created);
    });

    it('createSession stores metadata and refuses a duplicate key', async () => {
      const created = await createSession(db, {
        key: 'gateway:api:x',
        channel: 'api',
        metadata: { nested: { ok: true }, list: [1, 'two'] },
        now: at(0),
      });
      expect(created.metadata).toEqual({ nested: { ok: true }, list: [1, 'two'] });
      await expect(
        createSession(db, { key: 'gateway:api:x', channel: 'api', metadata: {}, now: at(1) }),
      ).rejects.toThrow();
    });

    it('getSession is null for a missing key', async () => {
      expect(await getSession(db, 'gateway:api:none')).toBeNull();
    });

    it('concurrent ensureSession calls on a new key create it once', async () => {
      const dbs = await executors();
      const results = await Promise.all(
        range(10).map((i) =>
          ensureSession(dbs[i % dbs.length]!, { key: 'gateway:api:race', channel: 'api', now: at(i) }),
        ),
      );
      expect(new Set(results.map((s) => s.createdAt)).size).toBe(1);
      expect(results.every((s) => s.contextEpoch === 0)).toBe(true);
    });
  });

  describe('delete and revive', () => {
    it('deletes messages and hides the session; reuse revives it in a new context epoch', async () => {
      await ensureSession(db, { key: 'k', channel: 'telegram', metadata: { v: 1 }, now: at(0) });
      for (const n of range(3)) await appendMessage(db, message('k', n, 0));
      await appendMessage(db, message('other', 10, 0));
      await touchSession(db, 'k', { now: at(3), messagesAdded: 3 });

      expect(await deleteSession(db, 'k', at(4))).toBe(true);
      expect(await getSession(db, 'k')).toBeNull();
      expect(await history(db, 'k', 0, 100)).toEqual({ items: [], total: 0 });
      expect((await history(db, 'other', 0, 100)).total).toBe(1);
      expect(await deleteSession(db, 'k', at(5))).toBe(false);
      expect(await touchSession(db, 'k', { now: at(5), messagesAdded: 1 })).toBe(false);
      expect(await bumpEpoch(db, 'k', at(5))).toBeNull();

      const revived = await ensureSession(db, { key: 'k', channel: 'api', metadata: { v: 2 }, now: at(6) });
      expect(revived).toEqual({
        key: 'k',
        channel: 'api',
        status: 'active',
        createdAt: at(6),
        lastActive: at(6),
        messageCount: 0,
        contextEpoch: 2, // +1 at deletion, +1 at revival
        metadata: { v: 2 },
        deletedAt: null,
        agent: 'main',
        principal: 'default',
      });
      expect(await getSession(db, 'k')).toEqual(revived);
      expect(await history(db, 'k', revived.contextEpoch, 100)).toEqual({ items: [], total: 0 });
    });

    it('ensureSessionCreated tells a key it created from one it revived or found live, with the insert first or not', async () => {
      for (const missing of [false, true]) {
        const key = `k${missing ? 'm' : ''}`;
        const input = { key, channel: 'api', now: at(0) };
        const made = await ensureSessionCreated(db, input, { missing });
        expect(made).toMatchObject({ created: true, session: { key, contextEpoch: 0, messageCount: 0 } });
        expect(await ensureSessionCreated(db, input, { missing })).toEqual({ created: false, session: made.session });
        await deleteSession(db, key, at(1));
        const revived = await ensureSessionCreated(db, { ...input, now: at(2) }, { missing });
        expect(revived).toMatchObject({ created: false, session: { key, contextEpoch: 2, createdAt: at(2) } });
        expect(await getSession(db, key)).toEqual(revived.session);
      }
    });

    it('touchSessionCounted answers the epoch and the count after it; null for a deleted session', async () => {
      await ensureSession(db, { key: 'k', channel: 'api', now: at(0) });
      expect(await touchSessionCounted(db, 'k', { now: at(1), messagesAdded: 1 })).toEqual({
        epoch: 0,
        messageCount: 1,
      });
      await bumpEpoch(db, 'k', at(2));
      // A new epoch keeps the session's count: only a session's first message counts one.
      expect(await touchSessionCounted(db, 'k', { now: at(3), messagesAdded: 1 })).toEqual({
        epoch: 1,
        messageCount: 2,
      });
      await deleteSession(db, 'k', at(4));
      expect(await touchSessionCounted(db, 'k', { now: at(5), messagesAdded: 1 })).toBeNull();
      await ensureSession(db, { key: 'k', channel: 'api', now: at(6) });
      expect(await touchSessionCounted(db, 'k', { now: at(7), messagesAdded: 1 })).toEqual({
        epoch: 3,
        messageCount: 1,
      });
    });

    it('deleteSession is false for a missing key', async () => {
      expect(await deleteSession(db, 'nobody', at(0))).toBe(false);
    });

    it('concurrent revivals of a deleted key advance the epoch once', async () => {
      await ensureSession(db, { key: 'k', channel: 'api', now: at(0) });
      await deleteSession(db, 'k', at(1));
      const dbs = await executors();
      const results = await Promise.all(
        range(10).map((i) => ensureSession(dbs[i % dbs.length]!, { key: 'k', channel: 'api', now: at(2) })),
      );
      expect(results.map((s) => s.contextEpoch)).toEqual(range(10).map(() => 2));
    });
  });

  describe('listing', () => {
    // 8 live sessions; two pairs share last_active so the key breaks the tie (byte order: upper case first).
    const seeds: [key: string, lastActive: number, channel: string][] = [
      ['gateway:api:0', 0, 'api'],
      ['gateway:api:a', 1, 'api'],
      ['gateway:api:b', 2, 'api'],
      ['gateway:tg:B', 3, 'telegram'],
      ['gateway:tg:a', 3, 'telegram'],
      ['gateway:api:c', 4, 'api'],
      ['gateway:api:d', 5, 'api'],
      ['gateway:api:e', 5, 'api'],
    ];
    const expectedOrder = [
      'gateway:api:e',
      'gateway:api:d',
      'gateway:api:c',
      'gateway:tg:a',
      'gateway:tg:B',
      'gateway:api:b',
      'gateway:api:a',
      'gateway:api:0',
    ];

    beforeEach(async () => {
      for (const [key, minute, channel] of seeds) {
        await ensureSession(db, { key, channel, now: at(0) });
        await touchSession(db, key, { now: at(minute), messagesAdded: 1 });
      }
      await ensureSession(db, { key: 'gateway:api:deleted', channel: 'api', now: at(9) });
      await deleteSession(db, 'gateway:api:deleted', at(9));
    });

    it('pages newest-active first with a stable keyset cursor, total and has_more', async () => {
      const seen: string[] = [];
      const pages: { hasMore: boolean; total: number; size: number }[] = [];
      let cursor: SessionCursor | null = null;
      for (let i = 0; i < 3; i++) {
        const page = await listSessions(db, { limit: 3, cursor });
        seen.push(...page.items.map((s) => s.key));
        pages.push({ hasMore: page.hasMore, total: page.total, size: page.items.length });
        cursor = page.nextCursor;
        if (i === 0) {
          // Activity between pages: a new session and a touched, already listed one move to the
          // front; the later pages neither shift nor repeat anything.
          await ensureSession(db, { key: 'gateway:api:new', channel: 'api', now: at(20) });
          await touchSession(db, 'gateway:api:d', { now: at(21), messagesAdded: 1 });
        }
      }
      expect(pages).toEqual([
        { hasMore: true, total: 8, size: 3 },
        { hasMore: true, total: 9, size: 3 },
        { hasMore: false, total: 9, size: 2 },
      ]);
      expect(seen).toEqual(expectedOrder);
      expect(cursor).toBeNull();
      const fresh = await listSessions(db, { limit: 3 });
      expect(fresh.items.map((s) => s.key)).toEqual(['gateway:api:d', 'gateway:api:new', 'gateway:api:e']);
    });

    it('the last page is exactly full without a spurious has_more', async () => {
      const first = await listSessions(db, { limit: 4 });
      const second = await listSessions(db, { limit: 4, cursor: first.nextCursor });
      expect(first.items.map((s) => s.key)).toEqual(expectedOrder.slice(0, 4));
      expect(second.items.map((s) => s.key)).toEqual(expectedOrder.slice(4));
      expect([first.hasMore, second.hasMore]).toEqual([true, false]);
      const exact = await listSessions(db, { limit: 8 });
      expect(exact.hasMore).toBe(false);
      expect(exact.nextCursor).toBeNull();
    });

    it('filters by channel and status; total follows the filters', async () => {
      const telegram = await listSessions(db, { channel: 'telegram', limit: 10 });
      expect(telegram.items.map((s) => s.key)).toEqual(['gateway:tg:a', 'gateway:tg:B']);
      expect(telegram.total).toBe(2);

      await db.updateTable('sessions').set({ status: 'archived' }).where('key', '=', 'gateway:api:c').execute();
      const archived = await listSessions(db, { status: 'archived', limit: 10 });
      expect(archived.items.map((s) => s.key)).toEqual(['gateway:api:c']);
      const active = await listSessions(db, { status: 'active', limit: 2 });
      expect(active).toMatchObject({ total: 7, hasMore: true });
      expect((await listSessions(db, { status: 'all', limit: 1 })).total).toBe(8);
      expect(await countSessions(db)).toEqual({ total: 8, active: 7 });
    });
  });

  describe('messages, epochs and counters', () => {
    beforeEach(async () => {
      await ensureSession(db, { key: 'k', channel: 'api', now: at(0) });
    });

    it('history returns the newest `limit` in chronological order and the epoch total', async () => {
      // Inserted out of order: ordering comes from the time-sortable id, not insertion.
      for (const n of [3, 0, 4, 1, 2]) await appendMessage(db, message('k', n, 0));
      const page = await history(db, 'k', 0, 3);
      expect(page.total).toBe(5);
      expect(page.items.map((m) => m.id)).toEqual(['msg_0002', 'msg_0003', 'msg_0004']);
      expect((await history(db, 'k', 0, 500)).items).toHaveLength(5);
    });

    it('round-trips every message field', async () => {
      const toolCall = message('k', 1, 0, {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'call_1', name: 'search', arguments: '{"q":"x"}' }],
      });
      const toolResult = message('k', 2, 0, { role: 'tool', toolCallId: 'call_1', name: 'search', eventId: null });
      await appendMessage(db, toolCall);
      await appendMessage(db, toolResult);
      expect(await contextMessages(db, 'k', 0, 10)).toEqual([toolCall, toolResult]);
      await expect(appendMessage(db, toolCall)).rejects.toThrow();
    });

    it('bumpEpoch starts a new context: older messages leave context and history', async () => {
      for (const n of range(3)) await appendMessage(db, message('k', n, 0));
      expect(await bumpEpoch(db, 'k', at(10))).toBe(1);
      expect(await contextMessages(db, 'k', 1, 10)).toEqual([]);
      await appendMessage(db, message('k', 11, 1));
      expect((await contextMessages(db, 'k', 1, 10)).map((m) => m.id)).toEqual(['msg_0011']);
      expect(await history(db, 'k', 1, 10)).toMatchObject({ total: 1 });
      expect((await contextMessages(db, 'k', 0, 2)).map((m) => m.id)).toEqual(['msg_0001', 'msg_0002']);
      expect(await getSession(db, 'k')).toMatchObject({ contextEpoch: 1, lastActive: at(10) });
    });

    it('touchSession moves last_active and adds to message_count', async () => {
      expect(await touchSession(db, 'k', { now: at(1), messagesAdded: 2 })).toBe(true);
      await touchSession(db, 'k', { now: at(2), messagesAdded: 1 });
      expect(await getSession(db, 'k')).toMatchObject({ lastActive: at(2), messageCount: 3, createdAt: at(0) });
    });

    it('composes inside one transaction and rolls back with it', async () => {
      await expect(
        db.transaction().execute(async (trx) => {
          await appendMessage(trx, message('k', 1, 0));
          await touchSession(trx, 'k', { now: at(1), messagesAdded: 1 });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await history(db, 'k', 0, 10)).toEqual({ items: [], total: 0 });
      expect(await getSession(db, 'k')).toMatchObject({ messageCount: 0, lastActive: at(0) });

      await t.store.writer.run(async (trx) => {
        await appendMessage(trx, message('k', 1, 0));
        await touchSession(trx, 'k', { now: at(1), messagesAdded: 1 });
      });
      expect(await getSession(db, 'k')).toMatchObject({ messageCount: 1, lastActive: at(1) });
    });

    it('countSessions ignores deleted sessions', async () => {
      await ensureSession(db, { key: 'k2', channel: 'api', now: at(0) });
      await deleteSession(db, 'k2', at(1));
      expect(await countSessions(db)).toEqual({ total: 1, active: 1 });
    });
  });
});
