/**
 * The context window's read is bounded (ADR 0043): on a session of 100,000 messages it sizes at most
 * `maxMessages` rows and reads the text of only those within the budget, each cut at the per-message cap; on
 * PostgreSQL the tuples it touched are counted (`pg_stat_xact_user_tables`), and the claim's folded statement
 * reads the same way.
 */
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { contextWithin, ensureSession, fitContext, type ContextBudget } from '../../src/sessions/index.js';
import type { Database } from '../../src/store/index.js';
import { history, HISTORY_MAX_BYTES } from '../../src/sessions/sessions.repo.js';
import { recordClaimedMessage } from '../../src/turns/turn-path.pg.js';
import { describeBackends, type TestStore } from '../helpers/stores.js';
import { insertMessages } from './fixtures.js';

const NOW = '2026-11-27T10:00:00.000Z';
const COUNT = 100_000;
const budget: ContextBudget = { maxTokens: 2_000, maxMessageTokens: 500, maxMessages: 100 };

/** 100,000 messages; every 1,000th is 100 KB; ids sort by position. */
async function fill(db: Kysely<Database>): Promise<void> {
  await ensureSession(db, { key: 's', channel: 'api', now: NOW });
  await insertMessages(db, {
    sessionKey: 's',
    contextEpoch: 0,
    count: COUNT,
    idPrefix: 'msg_',
    giantEvery: 1_000,
    giantBytes: 100_000,
    createdAt: NOW,
  });
}

/** Tuples of `messages` this transaction has read so far (PostgreSQL). */
async function tuplesRead(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: string | null }>`select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n
    from pg_stat_xact_user_tables where relname = 'messages' and schemaname = current_schema()`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

describeBackends('the context read of a 100,000-message session', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
    await fill(db);
  }, 120_000);

  afterEach(async () => {
    await t.cleanup();
  });

  it('reads the newest messages within the budget, the giant one cut, and touches a bounded number of rows', async () => {
    const { window, read } = await db.transaction().execute(async (trx) => {
      const before = backend.name === 'postgres' ? await tuplesRead(trx) : 0;
      const window = await contextWithin(trx, 's', 0, budget);
      const read = backend.name === 'postgres' ? (await tuplesRead(trx)) - before : null;
      return { window, read };
    });
    const sent = fitContext(window, budget);
    expect(sent.at(-1)!.content!.startsWith('ggg')).toBe(true); // msg 99,999 is a giant one…
    expect(Buffer.byteLength(sent.at(-1)!.content!)).toBeLessThanOrEqual(500 * 4); // …sent cut
    expect(sent.at(-1)!.content).toContain('this message is 100000 bytes');
    expect(sent.at(-2)!.content).toBe('message 99998');
    const bytes = sent.reduce((sum, e) => sum + Buffer.byteLength(e.content ?? '') + 16, 0);
    expect(bytes).toBeLessThanOrEqual(2_000 * 4);
    expect(window.length).toBeLessThanOrEqual(budget.maxMessages);
    if (read !== null) {
      console.info(`[payloads] context read of ${COUNT} messages: ${read} tuples of messages touched`);
      // The sizing pass (≤ maxMessages) and the rows read back: never the history.
      expect(read).toBeLessThanOrEqual(2 * budget.maxMessages + 10);
    }
  });

  it('pages history within a byte bound: the newest first, never more than its text budget', async () => {
    const page = await history(db, 's', 0, 500);
    expect(page.total).toBe(COUNT);
    expect(page.items).toHaveLength(500); // 500 newest: one 100 KB message among them, well within 4 MiB
    expect(page.items.at(-1)!.content!.startsWith('ggg')).toBe(true);
    // The newest message is 100 KB: with 50,000 bytes of budget it comes alone; nothing older is read.
    const small = await history(db, 's', 0, 500, 50_000);
    expect(small.items.map((m) => m.id)).toEqual(['msg_00099999']);
    expect(small.total).toBe(COUNT);
    expect(HISTORY_MAX_BYTES).toBe(4 * 1024 * 1024);
  });

  it.skipIf(backend.name !== 'postgres')("the claim's folded statement reads the window the same way", async () => {
    await sql`insert into turns (event_id, session_key, status, payload, owner, context_epoch, accepted_at, updated_at)
      values ('evt_1', 's', 'running', '{}', 'me', 0, ${NOW}, ${NOW})`.execute(db);
    const { recorded, read } = await db.transaction().execute(async (trx) => {
      const before = await tuplesRead(trx);
      const recorded = await recordClaimedMessage(trx, {
        message: {
          id: 'msg_99999999',
          sessionKey: 's',
          role: 'user',
          content: 'new',
          toolCalls: null,
          toolCallId: null,
          name: null,
          eventId: 'evt_1',
          createdAt: NOW,
        },
        event: { type: 'status', data: { status: 'running' } },
        window: budget,
      });
      return { recorded, read: (await tuplesRead(trx)) - before };
    });
    const sent = fitContext(recorded!.window, budget);
    expect(sent.at(-1)!.content).toBe('new');
    expect(sent.at(-2)!.content).toContain('this message is 100000 bytes');
    expect(recorded!.window.length).toBeLessThanOrEqual(budget.maxMessages + 1);
    console.info(`[payloads] claim's window read of ${COUNT} messages: ${read} tuples of messages touched`);
    expect(read).toBeLessThanOrEqual(2 * budget.maxMessages + 10);
  });
});
