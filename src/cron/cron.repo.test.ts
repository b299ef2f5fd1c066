import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { finishTurn, insertTurn } from '../turns/turns.repo.js';
import {
  NOT_AUTHORIZED,
  RUNS_KEPT_PER_JOB,
  type CronJobRecord,
  claimScheduledRun,
  deleteCronJob,
  finishCronRun,
  getCronJob,
  insertCronJob,
  listAbandonedRuns,
  listCronJobs,
  listCronRuns,
  listDueCronJobs,
  listSettledRuns,
  setRunEvent,
  startManualRun,
  updateCronJob,
} from './cron.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
/** ISO timestamp `minutes` after the base time. */
const at = (minutes: number): string => new Date(BASE + minutes * 60_000).toISOString();
const pad = (n: number): string => String(n).padStart(4, '0');

function job(n: number, extra: Partial<CronJobRecord> = {}): CronJobRecord {
  return {
    id: `cron_${pad(n)}`,
    schedule: '*/5 * * * *',
    prompt: `prompt ${n}`,
    enabled: true,
    authorized: false,
    lastRun: null,
    nextRun: at(5),
    createdAt: at(0),
    updatedAt: at(0),
    ...extra,
  };
}

/** Claim input for the slot at `minutes`, read as `next_run`, moving it 5 minutes on. */
function slot(cronId: string, minutes: number, runId: string, requireAuthorization = false) {
  return {
    cronId,
    expectedNextRun: at(minutes),
    scheduledAt: at(minutes),
    nextRun: at(minutes + 5),
    runId,
    now: at(minutes),
    requireAuthorization,
  };
}

