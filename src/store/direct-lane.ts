import type { QueryResult } from 'kysely';

/**
 * A way to run a compiled statement at once, beside Kysely's connection
 * provider, for a driver whose statements are synchronous (better-sqlite3).
 * Kysely's path wraps every statement in half a dozen promises and objects
 * (connection provider, mutex, result transform): on SQLite that was about
 * 40 % of what a turn allocates, for statements that themselves take a few
 * microseconds. `PreparedQuery` asks the lane first and takes Kysely's path
 * when the lane declines.
 *
 * A lane may run a statement only where Kysely would have run it on the same
 * connection: one meant for a transaction only while that transaction is
 * open, one meant for no transaction only while none is open (it would
 * otherwise join another caller's transaction). Anything else — the
 * connection closed, busy — it declines, and the statement waits its turn.
 */
export interface DirectLane {
  /**
   * The result of running `sql` now, or undefined when it must take Kysely's
   * path. Throws what the statement throws, mapped as the driver maps it.
   */
  run<R>(sql: string, parameters: readonly unknown[], inTransaction: boolean): QueryResult<R> | undefined;
}

/** The lane of each dialect adapter (one adapter per Kysely instance, shared by its transactions). */
const lanes = new WeakMap<object, DirectLane>();

/** Gives the Kysely instance whose adapter this is a direct lane (or wraps the one it has). */
export function setDirectLane(adapter: object, lane: DirectLane): void {
  lanes.set(adapter, lane);
}

/** The direct lane of a dialect adapter, if its driver has one. */
export function directLaneOf(adapter: object): DirectLane | undefined {
  return lanes.get(adapter);
}

/** Wraps the adapter's lane, if it has one, with `wrap` (error mapping, fault injection). */
export function wrapDirectLane(adapter: object, wrap: (inner: DirectLane) => DirectLane): void {
  const inner = lanes.get(adapter);
  if (inner) lanes.set(adapter, wrap(inner));
}
