import { errors } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import {
  deleteCronJob,
  getCronJob,
  insertCronJob,
  listCronJobs,
  listCronRuns,
  updateCronJob,
  type CronJobChanges,
  type CronJobRecord,
  type CronRunRecord,
} from './cron.repo.js';
import { scheduleOf } from './cron.schedule.js';
import type { CreateCronInput, UpdateCronInput } from './cron.schema.js';

/**
 * Runs a job now, outside its schedule (POST /cron/{id}/trigger). The
 * scheduler implements it; the API only knows this port.
 */
export interface CronRunner {
  /** The run started (or skipped) for job `cronId`; null when the job does not exist. */
  trigger(cronId: string): Promise<CronRunRecord | null>;
}

/** What the cron service uses. */
export interface CronServiceDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  runner: CronRunner;
}

/**
 * Cron jobs (spec: Cron; DECISIONS §9). Every method that names a job throws
 * 404 when it does not exist. `next_run` is the next slot after now (UTC)
 * while the job is enabled and null while it is disabled; a change of
 * `prompt` or `schedule` withdraws the job's authorisation.
 */
export class CronService {
  constructor(private readonly deps: CronServiceDeps) {}

  /** Every job, oldest first. */
  list(): Promise<CronJobRecord[]> {
    return listCronJobs(this.deps.store.db);
  }

  /** Job `id`. */
  async get(id: string): Promise<CronJobRecord> {
    return found(await getCronJob(this.deps.store.db, id));
  }

  /** Creates a job: unauthorised, enabled unless `enabled: false`, `next_run` computed from now. */
  async create(input: CreateCronInput): Promise<CronJobRecord> {
    const nowMs = this.deps.clock.now();
    const now = isoTime(nowMs);
    const enabled = input.enabled ?? true;
    const job: CronJobRecord = {
      id: this.deps.ids.next('cron'),
      schedule: input.schedule,
      prompt: input.prompt,
      enabled,
      authorized: false,
      lastRun: null,
      nextRun: enabled ? nextRunOf(input.schedule, nowMs) : null,
      createdAt: now,
      updatedAt: now,
    };
    return this.deps.store.writer.run((trx) => insertCronJob(trx, job));
  }

  /**
   * Applies the fields present. A changed `schedule` or `prompt` resets
   * `authorized` to false; a changed `schedule`, or enabling a disabled job,
   * recomputes `next_run` from now (a re-enabled job does not catch up on the
   * slots it missed while disabled); disabling clears it. `updated_at` moves
   * only when something changed.
   */
  async update(id: string, input: UpdateCronInput): Promise<CronJobRecord> {
    const nowMs = this.deps.clock.now();
    const updated = await this.deps.store.writer.run(async (trx) => {
      const current = await getCronJob(trx, id);
      if (!current) return null;
      const changes = jobChanges(current, input, nowMs);
      return changes ? updateCronJob(trx, id, changes) : current;
    });
    return found(updated);
  }

  /** Deletes job `id` and its run history; a run in progress finishes its turn unrecorded. */
  async remove(id: string): Promise<void> {
    const deleted = await this.deps.store.writer.run((trx) => deleteCronJob(trx, id));
    if (!deleted) throw errors.notFound('cron job');
  }

  /** Authorises (`true`) or revokes (`false`) job `id`; idempotent (spec: Cron job authorization). */
  async setAuthorized(id: string, authorized: boolean): Promise<CronJobRecord> {
    const now = isoTime(this.deps.clock.now());
    const updated = await this.deps.store.writer.run(async (trx) => {
      const current = await getCronJob(trx, id);
      if (!current || current.authorized === authorized) return current;
      return updateCronJob(trx, id, { authorized, updatedAt: now });
    });
    return found(updated);
  }

  /** The newest `limit` runs of job `id`, newest first. */
  async runs(id: string, limit: number): Promise<CronRunRecord[]> {
    await this.get(id);
    return listCronRuns(this.deps.store.db, id, limit);
  }

  /** Runs job `id` now; the run as it stands once its turn is submitted (or skipped). */
  async trigger(id: string): Promise<CronRunRecord> {
    return found(await this.deps.runner.trigger(id));
  }
}

/** The changes `input` makes to `current` at `nowMs`, or null when it changes nothing. */
function jobChanges(current: CronJobRecord, input: UpdateCronInput, nowMs: number): CronJobChanges | null {
  const schedule = input.schedule ?? current.schedule;
  const prompt = input.prompt ?? current.prompt;
  const enabled = input.enabled ?? current.enabled;
  const scheduleChanged = schedule !== current.schedule;
  const promptChanged = prompt !== current.prompt;
  if (!scheduleChanged && !promptChanged && enabled === current.enabled) return null;

  let nextRun = current.nextRun;
  if (!enabled) nextRun = null;
  else if (scheduleChanged || !current.enabled) nextRun = nextRunOf(schedule, nowMs);
  return {
    schedule,
    prompt,
    enabled,
    // spec: a changed job must be authorised again before it runs under standard/extended.
    authorized: scheduleChanged || promptChanged ? false : current.authorized,
    nextRun,
    updatedAt: isoTime(nowMs),
  };
}

/** The first slot of `schedule` after `nowMs`, ISO; null if it has none. */
function nextRunOf(schedule: string, nowMs: number): string | null {
  const next = scheduleOf(schedule).nextAfter(nowMs);
  return next === null ? null : isoTime(next);
}

function found<T>(value: T | null): T {
  if (value === null) throw errors.notFound('cron job');
  return value;
}
