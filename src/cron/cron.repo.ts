import { type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import type { Database } from '../store/index.js';
import { listRunningCronRunsWithEndedTurns } from '../turns/index.js';

/** `cron_jobs` (migration 009_cron): one row per job. */
export interface CronJobsTable {
  id: string;
  /** Five-field cron expression, fields joined by single spaces. */
  schedule: string;
  prompt: string;
  /** 0/1. */
  enabled: number;
  /** 0/1. */
  authorized: number;
  /** Scheduled time of the latest run (ISO); null before the first. */
  last_run: string | null;
  /** Next slot the scheduler will fire (ISO); null while disabled. The cross-process claim token. */
  next_run: string | null;
  created_at: string;
  updated_at: string;
}

/** `cron_runs` (migration 009_cron): one row per run, scheduled or manual. */
export interface CronRunsTable {
  id: string;
  cron_id: string;
  /** `schedule` | `manual`. */
  triggered_by: string;
  scheduled_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** `running` | `completed` | `failed` | `skipped`. */
  status: string;
  event_id: string | null;
  reason: string | null;
}

declare module '../store/database.js' {
  /** `Database` with the tables of 009_cron. */
  interface Database {
    cron_jobs: CronJobsTable;
    cron_runs: CronRunsTable;
  }
}

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** A cron job, as stored (spec: Cron job). */
export interface CronJobRecord {
  /** `cron_…`, time-sortable. */
  id: string;
  schedule: string;
  prompt: string;
  enabled: boolean;
  authorized: boolean;
  lastRun: string | null;
  nextRun: string | null;
  createdAt: string;
  updatedAt: string;
}

/** What ended (or is ending) a run. `running`: its turn was submitted and has no outcome yet. */
export type CronRunStatus = 'running' | 'completed' | 'failed' | 'skipped';

/** What started a run: its schedule, or POST /cron/{id}/trigger. */
export type CronRunTrigger = 'schedule' | 'manual';

/** One run of a cron job (DECISIONS §9). */
export interface CronRunRecord {
  /** `crun_…`, time-sortable: newest first is `id` descending. */
  id: string;
  cronId: string;
  triggeredBy: CronRunTrigger;
  /** The slot it ran for (a scheduled run), or when it was triggered. */
  scheduledAt: string;
  /** When its turn was submitted; null for a skipped run, which never starts. */
  startedAt: string | null;
  finishedAt: string | null;
  status: CronRunStatus;
  /** The turn it submitted; null until submitted, and for skipped runs. */
  eventId: string | null;
  /** Why it was skipped or failed (`not_authorized`, a turn's termination reason…); null when completed. */
  reason: string | null;
}

/** Why a run is skipped when the profile requires authorisation and the job lacks it (spec: Cron job authorization). */
export const NOT_AUTHORIZED = 'not_authorized';

/** Runs kept per job: the newest ones, as many as GET /cron/{id}/runs can show (limit ≤ 100, no offset). */
export const RUNS_KEPT_PER_JOB = 100;

/** Stores a new job. Rejects with the driver's unique-violation error on a duplicate id. */
export async function insertCronJob(ex: Executor, job: CronJobRecord): Promise<CronJobRecord> {
  const row = await ex.insertInto('cron_jobs').values(toJobRow(job)).returningAll().executeTakeFirstOrThrow();
  return toJob(row);
}

/** The job `id`, or null. */
export async function getCronJob(ex: Executor, id: string): Promise<CronJobRecord | null> {
  const row = await ex.selectFrom('cron_jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toJob(row) : null;
}

/** Every job, oldest first. */
export async function listCronJobs(ex: Executor): Promise<CronJobRecord[]> {
  const rows = await ex.selectFrom('cron_jobs').selectAll().orderBy('id').execute();
  return rows.map(toJob);
}

/** The fields an update may set. */
export type CronJobChanges = Partial<
  Pick<CronJobRecord, 'schedule' | 'prompt' | 'enabled' | 'authorized' | 'nextRun' | 'updatedAt'>
>;

/**
 * Writes `changes` to job `id` and returns the job after it; null when the job
 * does not exist. With `expectedNextRun` the write happens only while the job
 * still has that `next_run` (null when another writer moved it first).
 */
export async function updateCronJob(
  ex: Executor,
  id: string,
  changes: CronJobChanges,
  expectedNextRun?: string | null,
): Promise<CronJobRecord | null> {
  const set: Partial<CronJobsTable> = {};
  if (changes.schedule !== undefined) set.schedule = changes.schedule;
  if (changes.prompt !== undefined) set.prompt = changes.prompt;
  if (changes.enabled !== undefined) set.enabled = changes.enabled ? 1 : 0;
  if (changes.authorized !== undefined) set.authorized = changes.authorized ? 1 : 0;
  if (changes.nextRun !== undefined) set.next_run = changes.nextRun;
  if (changes.updatedAt !== undefined) set.updated_at = changes.updatedAt;
  if (Object.keys(set).length === 0) return getCronJob(ex, id);
  let query = ex.updateTable('cron_jobs').set(set).where('id', '=', id);
  if (expectedNextRun !== undefined) {
    query =
      expectedNextRun === null ? query.where('next_run', 'is', null) : query.where('next_run', '=', expectedNextRun);
  }
  const row = await query.returningAll().executeTakeFirst();
  return row ? toJob(row) : null;
}

/** Deletes job `id` and its run history. Returns false when it did not exist. Two statements: run it in a transaction. */
export async function deleteCronJob(ex: Executor, id: string): Promise<boolean> {
  const result = await ex.deleteFrom('cron_jobs').where('id', '=', id).executeTakeFirst();
  if (result.numDeletedRows === 0n) return false;
  await ex.deleteFrom('cron_runs').where('cron_id', '=', id).execute();
  return true;
}

/** Enabled jobs whose `next_run` is at or before `now`, earliest first (then by id), at most `limit`. */
export async function listDueCronJobs(ex: Executor, now: string, limit: number): Promise<CronJobRecord[]> {
  const rows = await ex
    .selectFrom('cron_jobs')
    .selectAll()
    .where('enabled', '=', 1)
    .where('next_run', '<=', now)
    .orderBy('next_run')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(toJob);
}

/** A run just claimed, with the job as it was at the claim (its prompt is what the run submits). */
export interface ClaimedRun {
  job: CronJobRecord;
  run: CronRunRecord;
}

/**
 * Claims the slot `scheduledAt` of job `cronId` — exactly once across every
 * process sharing the database (DECISIONS §11). One conditional update moves
 * `next_run` from `expectedNextRun` (the value the caller read) to `nextRun`
 * and `last_run` forward to `scheduledAt`, only while the job is enabled and
 * still has `expectedNextRun`; concurrent claimers serialise on the row and
 * all but one update nothing. The winner inserts the run (unique per job and
 * slot, `on conflict do nothing`): `skipped` with `not_authorized` when
 * `requireAuthorization` and the job is not authorised, else `running`.
 * Returns null when this caller did not win. Several statements: run it in
 * a transaction.
 */
export async function claimScheduledRun(
  ex: Executor,
  input: {
    cronId: string;
    expectedNextRun: string;
    scheduledAt: string;
    nextRun: string | null;
    runId: string;
    now: string;
    requireAuthorization: boolean;
  },
): Promise<ClaimedRun | null> {
  const row = await ex
    .updateTable('cron_jobs')
    .set({ next_run: input.nextRun, last_run: laterOf('last_run', input.scheduledAt) })
    .where('id', '=', input.cronId)
    .where('enabled', '=', 1)
    .where('next_run', '=', input.expectedNextRun)
    .returningAll()
    .executeTakeFirst();
  if (!row) return null;
  const job = toJob(row);
  const run = await insertRun(ex, {
    id: input.runId,
    cronId: input.cronId,
    triggeredBy: 'schedule',
    scheduledAt: input.scheduledAt,
    ...startOrSkip(job, input.now, input.requireAuthorization),
  });
  return run ? { job, run } : null;
}

/**
 * Starts a manual run of job `cronId` at `now` (POST /cron/{id}/trigger),
 * whether or not the job is enabled: `skipped` with `not_authorized` when
 * `requireAuthorization` and the job is not authorised, else `running`.
 * `last_run` moves forward to `now`; `next_run` is untouched. Null when the
 * job does not exist. Several statements: run it in a transaction.
 */
export async function startManualRun(
  ex: Executor,
  input: { cronId: string; runId: string; now: string; requireAuthorization: boolean },
): Promise<ClaimedRun | null> {
  const row = await ex
    .updateTable('cron_jobs')
    .set({ last_run: laterOf('last_run', input.now) })
    .where('id', '=', input.cronId)
    .returningAll()
    .executeTakeFirst();
  if (!row) return null;
  const job = toJob(row);
  const run = await insertRun(ex, {
    id: input.runId,
    cronId: input.cronId,
    triggeredBy: 'manual',
    scheduledAt: input.now,
    ...startOrSkip(job, input.now, input.requireAuthorization),
  });
  if (!run) throw new Error(`cron run ${input.runId} already exists`);
  return { job, run };
}

/** Records the turn a running run submitted. Returns the run after it, or null when it is gone (job deleted). */
export async function setRunEvent(ex: Executor, runId: string, eventId: string): Promise<CronRunRecord | null> {
  const row = await ex
    .updateTable('cron_runs')
    .set({ event_id: eventId })
    .where('id', '=', runId)
    .returningAll()
    .executeTakeFirst();
  return row ? toRun(row) : null;
}

/**
 * Ends a running run: `completed` or `failed` with `reason`, `finished_at`.
 * Only a run still `running` changes, so of several finishers (the waiting
 * process, reconciliation in another) exactly one gets the record back; the
 * others get null.
 */
export async function finishCronRun(
  ex: Executor,
  runId: string,
  outcome: { status: 'completed' | 'failed'; reason: string | null; finishedAt: string },
): Promise<CronRunRecord | null> {
  const row = await ex
    .updateTable('cron_runs')
    .set({ status: outcome.status, reason: outcome.reason, finished_at: outcome.finishedAt })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .returningAll()
    .executeTakeFirst();
  return row ? toRun(row) : null;
}

/** The newest `limit` runs of job `cronId`, newest first. */
export async function listCronRuns(ex: Executor, cronId: string, limit: number): Promise<CronRunRecord[]> {
  const rows = await ex
    .selectFrom('cron_runs')
    .selectAll()
    .where('cron_id', '=', cronId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toRun);
}

/** A running run whose turn has ended, with the turn's outcome. */
export interface SettledRun {
  run: CronRunRecord;
  turnStatus: string;
  terminationReason: string | null;
  turnFinishedAt: string | null;
}

/**
 * Running runs whose turn (in the turn ledger) has reached a terminal status,
 * at most `limit`: the runs nobody is waiting for any more — their process
 * stopped, the wait timed out, or the turn was paused for approval first.
 */
export async function listSettledRuns(ex: Executor, limit: number): Promise<SettledRun[]> {
  const rows = await listRunningCronRunsWithEndedTurns(ex, limit);
  return rows.map((row) => ({
    run: toRun(row),
    turnStatus: row.turn_status,
    terminationReason: row.termination_reason,
    turnFinishedAt: row.turn_finished_at,
  }));
}

/**
 * Running runs that never got a turn and started before `startedBefore`: the
 * process claimed them and stopped before submitting. At most `limit`.
 */
export async function listAbandonedRuns(ex: Executor, startedBefore: string, limit: number): Promise<CronRunRecord[]> {
  const rows = await ex
    .selectFrom('cron_runs')
    .selectAll()
    .where('status', '=', 'running')
    .where('event_id', 'is', null)
    .where('started_at', '<', startedBefore)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(toRun);
}

/** The status fields of a new run: started now, or skipped now for want of authorisation. */
function startOrSkip(
  job: CronJobRecord,
  now: string,
  requireAuthorization: boolean,
): Pick<CronRunRecord, 'status' | 'startedAt' | 'finishedAt' | 'reason'> {
  return requireAuthorization && !job.authorized
    ? { status: 'skipped', startedAt: null, finishedAt: now, reason: NOT_AUTHORIZED }
    : { status: 'running', startedAt: now, finishedAt: null, reason: null };
}

/**
 * Inserts a run unless its slot is taken (null then), and trims the job's
 * history to the newest RUNS_KEPT_PER_JOB (runs still running are kept).
 */
async function insertRun(
  ex: Executor,
  run: Omit<CronRunRecord, 'eventId'> & { eventId?: string | null },
): Promise<CronRunRecord | null> {
  const row = await ex
    .insertInto('cron_runs')
    .values({
      id: run.id,
      cron_id: run.cronId,
      triggered_by: run.triggeredBy,
      scheduled_at: run.scheduledAt,
      started_at: run.startedAt,
      finished_at: run.finishedAt,
      status: run.status,
      event_id: run.eventId ?? null,
      reason: run.reason,
    })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) return null;
  const oldestKept = ex
    .selectFrom('cron_runs')
    .select('id')
    .where('cron_id', '=', run.cronId)
    .orderBy('id', 'desc')
    .limit(1)
    .offset(RUNS_KEPT_PER_JOB - 1);
  await ex
    .deleteFrom('cron_runs')
    .where('cron_id', '=', run.cronId)
    .where('status', '<>', 'running')
    .where('id', '<', oldestKept)
    .execute();
  return toRun(row);
}

/** `column` moved forward to `value`: the later of the two ISO timestamps (null counts as earliest). */
function laterOf(column: 'last_run', value: string) {
  return sql<string>`(case when ${sql.ref(column)} is null or ${sql.ref(column)} < ${value} then ${value} else ${sql.ref(column)} end)`;
}

function toJobRow(job: CronJobRecord): CronJobsTable {
  return {
    id: job.id,
    schedule: job.schedule,
    prompt: job.prompt,
    enabled: job.enabled ? 1 : 0,
    authorized: job.authorized ? 1 : 0,
    last_run: job.lastRun,
    next_run: job.nextRun,
    created_at: job.createdAt,
    updated_at: job.updatedAt,
  };
}

function toJob(row: Selectable<CronJobsTable>): CronJobRecord {
  return {
    id: row.id,
    schedule: row.schedule,
    prompt: row.prompt,
    enabled: row.enabled === 1,
    authorized: row.authorized === 1,
    lastRun: row.last_run,
    nextRun: row.next_run,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toRun(row: Selectable<CronRunsTable>): CronRunRecord {
  return {
    id: row.id,
    cronId: row.cron_id,
    triggeredBy: row.triggered_by as CronRunTrigger,
    scheduledAt: row.scheduled_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    status: row.status as CronRunStatus,
    eventId: row.event_id,
    reason: row.reason,
  };
}
