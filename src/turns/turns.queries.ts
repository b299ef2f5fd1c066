import { type Kysely, type RawBuilder, type Selectable, type Transaction, sql } from 'kysely';
import type { Database } from '../store/index.js';
import { sessionKeyFor } from './inbound.js';
import { TERMINAL_STATUSES } from './turn-status.js';

/**
 * The reads other capabilities make of the turn ledger, joined with their own
 * tables: the SQL on `turns` stays in `turns/` (ADR 0011: a capability
 * reaches another through its index), while the tables it is joined with
 * belong to their capability (tasks, cron, channels), which turns the rows
 * into its own records. Each function takes `store.db` or a transaction and
 * composes inside the caller's transaction.
 */

/** `store.db`, a transaction, or a group-commit `trx`. */
type Executor = Kysely<Database> | Transaction<Database>;

/**
 * The `tasks` rows that are running, claimed by a runner, and whose turn
 * (`tasks.event_id`) has a terminal status in the ledger; oldest start first,
 * at most `limit`. The tasks capability maps them (tasks.repo.ts).
 */
export async function listRunningTasksWithEndedTurns(
  ex: Executor,
  limit: number,
): Promise<Array<Selectable<Database['tasks']>>> {
  return ex
    .selectFrom('tasks')
    .innerJoin('turns', 'turns.event_id', 'tasks.event_id')
    .selectAll('tasks')
    .where('tasks.status', '=', 'running')
    .where('tasks.claimed_by', 'is not', null)
    .where('turns.status', 'in', TERMINAL_STATUSES)
    .orderBy('tasks.started_at')
    .limit(limit)
    .execute();
}

/** A `cron_runs` row with the outcome of its turn. */
export type CronRunWithTurn = Selectable<Database['cron_runs']> & {
  /** The turn's (terminal) status. */
  turn_status: string;
  termination_reason: string | null;
  /** ISO time the turn ended; null when the ledger has none. */
  turn_finished_at: string | null;
};

/**
 * The `cron_runs` rows still `running` whose turn (`cron_runs.event_id`) has
 * a terminal status in the ledger, with that outcome; by run id, at most
 * `limit`. The cron capability maps them (cron.repo.ts).
 */
export async function listRunningCronRunsWithEndedTurns(ex: Executor, limit: number): Promise<CronRunWithTurn[]> {
  return ex
    .selectFrom('cron_runs as r')
    .innerJoin('turns as t', 't.event_id', 'r.event_id')
    .selectAll('r')
    .select(['t.status as turn_status', 't.termination_reason', 't.finished_at as turn_finished_at'])
    .where('r.status', '=', 'running')
    .where('t.status', 'in', TERMINAL_STATUSES)
    .orderBy('r.id')
    .limit(limit)
    .execute();
}

/**
 * The event ids of the turns of `platform`'s chats (session keys
 * `gateway:<platform>:<chat>`, read as a key range the session index serves)
 * whose status is one of `statuses`, updated at or after `sinceIso`, and that
 * have no `platform_replies` row or one showing another status: the replies
 * still owed. Ledger order (`seq`), at most `limit`.
 */
export async function listTurnsWithoutReply(
  ex: Executor,
  platform: string,
  statuses: readonly string[],
  sinceIso: string,
  limit: number,
): Promise<string[]> {
  const low = sessionKeyFor(platform, '');
  const high = `${low.slice(0, -1)};`; // ';' sorts right after ':': the end of the range
  const rows = await ex
    .selectFrom('turns')
    .leftJoin('platform_replies', 'platform_replies.event_id', 'turns.event_id')
    .select('turns.event_id')
    .where('turns.session_key', '>=', low)
    .where('turns.session_key', '<', high)
    .where('turns.status', 'in', statuses)
    .where('turns.updated_at', '>=', sinceIso)
    .where((eb) =>
      eb.or([eb('platform_replies.event_id', 'is', null), eb('platform_replies.status', '!=', eb.ref('turns.status'))]),
    )
    .orderBy('turns.seq')
    .limit(limit)
    .execute();
  return rows.map((row) => row.event_id);
}

/**
 * The turns that ended, each with its session's columns (`sessions.*`, for a scope by agent or principal): the
 * analytics capability narrows them by time and scope and groups them (analytics.repo.ts `turnSeries`).
 */
export function endedTurnsWithSessions(ex: Executor) {
  return ex
    .selectFrom('turns')
    .leftJoin('sessions', 'sessions.key', 'turns.session_key')
    .where('turns.finished_at', 'is not', null);
}

/**
 * Milliseconds from `accepted_at` to `finished_at` of a turn. The timestamps are ISO 8601 UTC text, and the
 * two databases have no common function for the distance between two such texts: SQLite's `julianday`
 * (fractional days, well under a millisecond of error at today's dates) and PostgreSQL's `timestamptz`
 * subtraction.
 */
export function turnLatencyMs(dialect: 'sqlite' | 'postgres'): RawBuilder<number> {
  const accepted = sql.ref('turns.accepted_at');
  const finished = sql.ref('turns.finished_at');
  return dialect === 'postgres'
    ? sql<number>`cast(round(extract(epoch from (cast(${finished} as timestamptz) - cast(${accepted} as timestamptz))) * 1000) as bigint)`
    : sql<number>`cast(round((julianday(${finished}) - julianday(${accepted})) * 86400000) as integer)`;
}
