import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { TERMINAL_STATUSES, isTerminalStatus } from './turn-status.js';
import {
  type TurnRecord,
  claimTurn,
  finishTurn,
  getTurn,
  holdsTurns,
  insertTurn,
  interruptTurns,
  listSessionTurns,
  listTurnsByStatus,
  pauseTurn,
  resumeTurn,
  sessionBusyBefore,
  updateTurnProgress,
  waitingTurnForSession,
} from './turns.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
/** ISO timestamp `seconds` after the base time. */
const at = (seconds: number): string => new Date(BASE + seconds * 1000).toISOString();
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describeBackends('turns repository', (backend) => {
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

  async function accepted(eventId: string, sessionKey = 's1', owner: string | null = null): Promise<TurnRecord> {
    const { turn } = await insertTurn(db, {
      eventId,
      sessionKey,
      contextEpoch: 0,
      payload: { text: eventId },
      owner,
      now: at(0),
    });
    return turn;
  }

  async function running(eventId: string, owner: string, sessionKey = 's1'): Promise<TurnRecord> {
    await accepted(eventId, sessionKey);
    const turn = await claimTurn(db, eventId, { owner, now: at(1) });
    if (!turn) throw new Error('claim failed');
    return turn;
  }

  describe('insert and read', () => {
    it('inserts an accepted turn once; a repeat returns the existing row untouched', async () => {
      const first = await insertTurn(db, {
        eventId: 'evt_1',
        sessionKey: 's1',
        contextEpoch: 3,
        payload: { text: 'hi', nested: [1, 2] },
        owner: 'gw_a',
        now: at(0),
      });
      expect(first.inserted).toBe(true);
      expect(first.turn).toEqual({
        seq: expect.any(Number),
        eventId: 'evt_1',
        sessionKey: 's1',
        status: 'accepted',
        currentTool: null,
        response: null,
        terminationReason: null,
        contextEpoch: 3,
        acceptedAt: at(0),
        startedAt: null,
        finishedAt: null,
        updatedAt: at(0),
        payload: { text: 'hi', nested: [1, 2] },
        result: null,
        pending: null,
        owner: 'gw_a',
      });
      const again = await insertTurn(db, {
        eventId: 'evt_1',
        sessionKey: 's2',
        contextEpoch: 9,
        payload: 'other',
        owner: null,
        now: at(5),
      });
      expect(again).toEqual({ inserted: false, turn: first.turn });
      expect(await getTurn(db, 'evt_1')).toEqual(first.turn);
      expect(await getTurn(db, 'evt_missing')).toBeNull();
    });

    it('concurrent inserts of one event id store one row', async () => {
      const dbs = await executors();
      const results = await Promise.all(
        range(10).map((i) =>
          insertTurn(dbs[i % dbs.length]!, {
            eventId: 'evt_dup',
            sessionKey: 's1',
            contextEpoch: 0,
            payload: i,
            owner: null,
            now: at(i),
          }),
        ),
      );
      expect(results.filter((r) => r.inserted)).toHaveLength(1);
      expect(new Set(results.map((r) => r.turn.seq)).size).toBe(1);
    });

    it('seq follows arrival; listSessionTurns is newest first and limited to the session', async () => {
      const a = await accepted('evt_a');
      await accepted('evt_other', 's2');
      const b = await accepted('evt_b');
      const c = await accepted('evt_c');
      expect(a.seq).toBeLessThan(b.seq);
      expect(b.seq).toBeLessThan(c.seq);
      expect((await listSessionTurns(db, 's1', 2)).map((turn) => turn.eventId)).toEqual(['evt_c', 'evt_b']);
      expect((await listSessionTurns(db, 's1', 10)).map((turn) => turn.eventId)).toEqual(['evt_c', 'evt_b', 'evt_a']);
      expect(await listSessionTurns(db, 'nobody', 10)).toEqual([]);
    });
  });

  describe('claiming', () => {
    it('moves accepted to running once, recording owner and start', async () => {
      await accepted('evt_1');
      const claimed = await claimTurn(db, 'evt_1', { owner: 'gw_a', now: at(2) });
      expect(claimed).toMatchObject({ status: 'running', owner: 'gw_a', startedAt: at(2), updatedAt: at(2) });
      expect(await claimTurn(db, 'evt_1', { owner: 'gw_b', now: at(3) })).toBeNull();
      expect(await getTurn(db, 'evt_1')).toEqual(claimed);
      expect(await claimTurn(db, 'evt_missing', { owner: 'gw_a', now: at(3) })).toBeNull();
    });

    it('exactly one of 20 concurrent claims wins', async () => {
      await accepted('evt_race');
      const dbs = await executors();
      const results = await Promise.all(
        range(20).map((i) => claimTurn(dbs[i % dbs.length]!, 'evt_race', { owner: `gw_${i}`, now: at(i) })),
      );
      const winners = results.filter((r): r is TurnRecord => r !== null);
      expect(winners).toHaveLength(1);
      expect(await getTurn(db, 'evt_race')).toMatchObject({ status: 'running', owner: winners[0]!.owner });
    });

    it('a finished turn cannot be claimed', async () => {
      await accepted('evt_1');
      await finishTurn(db, 'evt_1', {
        status: 'interrupted',
        response: null,
        terminationReason: 'shutdown',
        result: null,
        now: at(1),
      });
      expect(await claimTurn(db, 'evt_1', { owner: 'gw_a', now: at(2) })).toBeNull();
    });
  });

  describe('progress, pause and resume', () => {
    it('updateTurnProgress only touches a running turn; absent currentTool is kept, null clears it', async () => {
      await accepted('evt_acc');
      expect(await updateTurnProgress(db, 'evt_acc', { currentTool: 'search', now: at(2) })).toBe(false);

      await running('evt_1', 'gw_a');
      expect(await updateTurnProgress(db, 'evt_1', { currentTool: 'search', now: at(2) })).toBe(true);
      expect(await getTurn(db, 'evt_1')).toMatchObject({ currentTool: 'search', updatedAt: at(2) });
      await updateTurnProgress(db, 'evt_1', { now: at(3) });
      expect(await getTurn(db, 'evt_1')).toMatchObject({ currentTool: 'search', updatedAt: at(3) });
      await updateTurnProgress(db, 'evt_1', { currentTool: null, now: at(4) });
      expect(await getTurn(db, 'evt_1')).toMatchObject({ currentTool: null, updatedAt: at(4) });
    });

    it('pauses only from running and resumes only from the matching waiting status', async () => {
      await accepted('evt_1');
      const pending = { tool: 'shell', arguments: { cmd: 'ls' } };
      expect(await pauseTurn(db, 'evt_1', { status: 'waiting_approval', pending, now: at(1) })).toBe(false);

      await claimTurn(db, 'evt_1', { owner: 'gw_a', now: at(1) });
      expect(
        await pauseTurn(db, 'evt_1', {
          status: 'waiting_approval',
          pending,
          response: 'need approval',
          currentTool: 'shell',
          now: at(2),
        }),
      ).toBe(true);
      expect(await getTurn(db, 'evt_1')).toMatchObject({
        status: 'waiting_approval',
        pending,
        response: 'need approval',
        currentTool: 'shell',
        updatedAt: at(2),
      });
      // Already waiting: no second pause, no claim.
      expect(await pauseTurn(db, 'evt_1', { status: 'waiting_clarification', pending: {}, now: at(3) })).toBe(false);
      expect(await claimTurn(db, 'evt_1', { owner: 'gw_b', now: at(3) })).toBeNull();

      expect(await resumeTurn(db, 'evt_1', { from: 'waiting_clarification', owner: 'gw_b', now: at(4) })).toBeNull();
      const resumed = await resumeTurn(db, 'evt_1', { from: 'waiting_approval', owner: 'gw_b', now: at(5) });
      expect(resumed).toMatchObject({ status: 'running', pending: null, owner: 'gw_b', updatedAt: at(5) });
      expect(await resumeTurn(db, 'evt_1', { from: 'waiting_approval', owner: 'gw_c', now: at(6) })).toBeNull();
    });

    it('exactly one of concurrent resumes wins', async () => {
      await running('evt_1', 'gw_a');
      await pauseTurn(db, 'evt_1', { status: 'waiting_clarification', pending: { question: '?' }, now: at(2) });
      const dbs = await executors();
      const results = await Promise.all(
        range(10).map((i) =>
          resumeTurn(dbs[i % dbs.length]!, 'evt_1', { from: 'waiting_clarification', owner: `gw_${i}`, now: at(3) }),
        ),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    });

    it('waitingTurnForSession returns the oldest turn waiting in that status', async () => {
      for (const id of ['evt_1', 'evt_2', 'evt_3']) {
        await running(id, 'gw_a');
        await pauseTurn(db, id, { status: 'waiting_clarification', pending: { id }, now: at(2) });
      }
      await running('evt_other', 'gw_a', 's2');
      await pauseTurn(db, 'evt_other', { status: 'waiting_approval', pending: null, now: at(2) });
      expect(await waitingTurnForSession(db, 's1', 'waiting_clarification')).toMatchObject({
        eventId: 'evt_1',
        pending: { id: 'evt_1' },
      });
      expect(await waitingTurnForSession(db, 's1', 'waiting_approval')).toBeNull();
      expect(await waitingTurnForSession(db, 's2', 'waiting_approval')).toMatchObject({ eventId: 'evt_other' });
    });
  });

  describe('finishing', () => {
    it('the first terminal status wins; a second finish changes nothing', async () => {
      await running('evt_1', 'gw_a');
      await updateTurnProgress(db, 'evt_1', { currentTool: 'search', now: at(2) });
      expect(
        await finishTurn(db, 'evt_1', {
          status: 'completed',
          response: 'done',
          terminationReason: null,
          result: { message: { content: 'done' } },
          now: at(3),
        }),
      ).toBe(true);
      const finished = await getTurn(db, 'evt_1');
      expect(finished).toMatchObject({
        status: 'completed',
        response: 'done',
        terminationReason: null,
        result: { message: { content: 'done' } },
        currentTool: null,
        finishedAt: at(3),
        updatedAt: at(3),
      });

      for (const status of TERMINAL_STATUSES) {
        expect(
          await finishTurn(db, 'evt_1', { status, response: 'late', terminationReason: 'x', result: 1, now: at(9) }),
        ).toBe(false);
      }
      expect(await interruptTurns(db, { statuses: ['running'], reason: 'shutdown', now: at(9) })).toEqual([]);
      expect(await getTurn(db, 'evt_1')).toEqual(finished);
    });

    it('finishes from any open status, and not a missing turn', async () => {
      await accepted('evt_acc');
      await running('evt_wait', 'gw_a');
      await pauseTurn(db, 'evt_wait', { status: 'waiting_approval', pending: {}, now: at(2) });
      const finish = (id: string): Promise<boolean> =>
        finishTurn(db, id, { status: 'failed', response: null, terminationReason: 'error', result: null, now: at(3) });
      expect(await finish('evt_acc')).toBe(true);
      expect(await finish('evt_wait')).toBe(true);
      expect(await finish('evt_missing')).toBe(false);
      expect(await getTurn(db, 'evt_wait')).toMatchObject({ status: 'failed', pending: null, result: null });
    });

    it('exactly one of concurrent finishes wins and its status sticks', async () => {
      await running('evt_1', 'gw_a');
      const dbs = await executors();
      const statuses = range(12).map((i) => TERMINAL_STATUSES[i % TERMINAL_STATUSES.length]!);
      const results = await Promise.all(
        statuses.map((status, i) =>
          finishTurn(dbs[i % dbs.length]!, 'evt_1', {
            status,
            response: `r${i}`,
            terminationReason: null,
            result: i,
            now: at(i),
          }),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect(await getTurn(db, 'evt_1')).toMatchObject({ status: statuses[winner], response: `r${winner}` });
    });

    it('isTerminalStatus knows the terminal set', () => {
      expect(isTerminalStatus('completed')).toBe(true);
      expect(isTerminalStatus('interrupted')).toBe(true);
      expect(isTerminalStatus('running')).toBe(false);
      expect(isTerminalStatus('waiting_approval')).toBe(false);
    });
  });

  describe('recovery', () => {
    beforeEach(async () => {
      await running('evt_a1', 'gw_a');
      await running('evt_b1', 'gw_b');
      await accepted('evt_acc');
      await running('evt_a2', 'gw_a');
      await running('evt_c1', 'gw_c');
      // Running with no owner (e.g. written by an older process).
      await accepted('evt_none');
      await db.updateTable('turns').set({ status: 'running' }).where('event_id', '=', 'evt_none').execute();
      await running('evt_wait', 'gw_a');
      await pauseTurn(db, 'evt_wait', { status: 'waiting_approval', pending: {}, now: at(2) });
      await running('evt_done', 'gw_b');
      await finishTurn(db, 'evt_done', {
        status: 'completed',
        response: 'ok',
        terminationReason: null,
        result: null,
        now: at(3),
      });
    });

    it('listTurnsByStatus orders by seq and filters by owner', async () => {
      const ids = (turns: TurnRecord[]): string[] => turns.map((turn) => turn.eventId);
      expect(ids(await listTurnsByStatus(db, ['running'], { limit: 10 }))).toEqual([
        'evt_a1',
        'evt_b1',
        'evt_a2',
        'evt_c1',
        'evt_none',
      ]);
      expect(ids(await listTurnsByStatus(db, ['running', 'accepted'], { limit: 3 }))).toEqual([
        'evt_a1',
        'evt_b1',
        'evt_acc',
      ]);
      expect(ids(await listTurnsByStatus(db, ['running'], { limit: 10, ownerNot: 'gw_a' }))).toEqual([
        'evt_b1',
        'evt_c1',
        'evt_none',
      ]);
      expect(ids(await listTurnsByStatus(db, ['running'], { limit: 10, ownerIn: ['gw_a', 'gw_c'] }))).toEqual([
        'evt_a1',
        'evt_a2',
        'evt_c1',
      ]);
      expect(await listTurnsByStatus(db, ['running'], { limit: 10, ownerIn: [] })).toEqual([]);
      expect(await listTurnsByStatus(db, [], { limit: 10 })).toEqual([]);
    });

    it('interruptTurns with ownerNotIn takes unowned turns and those of other owners, nothing else', async () => {
      const interrupted = await interruptTurns(db, {
        statuses: ['running'],
        ownerNotIn: ['gw_a', 'gw_c'],
        reason: 'process_restart',
        now: at(10),
      });
      expect(interrupted).toEqual(['evt_b1', 'evt_none']);
      expect(await getTurn(db, 'evt_b1')).toMatchObject({
        status: 'interrupted',
        terminationReason: 'process_restart',
        finishedAt: at(10),
        updatedAt: at(10),
      });
      const status = async (id: string): Promise<string | undefined> => (await getTurn(db, id))?.status;
      expect(await status('evt_a1')).toBe('running');
      expect(await status('evt_c1')).toBe('running');
      expect(await status('evt_acc')).toBe('accepted');
      expect(await status('evt_wait')).toBe('waiting_approval');
      expect(await getTurn(db, 'evt_done')).toMatchObject({ status: 'completed', terminationReason: null });
    });

    it('interruptTurns with ownerIn takes only those owners; an empty ownerIn takes nothing', async () => {
      expect(await interruptTurns(db, { statuses: ['running'], ownerIn: [], reason: 'shutdown', now: at(10) })).toEqual(
        [],
      );
      expect(
        await interruptTurns(db, {
          statuses: ['running', 'waiting_approval'],
          ownerIn: ['gw_a'],
          reason: 'shutdown',
          now: at(10),
        }),
      ).toEqual(['evt_a1', 'evt_a2', 'evt_wait']);
      expect(await getTurn(db, 'evt_wait')).toMatchObject({ status: 'interrupted', pending: null });
      expect((await listTurnsByStatus(db, ['running'], { limit: 10 })).map((turn) => turn.eventId)).toEqual([
        'evt_b1',
        'evt_c1',
        'evt_none',
      ]);
    });

    it('interruptTurns without an owner filter takes every turn in the statuses', async () => {
      expect(await interruptTurns(db, { statuses: ['accepted', 'running'], reason: 'shutdown', now: at(10) })).toEqual([
        'evt_a1',
        'evt_b1',
        'evt_acc',
        'evt_a2',
        'evt_c1',
        'evt_none',
      ]);
      expect(await interruptTurns(db, { statuses: ['running'], reason: 'again', now: at(11) })).toEqual([]);
    });

    it('sessionBusyBefore: an earlier accepted turn of the session, or any running one, makes a turn wait', async () => {
      const first = await accepted('evt_s3_1', 's3');
      const second = await accepted('evt_s3_2', 's3');
      await accepted('evt_s4_1', 's4');
      expect(await sessionBusyBefore(db, 's3', first.eventId)).toBe(false);
      expect(await sessionBusyBefore(db, 's3', second.eventId)).toBe(true);
      await claimTurn(db, 'evt_s3_1', { owner: 'gw_a', now: at(5) });
      expect(await sessionBusyBefore(db, 's3', second.eventId)).toBe(true);
      await pauseTurn(db, 'evt_s3_1', { status: 'waiting_clarification', pending: {}, now: at(6) });
      expect(await sessionBusyBefore(db, 's3', second.eventId)).toBe(false);
      // A running later turn (claimed out of order elsewhere) blocks an earlier one too: one at a time.
      await claimTurn(db, 'evt_s3_2', { owner: 'gw_b', now: at(7) });
      const third = await accepted('evt_s3_3', 's3');
      expect(await sessionBusyBefore(db, 's3', third.eventId)).toBe(true);
      expect(await sessionBusyBefore(db, 's3', 'evt_s3_2')).toBe(false);
      expect(await sessionBusyBefore(db, 's4', 'evt_s4_1')).toBe(false);
    });

    if (backend.name === 'postgres') {
      it('holdsTurns: true only while every turn is open and owned by the caller', async () => {
        await running('evt_h1', 'gw_a', 's5');
        await running('evt_h2', 'gw_a', 's6');
        await running('evt_h3', 'gw_b', 's7');
        expect(await db.transaction().execute((trx) => holdsTurns(trx, ['evt_h1', 'evt_h2'], 'gw_a'))).toBe(true);
        expect(await db.transaction().execute((trx) => holdsTurns(trx, ['evt_h1', 'evt_h3'], 'gw_a'))).toBe(false);
        expect(await db.transaction().execute((trx) => holdsTurns(trx, ['evt_missing'], 'gw_a'))).toBe(false);
        await interruptTurns(db, {
          statuses: ['running'],
          eventIdIn: ['evt_h1'],
          reason: 'process_restart',
          now: at(9),
        });
        expect(await db.transaction().execute((trx) => holdsTurns(trx, ['evt_h1'], 'gw_a'))).toBe(false);
      });
    }
  });
});
