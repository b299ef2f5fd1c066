import {
  claimScheduledRun,
  finishCronRun,
  listAbandonedRuns,
  listCronRuns,
  listDueCronJobs,
  listSettledRuns,
  parseSchedule,
  presentCronRun,
  setRunEvent,
  startManualRun,
  updateCronJob,
  type ClaimedRun,
  type CronJobRecord,
  type CronRunner,
  type CronRunRecord,
} from '../cron/index.js';
import { errors } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import { createIdGenerator, type IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { Transaction } from 'kysely';
import type { Database, Store } from '../store/index.js';
import { endReason, isTerminalStatus, type EndedTurn, type EventOutbox, type Inbound } from '../turns/index.js';

/** How long POST /cron/{id}/trigger waits for its run's outcome before answering with the running run. */
const TRIGGER_WAIT_MS = 30_000;

/** The door work comes in by (the message path's `submit`); the scheduler never imports the runtime. */
export interface CronIntake {
  /** Accepts a message durably and queues its turn; rejects when it cannot (queue full, store down). */
  submit(input: Inbound): Promise<{ eventId: string }>;
}

/** The outcome a waited-for turn reports (a turn ledger record satisfies it). */
export interface CronTurnOutcome {
  status: string;
  terminationReason: string | null;
  finishedAt: string | null;
}

/** Waits for a turn's outcome (the message path's `waitFor`). */
export interface CronWaiters {
  /** The turn once it has an outcome (terminal or paused), or null after `timeoutMs` or on `signal`. */
  wait(eventId: string, timeoutMs: number, signal?: AbortSignal): Promise<CronTurnOutcome | null>;
}

/** The security profile (config `security.profile`): cron authorisation applies to standard and extended. */
export type CronSecurityProfile = 'minimal' | 'standard' | 'extended';

/** What a CronScheduler needs, and its bounds. */
export interface CronSchedulerOptions {
  store: Store;
  /** Every time the scheduler reads comes from here: tests advance a ManualClock and call `tick()`. */
  clock: Clock;
  intake: CronIntake;
  waiters: CronWaiters;
  profile: CronSecurityProfile;
  logger: Logger;
  /** Told of every run as it starts (with its turn's event id), is skipped, or ends. Must not throw. */
  onRun?: (run: CronRunRecord) => void;
  /** Event subscriptions (DECISIONS §20): `cron.fired` is written in the commit that claims the run. */
  outbox?: EventOutbox | null;
  /** Run ids (`crun_…`); default a generator on `clock`. */
  ids?: IdGenerator;
  /** Period of the timer started by `start()`, in ms; default 1000. */
  intervalMs?: number;
  /** Due jobs claimed per query, and runs reconciled per tick; default 100. */
  batchSize?: number;
  /** Turns awaited in this process at once; beyond it a run is left to reconciliation. Default 64. */
  maxWaiting?: number;
  /** How long one run's turn is awaited before it is left to reconciliation, in ms; default 10 minutes. */
  waitTimeoutMs?: number;
  /** A run claimed this long ago that never got a turn is recorded failed (`abandoned`), in ms; default 5 minutes. */
  abandonAfterMs?: number;
}

/** Claim queries per tick at most, so one tick stays bounded however many jobs are due. */
const MAX_BATCHES_PER_TICK = 10;
/** Why a run whose process stopped between claiming it and submitting its turn failed. */
const ABANDONED = 'abandoned';
/** Why a run whose turn could not be accepted (queue full, store down) failed. */
const SUBMIT_FAILED = 'submit_failed';

/**
 * Fires cron jobs on an injected clock (DECISIONS §9, §11). `tick()` does
 * everything due at `clock.now()`; `start()` runs it now and then every
 * `intervalMs`; tests call `tick()` after advancing a ManualClock.
 *
 * A due slot is claimed in the database (`claimScheduledRun`: conditional
 * update of `next_run`, unique run per slot), so with several gateway
 * processes on one database only the one whose claim wins runs it. Slots
 * missed while no gateway ran collapse into one run, for the latest of them.
 * Under standard/extended an unauthorised job's run is recorded `skipped`
 * (`not_authorized`) and the job stays scheduled; under minimal it runs.
 * A run submits one turn in session `gateway:cron:<cron_id>` through the
 * intake and ends `completed` or `failed` with its turn's outcome — awaited
 * here while under `maxWaiting`, otherwise (and after a crash, a timeout or a
 * pause for approval) recorded by the reconciliation pass of a later tick in
 * whichever process runs it first.
 *
 * One object owns all of its background work: the timer, at most one tick at
 * a time, and at most `maxWaiting` awaited turns; `close()` ends them.
 */
export class CronScheduler implements CronRunner {
  private readonly log: Logger;
  private readonly ids: IdGenerator;
  private readonly requireAuthorization: boolean;
  private readonly intervalMs: number;
  private readonly batchSize: number;
  private readonly maxWaiting: number;
  private readonly waitTimeoutMs: number;
  private readonly abandonAfterMs: number;
  /** Turns being awaited, each settling once its run is recorded (or left to reconciliation). */
  private readonly waiting = new Set<Promise<void>>();
  /** The wait of each followed run, by run id (a manual trigger answers once it settles). */
  private readonly followed = new Map<string, Promise<void>>();
  private readonly stop = new AbortController();
  /** Ticks run one after another: the tail of the chain. */
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private closing: Promise<void> | null = null;

  constructor(private readonly options: CronSchedulerOptions) {
    this.log = options.logger.child({ source: 'cron' });
    this.ids = options.ids ?? createIdGenerator(options.clock);
    this.requireAuthorization = options.profile !== 'minimal';
    this.intervalMs = options.intervalMs ?? 1_000;
    this.batchSize = options.batchSize ?? 100;
    this.maxWaiting = options.maxWaiting ?? 64;
    this.waitTimeoutMs = options.waitTimeoutMs ?? 600_000;
    this.abandonAfterMs = options.abandonAfterMs ?? 300_000;
  }

  /** Ticks now (catching up on runs missed while down), then every `intervalMs` until `close()`. Idempotent. */
  start(): void {
    if (this.started || this.closing) return;
    this.started = true;
    const loop = (): void => {
      this.timer = null;
      void this.tick()
        .catch((err: unknown) => this.log.error({ err: describe(err) }, 'cron tick failed'))
        .finally(() => {
          if (this.closing) return;
          this.timer = setTimeout(loop, this.intervalMs);
          this.timer.unref();
        });
    };
    loop();
  }

  /**
   * Processes everything due at `clock.now()`: records the outcome of runs
   * whose turns ended unobserved, then claims and starts every due run (up
   * to MAX_BATCHES_PER_TICK × `batchSize`; the rest on the next tick).
   * Resolves once each claimed run is skipped or has its turn submitted — not
   * when the turns end (see `settled()`). Calls made while a tick is running
   * run after it. Rejects when the store fails; after `close()` does nothing.
   */
  tick(): Promise<void> {
    if (this.closing) return Promise.resolve();
    const tick = this.chain.then(() => this.runTick());
    this.chain = tick.catch(() => undefined);
    return tick;
  }

  /** After a claim's commit: the delivery worker looks at once when `cron.fired` was written. */
  private wake(): void {
    if (this.options.outbox?.wants('cron.fired')) this.options.outbox.committed();
  }

  /** Writes `cron.fired` for a run just claimed, in the claim's transaction, when a subscription wants it. */
  private async fired<T extends ClaimedRun | null>(trx: Transaction<Database>, claimed: T): Promise<T> {
    const outbox = this.options.outbox ?? null;
    if (!claimed || !outbox?.wants('cron.fired')) return claimed;
    const data = presentCronRun(claimed.run);
    await outbox.write(trx, [{ type: 'cron.fired', timestamp: isoTime(this.options.clock.now()), data }]);
    return claimed;
  }

  /**
   * Runs job `cronId` now (POST /cron/{id}/trigger), enabled or not and
   * outside its schedule; `next_run` is untouched. Resolves with the run once
   * it is skipped (not authorised) or its turn is submitted (`running`, with
   * `event_id`), or failed (`submit_failed`) when the turn was refused; null
   * when the job does not exist. 503 after `close()`.
   */
  async trigger(cronId: string): Promise<CronRunRecord | null> {
    if (this.closing) throw errors.unavailable('the cron scheduler is stopped');
    const { store, clock } = this.options;
    const runId = this.ids.next('crun');
    const now = isoTime(clock.now());
    const claimed = await store.writer.run(async (trx) =>
      this.fired(
        trx,
        await startManualRun(trx, { cronId, runId, now, requireAuthorization: this.requireAuthorization }),
      ),
    );
    if (!claimed) return null;
    this.wake();
    const started = await this.begin(claimed);
    // A manual run answers with its outcome (completed | failed | skipped, DECISIONS §9) when the
    // turn ends within the wait; a longer one answers while still running and is recorded later.
    const following = this.followed.get(started.id);
    if (started.status === 'running' && following) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        following,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, TRIGGER_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
      const runs = await listCronRuns(store.db, cronId, 100);
      return runs.find((r) => r.id === started.id) ?? started;
    }
    return started;
  }

  /** Resolves once every turn awaited so far has been recorded (or left to reconciliation). For tests and close. */
  async settled(): Promise<void> {
    while (this.waiting.size > 0) await Promise.allSettled([...this.waiting]);
  }

  /**
   * Stops the timer, lets a running tick finish and stops awaiting turns (the
   * turns go on; a later tick, here after a restart or in another process,
   * records their runs). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.stop.abort();
      await this.chain;
      await this.settled();
    })();
    return this.closing;
  }

  private async runTick(): Promise<void> {
    const nowMs = this.options.clock.now();
    await this.reconcile(nowMs);
    const now = isoTime(nowMs);
    for (let batch = 0; batch < MAX_BATCHES_PER_TICK; batch++) {
      const due = await listDueCronJobs(this.options.store.db, now, this.batchSize);
      // Claims of one batch share the writer's transactions; each job's failure stays its own.
      await Promise.all(due.map((job) => this.fire(job, nowMs)));
      if (due.length < this.batchSize) break;
    }
  }

  /** Claims the due slot of `job` at `nowMs` and, when this process won it, starts the run. */
  private async fire(job: CronJobRecord, nowMs: number): Promise<void> {
    const { store } = this.options;
    const expected = job.nextRun;
    if (expected === null) return;
    try {
      const parsed = parseSchedule(job.schedule);
      if (!parsed.ok) {
        // Stored schedules are validated on write; one that is not valid must not be retried every tick.
        this.log.error({ cron_id: job.id, err: parsed.error }, 'cron job has an invalid schedule; unscheduled');
        await store.writer.run((trx) => updateCronJob(trx, job.id, { nextRun: null }, expected));
        return;
      }
      const schedule = parsed.schedule;
      // Slots missed while no gateway ran (or the tick was late) collapse into the latest of them.
      const expectedMs = Date.parse(expected);
      const latest = schedule.latestAtOrBefore(nowMs);
      const slotMs = latest !== null && latest > expectedMs ? latest : expectedMs;
      const next = schedule.nextAfter(nowMs);
      const runId = this.ids.next('crun');
      const claimed = await store.writer.run(async (trx) =>
        this.fired(
          trx,
          await claimScheduledRun(trx, {
            cronId: job.id,
            expectedNextRun: expected,
            scheduledAt: isoTime(slotMs),
            nextRun: next === null ? null : isoTime(next),
            runId,
            now: isoTime(nowMs),
            requireAuthorization: this.requireAuthorization,
          }),
        ),
      );
      if (!claimed) return; // another process (or a concurrent edit) moved `next_run` first
      this.wake();
      if (slotMs > expectedMs) {
        this.log.info(
          { cron_id: job.id, first_missed: expected, scheduled_at: claimed.run.scheduledAt },
          'missed cron slots collapsed into one run',
        );
      }
      await this.begin(claimed);
    } catch (err) {
      this.log.error({ cron_id: job.id, err: describe(err) }, 'cron run could not be started');
    }
  }

  /** Starts a claimed run: records a skip, or submits its turn and follows it. Returns the run as it then stands. */
  private async begin({ job, run }: ClaimedRun): Promise<CronRunRecord> {
    const { store, intake } = this.options;
    if (run.status === 'skipped') {
      this.log.info({ cron_id: job.id, run_id: run.id, reason: run.reason }, 'cron run skipped');
      this.notify(run);
      return run;
    }
    let eventId: string;
    try {
      ({ eventId } = await intake.submit({
        sessionKey: `gateway:cron:${job.id}`,
        text: job.prompt,
        platform: 'cron',
        userId: 'cron',
        chatId: job.id,
        channel: 'cron',
        source: 'cron',
        principal: null,
        identity: 'skip', // work the gateway creates itself
        wait: false,
      }));
    } catch (err) {
      this.log.warn({ cron_id: job.id, run_id: run.id, err: describe(err) }, 'cron run turn was not accepted');
      return (await this.finish(run.id, { status: 'failed', reason: SUBMIT_FAILED })) ?? run;
    }
    const started = (await store.writer.run((trx) => setRunEvent(trx, run.id, eventId))) ?? { ...run, eventId };
    this.log.info({ cron_id: job.id, run_id: run.id, event_id: eventId }, 'cron run started');
    this.notify(started);
    this.follow(started);
    return started;
  }

  /** Awaits the run's turn in the background, unless at the bound or closing (reconciliation records it then). */
  private follow(run: CronRunRecord): void {
    const eventId = run.eventId;
    if (eventId === null || this.closing || this.waiting.size >= this.maxWaiting) return;
    const waited = (async () => {
      const turn = await this.options.waiters.wait(eventId, this.waitTimeoutMs, this.stop.signal);
      // Paused (approval, clarification), timed out or closing: a later tick's reconciliation records it.
      if (!turn || !isTerminalStatus(turn.status)) return;
      await this.finish(run.id, runOutcome(endReason(turn.status, turn.terminationReason)), turn.finishedAt);
    })()
      .catch((err: unknown) => this.log.warn({ run_id: run.id, err: describe(err) }, 'cron run outcome not recorded'))
      .finally(() => {
        this.waiting.delete(waited);
        this.followed.delete(run.id);
      });
    this.waiting.add(waited);
    this.followed.set(run.id, waited);
  }

  /** Records the outcome of runs nobody is waiting for: turns that ended unobserved, and runs never submitted. */
  private async reconcile(nowMs: number): Promise<void> {
    const { store } = this.options;
    for (const settled of await listSettledRuns(store.db, this.batchSize)) {
      await this.finish(
        settled.run.id,
        runOutcome(endReason(settled.turnStatus, settled.terminationReason)),
        settled.turnFinishedAt,
      );
    }
    const startedBefore = isoTime(nowMs - this.abandonAfterMs);
    for (const run of await listAbandonedRuns(store.db, startedBefore, this.batchSize)) {
      await this.finish(run.id, { status: 'failed', reason: ABANDONED });
    }
  }

  /** Ends a running run; only the first finisher (in any process) records it and is told. */
  private async finish(
    runId: string,
    outcome: { status: 'completed' | 'failed'; reason: string | null },
    finishedAt: string | null = null,
  ): Promise<CronRunRecord | null> {
    const at = finishedAt ?? isoTime(this.options.clock.now());
    const run = await this.options.store.writer.run((trx) => finishCronRun(trx, runId, { ...outcome, finishedAt: at }));
    if (run) {
      this.log.info({ cron_id: run.cronId, run_id: run.id, status: run.status, reason: run.reason }, 'cron run ended');
      this.notify(run);
    }
    return run;
  }

  private notify(run: CronRunRecord): void {
    try {
      this.options.onRun?.(run);
    } catch (err) {
      this.log.warn({ run_id: run.id, err: describe(err) }, 'cron onRun listener failed');
    }
  }
}

/** A run's ending from its turn's: completed, or failed with the turn's termination reason (else its status). */
function runOutcome(ended: Pick<EndedTurn, 'completed' | 'reason'>): {
  status: 'completed' | 'failed';
  reason: string | null;
} {
  return ended.completed ? { status: 'completed', reason: null } : { status: 'failed', reason: ended.reason };
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
