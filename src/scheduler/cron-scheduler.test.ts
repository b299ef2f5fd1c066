import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../test/helpers/harness.js';
import { internals } from '../../test/helpers/internals.js';
import {
  CronService,
  claimScheduledRun,
  listCronRuns,
  presentCronRun,
  type CronJobRecord,
  type CronRunRecord,
} from '../cron/index.js';
import { ApiError } from '../http/errors.js';
import { type Clock, isoTime, ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import { createLogger } from '../logs/index.js';
import type { Store } from '../store/index.js';
import { describeBackends, type TestStore } from '../../test/helpers/stores.js';
import { payloadOf, type Inbound, type MessagePath } from '../turns/index.js';
import { finishTurn, getTurn, insertTurn, listSessionTurns } from '../turns/turns.repo.js';
import {
  CronScheduler,
  type CronIntake,
  type CronSchedulerOptions,
  type CronSecurityProfile,
  type CronTurnOutcome,
  type CronWaiters,
} from './cron-scheduler.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const MINUTE = 60_000;
/** ISO timestamp `minutes` after the base time. */
const at = (minutes: number): string => isoTime(BASE + minutes * MINUTE);
const silent = () => createLogger({ level: 'error', stdout: { write: () => undefined } });

/** The scheduler's ports on a gateway's message path: `submit`, and `waitFor` as its waiters. */
function messagePorts(messages: MessagePath): Pick<CronSchedulerOptions, 'intake' | 'waiters'> {
  return { intake: messages, waiters: { wait: (id, timeoutMs, signal) => messages.waitFor(id, timeoutMs, signal) } };
}

/** One scheduler plus the service that creates its jobs, on one store and clock. */
interface Rig {
  clock: ManualClock;
  store: Store;
  scheduler: CronScheduler;
  cron: CronService;
  /** Every run `onRun` was told of, in order. */
  told: CronRunRecord[];
  /** Creates a job (authorised when asked) at the clock's now. */
  job(schedule: string, options?: { prompt?: string; enabled?: boolean; authorized?: boolean }): Promise<CronJobRecord>;
  /** Moves the clock to `minutes` after the base time and ticks; resolves once started runs have their outcome. */
  tickAt(minutes: number): Promise<void>;
  runs(cronId: string): Promise<CronRunRecord[]>;
}

function rig(
  store: Store,
  clock: ManualClock,
  ports: Pick<CronSchedulerOptions, 'intake' | 'waiters'>,
  profile: CronSecurityProfile,
  extra: Partial<CronSchedulerOptions> = {},
): Rig {
  const told: CronRunRecord[] = [];
  const scheduler = new CronScheduler({
    store,
    clock,
    ...ports,
    profile,
    logger: silent(),
    onRun: (run) => told.push(run),
    ...extra,
  });
  const cron = new CronService({ store, clock, ids: createIdGenerator(clock), runner: scheduler });
  return {
    clock,
    store,
    scheduler,
    cron,
    told,
    async job(schedule, options = {}) {
      const created = await cron.create({ schedule, prompt: options.prompt ?? 'report', enabled: options.enabled });
      return options.authorized ? cron.setAuthorized(created.id, true) : created;
    },
    async tickAt(minutes) {
      clock.set(BASE + minutes * MINUTE);
      await scheduler.tick();
      await scheduler.settled();
    },
    runs: (cronId) => listCronRuns(store.db, cronId, 100),
  };
}

describe('CronScheduler on a gateway (echo provider, ManualClock)', () => {
  let gateway: TestGateway | undefined;
  let current: Rig | undefined;

  const open = async (profile: CronSecurityProfile, extra: Partial<CronSchedulerOptions> = {}): Promise<Rig> => {
    const clock = new ManualClock(BASE);
    gateway = await startTestGateway({}, clock);
    const { store, messages } = internals(gateway.gateway);
    current = rig(store, clock, messagePorts(messages), profile, extra);
    return current;
  };
  afterEach(async () => {
    await current?.scheduler.close();
    await gateway?.close();
    current = undefined;
    gateway = undefined;
  });

  it('fires at each boundary, not before: one turn per slot in gateway:cron:<id>, recorded completed', async () => {
    const r = await open('standard');
    const job = await r.job('*/5 * * * *', { prompt: 'daily digest', authorized: true });
    expect(job.nextRun).toBe(at(5));

    await r.tickAt(0);
    await r.tickAt(4.99);
    expect(await r.runs(job.id)).toEqual([]);

    await r.tickAt(5);
    const [first] = await r.runs(job.id);
    expect(first).toMatchObject({
      cronId: job.id,
      triggeredBy: 'schedule',
      scheduledAt: at(5),
      startedAt: at(5),
      status: 'completed',
      reason: null,
    });
    const turn = await getTurn(r.store.db, first!.eventId!);
    expect(turn).toMatchObject({
      sessionKey: `gateway:cron:${job.id}`,
      status: 'completed',
      response: 'echo: daily digest',
    });
    expect(turn?.payload).toEqual({
      text: 'daily digest',
      platform: 'cron',
      user_id: 'cron',
      chat_id: job.id,
      channel: 'cron',
      source: 'cron',
    });
    expect(await r.cron.get(job.id)).toMatchObject({ lastRun: at(5), nextRun: at(10) });

    await r.tickAt(7); // between slots, and the same slot is never fired twice
    await r.tickAt(10);
    const runs = await r.runs(job.id);
    expect(runs.map((run) => [run.scheduledAt, run.status])).toEqual([
      [at(10), 'completed'],
      [at(5), 'completed'],
    ]);
    expect(await listSessionTurns(r.store.db, `gateway:cron:${job.id}`, 10)).toHaveLength(2);
    expect(r.told.map((run) => run.status)).toEqual(['running', 'completed', 'running', 'completed']);
  });

  it('crosses an hour and a day boundary on the clock', async () => {
    const r = await open('minimal');
    const daily = await r.job('0 0 * * *');
    const hourly = await r.job('0 * * * *');
    expect(daily.nextRun).toBe('2026-11-22T00:00:00.000Z');
    await r.tickAt(60);
    expect((await r.runs(hourly.id)).map((run) => run.scheduledAt)).toEqual([at(60)]);
    await r.tickAt(14 * 60);
    expect((await r.runs(daily.id)).map((run) => run.scheduledAt)).toEqual(['2026-11-22T00:00:00.000Z']);
    expect(await r.cron.get(daily.id)).toMatchObject({ nextRun: '2026-11-23T00:00:00.000Z' });
  });

  it('under standard an unauthorised job is skipped (not_authorized) and stays scheduled; authorised, it runs', async () => {
    const r = await open('standard');
    const job = await r.job('*/5 * * * *');
    await r.tickAt(5);
    await r.tickAt(10);
    const skipped = await r.runs(job.id);
    expect(skipped).toHaveLength(2);
    expect(skipped[0]).toMatchObject({
      status: 'skipped',
      reason: 'not_authorized',
      eventId: null,
      startedAt: null,
      finishedAt: at(10),
    });
    expect(await listSessionTurns(r.store.db, `gateway:cron:${job.id}`, 10)).toEqual([]);
    expect(await r.cron.get(job.id)).toMatchObject({
      enabled: true,
      authorized: false,
      nextRun: at(15),
      lastRun: at(10),
    });

    await r.cron.setAuthorized(job.id, true);
    await r.tickAt(15);
    expect((await r.runs(job.id))[0]).toMatchObject({ scheduledAt: at(15), status: 'completed' });
  });

  it('under extended the same authorisation rule applies', async () => {
    const r = await open('extended');
    const job = await r.job('*/5 * * * *');
    await r.tickAt(5);
    expect((await r.runs(job.id))[0]).toMatchObject({ status: 'skipped', reason: 'not_authorized' });
  });

  it('under minimal an unauthorised job runs', async () => {
    const r = await open('minimal');
    const job = await r.job('*/5 * * * *');
    await r.tickAt(5);
    expect((await r.runs(job.id))[0]).toMatchObject({ status: 'completed', reason: null });
  });

  it('a disabled job is not run; re-enabled, it does not catch up and runs from its next slot', async () => {
    const r = await open('minimal');
    const off = await r.job('*/5 * * * *', { enabled: false });
    expect(off.nextRun).toBeNull();
    const disabledLater = await r.job('*/5 * * * *');
    await r.cron.update(disabledLater.id, { enabled: false });
    await r.tickAt(5);
    await r.tickAt(32);
    expect(await r.runs(off.id)).toEqual([]);
    expect(await r.runs(disabledLater.id)).toEqual([]);

    expect(await r.cron.update(off.id, { enabled: true })).toMatchObject({ nextRun: at(35) });
    await r.tickAt(33);
    expect(await r.runs(off.id)).toEqual([]);
    await r.tickAt(35);
    expect((await r.runs(off.id)).map((run) => run.scheduledAt)).toEqual([at(35)]);
  });

  it('a PUT that changes the prompt or schedule withdraws authorisation, so the next slot is skipped', async () => {
    const r = await open('standard');
    const job = await r.job('*/5 * * * *', { authorized: true });
    expect(await r.cron.update(job.id, { prompt: 'report' })).toMatchObject({ authorized: true }); // no change
    expect(await r.cron.update(job.id, { prompt: 'something else' })).toMatchObject({ authorized: false });
    await r.tickAt(5);
    expect((await r.runs(job.id))[0]).toMatchObject({ status: 'skipped', reason: 'not_authorized' });

    await r.cron.setAuthorized(job.id, true);
    const rescheduled = await r.cron.update(job.id, { schedule: '0 * * * *' });
    expect(rescheduled).toMatchObject({ authorized: false, nextRun: at(60) });
  });

  it('slots missed while no scheduler ran collapse into one run for the latest, then the schedule goes on', async () => {
    const r = await open('minimal');
    const job = await r.job('*/5 * * * *');
    await r.tickAt(5);
    await r.scheduler.close(); // the gateway is down from 10:05 …

    r.clock.set(BASE + 62 * MINUTE); // … to 11:02: eleven slots missed
    const restarted = new CronScheduler({
      store: r.store,
      clock: r.clock,
      ...messagePorts(internals(gateway!.gateway).messages),
      profile: 'minimal',
      logger: silent(),
    });
    try {
      restarted.start(); // catches up at once
      await restarted.tick();
      await restarted.settled();
      const runs = await r.runs(job.id);
      expect(runs.map((run) => [run.scheduledAt, run.status])).toEqual([
        [at(60), 'completed'],
        [at(5), 'completed'],
      ]);
      expect(await r.cron.get(job.id)).toMatchObject({ lastRun: at(60), nextRun: at(65) });
      await restarted.tick();
      expect(await r.runs(job.id)).toHaveLength(2);
    } finally {
      await restarted.close();
    }
  });

  it('trigger runs a job now, outside its schedule, and leaves next_run alone', async () => {
    const r = await open('minimal');
    const job = await r.job('0 0 1 1 *', { enabled: false, prompt: 'now please' });
    r.clock.set(BASE + 3 * MINUTE);
    const run = await r.scheduler.trigger(job.id);
    // A manual trigger answers with the outcome once the turn ends (echo: at once).
    expect(run).toMatchObject({ triggeredBy: 'manual', scheduledAt: at(3), startedAt: at(3), status: 'completed' });
    expect(run?.eventId).toMatch(/^evt_/);
    await r.scheduler.settled();
    expect((await r.runs(job.id))[0]).toMatchObject({ id: run!.id, status: 'completed' });
    expect(await getTurn(r.store.db, run!.eventId!)).toMatchObject({ response: 'echo: now please' });
    expect(await r.cron.get(job.id)).toMatchObject({ lastRun: at(3), nextRun: null });
    expect(await r.scheduler.trigger('cron_missing')).toBeNull();
  });

  it('trigger under standard without authorisation records a skipped run', async () => {
    const r = await open('standard');
    const job = await r.job('*/5 * * * *');
    expect(await r.scheduler.trigger(job.id)).toMatchObject({ status: 'skipped', reason: 'not_authorized' });
  });

  it('a run nobody awaited is recorded by a later tick once its turn has ended', async () => {
    const r = await open('minimal', { maxWaiting: 0 });
    const job = await r.job('*/5 * * * *');
    await r.tickAt(5);
    const [running] = await r.runs(job.id);
    expect(running).toMatchObject({ status: 'running' });
    await internals(gateway!.gateway).messages.waitFor(running!.eventId!, 5_000);
    await r.tickAt(6);
    expect((await r.runs(job.id))[0]).toMatchObject({ id: running!.id, status: 'completed' });
    expect(r.told.map((run) => run.status)).toEqual(['running', 'completed']);
  });

  it('start and close are idempotent; after close ticks do nothing and trigger is 503', async () => {
    const r = await open('minimal');
    const job = await r.job('*/5 * * * *');
    r.scheduler.start();
    r.scheduler.start();
    await r.scheduler.close();
    await r.scheduler.close();
    await r.tickAt(5);
    expect(await r.runs(job.id)).toEqual([]);
    await expect(r.scheduler.trigger(job.id)).rejects.toThrow(ApiError);
    await expect(r.scheduler.trigger(job.id)).rejects.toMatchObject({ status: 503 });
  });
});

/** An intake that records what it is given and writes an accepted turn, as the real one does. */
class RecordingIntake implements CronIntake {
  readonly submitted: Inbound[] = [];
  failure: Error | null = null;
  private count = 0;
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly prefix: string,
  ) {}
  async submit(input: Inbound): Promise<{ eventId: string }> {
    if (this.failure) throw this.failure;
    this.submitted.push(input);
    const eventId = `evt_${this.prefix}_${++this.count}`;
    const now = isoTime(this.clock.now());
    // The ledger's inbound event, as the message path's intake stores it.
    const payload = payloadOf(input);
    await this.store.writer.run((trx) =>
      insertTurn(trx, {
        eventId,
        sessionKey: input.sessionKey,
        contextEpoch: 0,
        payload,
        owner: null,
        now,
      }),
    );
    return { eventId };
  }
}

