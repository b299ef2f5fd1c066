import {
  CompiledQuery,
  type Compilable,
  type Kysely,
  type QueryResult,
  type RawBuilder,
  type Transaction,
} from 'kysely';
import type { Database } from './database.js';
import { directLaneOf } from './direct-lane.js';

/** `store.db`, a transaction, or a group-commit `trx`. */
type Executor = Kysely<Database> | Transaction<Database>;

/** Where a parameter of the compiled SQL comes from: a named input, or a value fixed when the query was built. */
type ParameterSource = { input: string } | { fixed: unknown };

/** The SQL and parameter sources of one query, compiled for one database. */
interface Template {
  sql: string;
  sources: readonly ParameterSource[];
  /** The compiled query without parameters: each run copies it with its own. */
  compiled: CompiledQuery;
}

/** Stands in for a named input while the query is built and compiled (never reaches a database). */
class Slot {
  constructor(readonly name: string) {}
}

/**
 * A query built with Kysely's builder and compiled to SQL once per database,
 * then run with new input values each time: the hot path runs a few dozen
 * statements per turn, and building and compiling each one anew was about a
 * tenth of a turn's CPU. Composes with any executor, inside a transaction or
 * not; the compiled text is cached per dialect (SQLite or PostgreSQL) and
 * runs through the same driver, guards and fault seam as every other query —
 * on SQLite through the dialect's direct lane when it may (`DirectLane`),
 * without Kysely's per-statement promises.
 *
 * `build` receives `input`, whose members stand for the values given to
 * `run`. It must only hand them to the builder as values (`where(…, '=',
 * input.x)`, `values({col: input.x})`, `set(…)`, `limit(input.n)`), never
 * inspect or transform them, and the query's shape must not depend on them:
 * a value fixed at build time (an `in` list of constants) is part of the
 * query.
 */
export class PreparedQuery<Input extends object, Row> {
  readonly #build: (ex: Executor, input: Input) => Compilable<Row>;
  /** One template per dialect adapter (a Kysely instance and its transactions share theirs). */
  readonly #templates = new WeakMap<object, Template>();

  constructor(build: (ex: Executor, input: Input) => Compilable<Row>) {
    this.#build = build;
  }

  /** Runs the query on `ex` with `input`; resolves with the driver's result (rows, affected rows). */
  run(ex: Executor, input: Input): Promise<QueryResult<Row>> {
    const executor = ex.getExecutor();
    const template = this.#template(ex);
    const values = input as Record<string, unknown>;
    const parameters = template.sources.map((source) => ('input' in source ? values[source.input] : source.fixed));
    const lane = directLaneOf(executor.adapter);
    if (lane) {
      let result: QueryResult<Row> | undefined;
      try {
        result = lane.run<Row>(template.sql, parameters, ex.isTransaction);
      } catch (error) {
        // A rejection, as on Kysely's path (drivers throw Errors; anything else is wrapped).
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
      if (result) return Promise.resolve(result);
    }
    return executor.executeQuery<Row>({ ...template.compiled, parameters });
  }

  /** The rows of the query (a select, or a write with `returning`). */
  async rows(ex: Executor, input: Input): Promise<Row[]> {
    return (await this.run(ex, input)).rows;
  }

  /** The first row, or undefined. */
  async first(ex: Executor, input: Input): Promise<Row | undefined> {
    return (await this.run(ex, input)).rows[0];
  }

  /** Rows the statement inserted, updated or deleted (0 when the driver does not say). */
  async affected(ex: Executor, input: Input): Promise<number> {
    return Number((await this.run(ex, input)).numAffectedRows ?? 0n);
  }

  #template(ex: Executor): Template {
    const key = ex.getExecutor().adapter;
    let template = this.#templates.get(key);
    if (!template) {
      template = compileTemplate(ex, this.#build);
      this.#templates.set(key, template);
    }
    return template;
  }
}

function compileTemplate<Input extends object, Row>(
  ex: Executor,
  build: (ex: Executor, input: Input) => Compilable<Row>,
): Template {
  const slots = new Proxy({} as Input, {
    get: (_target, name) => (typeof name === 'string' ? new Slot(name) : undefined),
  });
  const compiled = build(ex, slots).compile();
  return {
    sql: compiled.sql,
    sources: compiled.parameters.map((value) => (value instanceof Slot ? { input: value.name } : { fixed: value })),
    compiled: CompiledQuery.raw(compiled.sql),
  };
}

/** Builds a query once per database; see `PreparedQuery`. */
export function prepared<Input extends object, Row>(
  build: (ex: Executor, input: Input) => Compilable<Row>,
): PreparedQuery<Input, Row> {
  return new PreparedQuery(build);
}

/**
 * A statement written as SQL (Kysely's `sql` tag) rather than with the
 * builder, compiled once per database as `prepared` does: for the few
 * statements of the turn path that fold several writes into one round trip
 * with constructs the builder does not express (data-modifying CTEs). The
 * same rule holds: inputs are only interpolated as values.
 */
export function preparedSql<Input extends object, Row>(
  build: (input: Input) => RawBuilder<Row>,
): PreparedQuery<Input, Row> {
  return new PreparedQuery((ex, input: Input) => ({ compile: () => build(input).compile(ex) }));
}