describeBackends('cron repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  describe('jobs', () => {
    it('stores, reads, lists oldest first, and maps booleans', async () => {
      const second = await insertCronJob(db, job(2, { enabled: false, authorized: true, nextRun: null }));
      const first = await insertCronJob(db, job(1));
      expect(first).toEqual(job(1));
      expect(second).toMatchObject({ enabled: false, authorized: true, nextRun: null });
      expect(await getCronJob(db, 'cron_0001')).toEqual(job(1));
      expect(await getCronJob(db, 'cron_missing')).toBeNull();
      expect((await listCronJobs(db)).map((j) => j.id)).toEqual(['cron_0001', 'cron_0002']);
    });

    it('updates the fields given; with an expected next_run only while it still has it', async () => {
      await insertCronJob(db, job(1));
      const updated = await updateCronJob(db, 'cron_0001', {
        prompt: 'new',
        authorized: true,
        enabled: false,
        nextRun: null,
        updatedAt: at(1),
      });
      expect(updated).toEqual({
        ...job(1),
        prompt: 'new',
        authorized: true,
        enabled: false,
        nextRun: null,
        updatedAt: at(1),
      });
      expect(await updateCronJob(db, 'cron_0001', { nextRun: at(9) }, at(5))).toBeNull();
      expect(await updateCronJob(db, 'cron_0001', { nextRun: at(9) }, null)).toMatchObject({ nextRun: at(9) });
      expect(await updateCronJob(db, 'cron_0001', {})).toMatchObject({ nextRun: at(9) });
      expect(await updateCronJob(db, 'cron_missing', { prompt: 'x' })).toBeNull();
    });

    it('delete removes the job and its runs, once', async () => {
      await insertCronJob(db, job(1));
      await insertCronJob(db, job(2));
      await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001'));
      await claimScheduledRun(db, slot('cron_0002', 5, 'crun_0002'));
      expect(await deleteCronJob(db, 'cron_0001')).toBe(true);
      expect(await deleteCronJob(db, 'cron_0001')).toBe(false);
      expect(await getCronJob(db, 'cron_0001')).toBeNull();
      expect(await listCronRuns(db, 'cron_0001', 10)).toEqual([]);
      expect(await listCronRuns(db, 'cron_0002', 10)).toHaveLength(1);
    });

    it('due jobs: enabled, next_run at or before now, earliest first, limited', async () => {
      await insertCronJob(db, job(1, { nextRun: at(5) }));
      await insertCronJob(db, job(2, { nextRun: at(3) }));
      await insertCronJob(db, job(3, { nextRun: at(6) }));
      await insertCronJob(db, job(4, { nextRun: at(1), enabled: false }));
      await insertCronJob(db, job(5, { nextRun: null }));
      await insertCronJob(db, job(6, { nextRun: at(3) }));
      expect((await listDueCronJobs(db, at(5), 10)).map((j) => j.id)).toEqual(['cron_0002', 'cron_0006', 'cron_0001']);
      expect((await listDueCronJobs(db, at(5), 2)).map((j) => j.id)).toEqual(['cron_0002', 'cron_0006']);
      expect(await listDueCronJobs(db, at(2), 10)).toEqual([]);
    });
  });

  describe('claiming scheduled runs', () => {
    it('the first claim of a slot wins: next_run and last_run move, the run is running', async () => {
      await insertCronJob(db, job(1));
      const claimed = await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001'));
      expect(claimed?.job).toMatchObject({ id: 'cron_0001', lastRun: at(5), nextRun: at(10), prompt: 'prompt 1' });
      expect(claimed?.run).toEqual({
        id: 'crun_0001',
        cronId: 'cron_0001',
        triggeredBy: 'schedule',
        scheduledAt: at(5),
        startedAt: at(5),
        finishedAt: null,
        status: 'running',
        eventId: null,
        reason: null,
      });
      expect(await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0002'))).toBeNull();
      expect(await listCronRuns(db, 'cron_0001', 10)).toHaveLength(1);
    });

    it('records skipped (not_authorized) when authorisation is required and missing; the job stays scheduled', async () => {
      await insertCronJob(db, job(1));
      const claimed = await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001', true));
      expect(claimed?.run).toMatchObject({
        status: 'skipped',
        reason: NOT_AUTHORIZED,
        startedAt: null,
        finishedAt: at(5),
        eventId: null,
      });
      expect(claimed?.job).toMatchObject({ nextRun: at(10), enabled: true, authorized: false });
      await updateCronJob(db, 'cron_0001', { authorized: true });
      const authorized = await claimScheduledRun(db, slot('cron_0001', 10, 'crun_0002', true));
      expect(authorized?.run.status).toBe('running');
    });

    it('does not claim a disabled job, a changed next_run, or a missing job', async () => {
      await insertCronJob(db, job(1, { enabled: false }));
      await insertCronJob(db, job(2));
      expect(await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001'))).toBeNull();
      expect(await claimScheduledRun(db, { ...slot('cron_0002', 5, 'crun_0002'), expectedNextRun: at(4) })).toBeNull();
      expect(await claimScheduledRun(db, slot('cron_missing', 5, 'crun_0003'))).toBeNull();
      expect(await getCronJob(db, 'cron_0002')).toMatchObject({ nextRun: at(5), lastRun: null });
    });

    it('a slot already run is not run again, though next_run still moves on', async () => {
      await insertCronJob(db, job(1));
      await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001'));
      await updateCronJob(db, 'cron_0001', { nextRun: at(5) }); // as if an edit had put the same slot back
      expect(await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0002'))).toBeNull();
      expect(await getCronJob(db, 'cron_0001')).toMatchObject({ nextRun: at(10) });
      expect((await listCronRuns(db, 'cron_0001', 10)).map((r) => r.id)).toEqual(['crun_0001']);
    });

    it('last_run only moves forward', async () => {
      await insertCronJob(db, job(1, { lastRun: at(20), nextRun: at(5) }));
      const claimed = await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001'));
      expect(claimed?.job.lastRun).toBe(at(20));
    });

    it('of many concurrent claims of one slot, on separate connections, exactly one wins', async () => {
      await insertCronJob(db, job(1));
      const stores = backend.name === 'postgres' ? await Promise.all([1, 2, 3].map(() => t.reopen())) : [];
      const executors = [db, ...stores.map((s) => s.db)];
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          executors[i % executors.length]!.transaction().execute((trx) =>
            claimScheduledRun(trx, { ...slot('cron_0001', 5, `crun_${pad(i)}`), scheduledAt: at(5 + (i % 2)) }),
          ),
        ),
      );
      expect(claims.filter((c) => c !== null)).toHaveLength(1);
      expect(await listCronRuns(db, 'cron_0001', 10)).toHaveLength(1);
      expect(await getCronJob(db, 'cron_0001')).toMatchObject({ nextRun: at(10) });
    });
  });

  describe('manual runs', () => {
    it('start now whatever the schedule, enabled or not; last_run moves, next_run does not', async () => {
      await insertCronJob(db, job(1, { enabled: false, nextRun: null, authorized: true }));
      const started = await startManualRun(db, {
        cronId: 'cron_0001',
        runId: 'crun_0001',
        now: at(2),
        requireAuthorization: true,
      });
      expect(started?.run).toMatchObject({
        triggeredBy: 'manual',
        scheduledAt: at(2),
        startedAt: at(2),
        status: 'running',
      });
      expect(started?.job).toMatchObject({ lastRun: at(2), nextRun: null });
      expect(
        await startManualRun(db, {
          cronId: 'cron_missing',
          runId: 'crun_0002',
          now: at(2),
          requireAuthorization: false,
        }),
      ).toBeNull();
    });

    it('are skipped without authorisation when it is required, and may share a scheduled slot', async () => {
      await insertCronJob(db, job(1));
      await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001'));
      const manual = await startManualRun(db, {
        cronId: 'cron_0001',
        runId: 'crun_0002',
        now: at(5),
        requireAuthorization: true,
      });
      expect(manual?.run).toMatchObject({ status: 'skipped', reason: NOT_AUTHORIZED, scheduledAt: at(5) });
      const again = await startManualRun(db, {
        cronId: 'cron_0001',
        runId: 'crun_0003',
        now: at(5),
        requireAuthorization: false,
      });
      expect(again?.run.status).toBe('running');
      expect(await listCronRuns(db, 'cron_0001', 10)).toHaveLength(3);
    });
  });

  describe('run lifecycle and history', () => {
    it('records the event, then the first finish wins', async () => {
      await insertCronJob(db, job(1));
      await claimScheduledRun(db, slot('cron_0001', 5, 'crun_0001'));
      expect(await setRunEvent(db, 'crun_0001', 'evt_1')).toMatchObject({ eventId: 'evt_1', status: 'running' });
      expect(await setRunEvent(db, 'crun_missing', 'evt_2')).toBeNull();
      const done = await finishCronRun(db, 'crun_0001', { status: 'completed', reason: null, finishedAt: at(6) });
      expect(done).toMatchObject({ status: 'completed', finishedAt: at(6), eventId: 'evt_1' });
      expect(await finishCronRun(db, 'crun_0001', { status: 'failed', reason: 'late', finishedAt: at(7) })).toBeNull();
      expect((await listCronRuns(db, 'cron_0001', 1))[0]).toMatchObject({ status: 'completed', reason: null });
    });

    it('lists newest first, limited, and keeps the newest RUNS_KEPT_PER_JOB plus any still running', async () => {
      await insertCronJob(db, job(1, { nextRun: at(0) }));
      await claimScheduledRun(db, { ...slot('cron_0001', 0, 'crun_0000'), nextRun: at(1) }); // stays running
      for (let i = 1; i <= RUNS_KEPT_PER_JOB + 5; i++) {
        const claimed = await claimScheduledRun(db, { ...slot('cron_0001', i, `crun_${pad(i)}`), nextRun: at(i + 1) });
        await finishCronRun(db, claimed!.run.id, { status: 'completed', reason: null, finishedAt: at(i) });
      }
      const newest = await listCronRuns(db, 'cron_0001', 3);
      expect(newest.map((r) => r.id)).toEqual([`crun_${pad(105)}`, `crun_${pad(104)}`, `crun_${pad(103)}`]);
      const all = await listCronRuns(db, 'cron_0001', 1000);
      expect(all).toHaveLength(RUNS_KEPT_PER_JOB + 1);
      expect(all.at(-1)).toMatchObject({ id: 'crun_0000', status: 'running' });
      expect(all.at(-2)?.id).toBe(`crun_${pad(105 - RUNS_KEPT_PER_JOB + 1)}`);
    });

    it('finds running runs whose turn has ended, and runs abandoned before their turn', async () => {
      await insertCronJob(db, job(1, { nextRun: at(0) }));
      const runs = [];
      for (let i = 0; i < 4; i++) {
        const claimed = await claimScheduledRun(db, { ...slot('cron_0001', i, `crun_${pad(i)}`), nextRun: at(i + 1) });
        runs.push(claimed!.run);
      }
      const turn = (eventId: string) =>
        insertTurn(db, {
          eventId,
          sessionKey: 'gateway:cron:cron_0001',
          contextEpoch: 0,
          payload: {},
          owner: null,
          now: at(0),
        });
      // 0: turn completed; 1: turn still accepted; 2: no turn yet (abandoned once old); 3: turn failed, run already finished.
      await turn('evt_0');
      await turn('evt_1');
      await turn('evt_3');
      await setRunEvent(db, runs[0]!.id, 'evt_0');
      await setRunEvent(db, runs[1]!.id, 'evt_1');
      await setRunEvent(db, runs[3]!.id, 'evt_3');
      const end = { response: null, result: null, now: at(9) };
      await finishTurn(db, 'evt_0', { ...end, status: 'completed', terminationReason: null });
      await finishTurn(db, 'evt_3', { ...end, status: 'failed', terminationReason: 'provider_error' });
      await finishCronRun(db, runs[3]!.id, { status: 'failed', reason: 'provider_error', finishedAt: at(9) });

      const settled = await listSettledRuns(db, 10);
      expect(settled).toEqual([
        {
          run: expect.objectContaining({ id: runs[0]!.id }),
          turnStatus: 'completed',
          terminationReason: null,
          turnFinishedAt: at(9),
        },
      ]);
      expect((await listAbandonedRuns(db, at(10), 10)).map((r) => r.id)).toEqual([runs[2]!.id]);
      expect(await listAbandonedRuns(db, at(2), 10)).toEqual([]);
    });
  });
});