/** Waiters that answer with `outcome` at once (null: the wait timed out). */
class ScriptedWaiters implements CronWaiters {
  outcome: CronTurnOutcome | null = { status: 'completed', terminationReason: null, finishedAt: null };
  async wait(): Promise<CronTurnOutcome | null> {
    return this.outcome;
  }
}

describeBackends('CronScheduler claims in the database', (backend) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await backend.open();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  const fakeRig = (store: Store, clock: ManualClock, prefix: string, profile: CronSecurityProfile = 'minimal') => {
    const intake = new RecordingIntake(store, clock, prefix);
    const waiters = new ScriptedWaiters();
    return { intake, waiters, ...rig(store, clock, { intake, waiters }, profile) };
  };

  it('two schedulers on one database (two stores on PostgreSQL) fire each due run exactly once', async () => {
    const clock = new ManualClock(BASE);
    // PostgreSQL: a second pool on the same schema, as a second gateway process would have. SQLite: one
    // process holds the file, so the two schedulers share its store.
    const secondStore = backend.name === 'postgres' ? await t.reopen() : t.store;
    const a = fakeRig(t.store, clock, 'a');
    const b = fakeRig(secondStore, clock, 'b');
    const jobs = await Promise.all(Array.from({ length: 6 }, () => a.job('*/5 * * * *')));
    for (const minutes of [5, 10, 15]) {
      clock.set(BASE + minutes * MINUTE);
      await Promise.all([a.scheduler.tick(), b.scheduler.tick(), a.scheduler.tick(), b.scheduler.tick()]);
      await Promise.all([a.scheduler.settled(), b.scheduler.settled()]);
    }
    for (const job of jobs) {
      const runs = await a.runs(job.id);
      expect(runs.map((run) => run.scheduledAt).sort()).toEqual([at(5), at(10), at(15)]);
      expect(runs.every((run) => run.status === 'completed')).toBe(true);
    }
    const submitted = [...a.intake.submitted, ...b.intake.submitted];
    expect(submitted).toHaveLength(jobs.length * 3);
    for (const job of jobs) {
      expect(submitted.filter((s) => s.sessionKey === `gateway:cron:${job.id}`)).toHaveLength(3);
    }
    // Work the gateway creates itself: no principal, no identity check, nobody waits on the submission.
    for (const s of submitted) {
      expect(s).toEqual({
        sessionKey: `gateway:cron:${s.chatId}`,
        text: 'report',
        platform: 'cron',
        userId: 'cron',
        chatId: s.chatId,
        channel: 'cron',
        source: 'cron',
        principal: null,
        identity: 'skip',
        wait: false,
      });
    }
    const [run] = await a.runs(jobs[0]!.id);
    expect((await getTurn(t.store.db, run!.eventId!))?.payload).toEqual({
      text: 'report',
      platform: 'cron',
      user_id: 'cron',
      chat_id: jobs[0]!.id,
      channel: 'cron',
      source: 'cron',
    });
  });

  it('a turn the intake refuses fails the run (submit_failed); the job stays scheduled', async () => {
    const clock = new ManualClock(BASE);
    const r = fakeRig(t.store, clock, 'a');
    const job = await r.job('*/5 * * * *');
    r.intake.failure = new Error('too many messages queued');
    await r.tickAt(5);
    expect((await r.runs(job.id))[0]).toMatchObject({ status: 'failed', reason: 'submit_failed', finishedAt: at(5) });
    r.intake.failure = null;
    await r.tickAt(10);
    expect((await r.runs(job.id))[0]).toMatchObject({ scheduledAt: at(10), status: 'completed' });
  });

  it("a failed turn fails the run with the turn's termination reason", async () => {
    const clock = new ManualClock(BASE);
    const r = fakeRig(t.store, clock, 'a');
    const job = await r.job('*/5 * * * *');
    r.waiters.outcome = { status: 'incomplete', terminationReason: 'budget_exceeded', finishedAt: at(6) };
    await r.tickAt(5);
    expect((await r.runs(job.id))[0]).toMatchObject({ status: 'failed', reason: 'budget_exceeded', finishedAt: at(6) });
  });

  it('a paused turn leaves the run running until a later tick sees the turn end', async () => {
    const clock = new ManualClock(BASE);
    const r = fakeRig(t.store, clock, 'a');
    const job = await r.job('*/5 * * * *');
    r.waiters.outcome = { status: 'waiting_approval', terminationReason: null, finishedAt: null };
    await r.tickAt(5);
    const [run] = await r.runs(job.id);
    expect(run).toMatchObject({ status: 'running' });
    await r.tickAt(6);
    expect((await r.runs(job.id))[0]).toMatchObject({ status: 'running' });

    await finishTurn(t.store.db, run!.eventId!, {
      status: 'interrupted',
      response: null,
      terminationReason: 'shutdown',
      result: null,
      now: at(7),
    });
    await r.tickAt(8);
    expect((await r.runs(job.id))[0]).toMatchObject({ status: 'failed', reason: 'shutdown', finishedAt: at(7) });
    expect(r.told.map((told) => presentCronRun(told).status)).toEqual(['running', 'failed']);
  });

  it('a run claimed by a process that stopped before submitting its turn is failed (abandoned) later', async () => {
    const clock = new ManualClock(BASE);
    const r = fakeRig(t.store, clock, 'a');
    const job = await r.job('*/5 * * * *');
    // What a process leaves behind when it dies between the claim and the submit.
    await t.store.writer.run((trx) =>
      claimScheduledRun(trx, {
        cronId: job.id,
        expectedNextRun: at(5),
        scheduledAt: at(5),
        nextRun: at(10),
        runId: 'crun_dead',
        now: at(5),
        requireAuthorization: false,
      }),
    );
    await r.tickAt(9);
    expect((await r.runs(job.id))[0]).toMatchObject({ id: 'crun_dead', status: 'running' });
    await r.tickAt(10.5); // 5.5 minutes after the claim
    const runs = await r.runs(job.id);
    expect(runs.find((run) => run.id === 'crun_dead')).toMatchObject({ status: 'failed', reason: 'abandoned' });
    expect(runs.find((run) => run.scheduledAt === at(10))).toMatchObject({ status: 'completed' });
  });
});
