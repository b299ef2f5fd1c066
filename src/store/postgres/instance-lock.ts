import { hostname } from 'node:os';
import type PgModule from 'pg';
import { errorMessage, InstanceTakenError, StoreUnavailableError } from '../errors.js';
import { loadPg, parsePostgresUrl } from './dialect.js';

/**
 * The first key of every instance lock (`pg_try_advisory_lock(int, int)`):
 * "GH" and 1. Two-key advisory locks live apart from the one-key ones that
 * `Store.exclusive` takes, so the two never collide.
 */
const INSTANCE_LOCK_CLASS = 0x47480001;

/** Where an instance lock reports what happens to it after the start. */
export interface InstanceLockEvents {
  /** The connection holding the lock dropped (the lock went with it); it is being claimed again. */
  lost(error: string): void;
  /** Claimed again after a loss. */
  regained(): void;
  /** Could not be claimed again (the database is unreachable, or another process took the id meanwhile). */
  failed(error: string): void;
}

/** A held instance lock; `close` releases it and stops reclaiming (idempotent). */
export interface InstanceLock {
  close(): Promise<void>;
}

/** How to claim an instance id on PostgreSQL. */
export interface InstanceLockOptions {
  /** `storage.url`. */
  url: string | null | undefined;
  /** The instance id (`cluster.instance_id`, or the derived one). */
  id: string;
  /** How long to keep trying while another session holds it (a predecessor being torn down); default 5000 ms. */
  waitMs?: number;
  events: InstanceLockEvents;
}

/**
 * Holds a session-level advisory lock on the instance id, on a connection of
 * its own, for as long as this process lives: two live processes never run
 * under one id, whatever machines they are on. PostgreSQL frees the lock when
 * the session ends, so a process killed with SIGKILL releases it as soon as
 * its socket closes; the server's TCP keepalives (set on this session) end
 * it within about 25 s when the holder's machine vanished without a word.
 *
 * The key is the id and the connection's schema, so gateways of different
 * schemas on one server do not exclude each other. The lock session's
 * `application_name` is `gatehouse <pid>@<host>`, which a refused successor
 * reads from `pg_stat_activity` to name the holder.
 *
 * If the connection drops later (a server restart, a network cut), the lock
 * is gone with it: the holder claims it again with backoff (1 s doubling to
 * 30 s) and reports through `events`. Rejects with InstanceTakenError when
 * another session still holds the id after `waitMs`, with
 * StoreUnavailableError when the database cannot be reached.
 */
export async function lockInstance(options: InstanceLockOptions): Promise<InstanceLock> {
  const url = parsePostgresUrl(options.url).toString();
  const deadline = Date.now() + (options.waitMs ?? 5000);
  let client = await connect(url);
  for (;;) {
    let got: boolean;
    try {
      got = await tryLock(client, options.id);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw new StoreUnavailableError(`cannot claim instance ${options.id}: ${errorMessage(error)}`, { cause: error });
    }
    if (got) break;
    if (Date.now() >= deadline) {
      const holder = await describeHolder(client, options.id).catch(() => ({ who: 'another process', host: null }));
      await client.end().catch(() => undefined);
      throw new InstanceTakenError(options.id, holder.who, holder.host);
    }
    await delay(100);
  }

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const reclaim = (backoffMs: number): void => {
    timer = setTimeout(() => {
      timer = undefined;
      void (async () => {
        if (closed) return;
        let next: PgModule.Client | null = null;
        try {
          next = await connect(url);
          if (closed || !(await tryLock(next, options.id))) {
            const why = closed
              ? null
              : `${(await describeHolder(next, options.id).catch(() => null))?.who ?? 'another process'} holds it`;
            await next.end().catch(() => undefined);
            if (why) throw new Error(why);
            return;
          }
          client = next;
          watch(client);
          options.events.regained();
        } catch (error) {
          if (next && next !== client) await next.end().catch(() => undefined);
          if (closed) return;
          options.events.failed(errorMessage(error));
          reclaim(Math.min(backoffMs * 2, 30_000));
        }
      })();
    }, backoffMs);
    timer.unref();
  };
  const watch = (held: PgModule.Client): void => {
    let dropped = false;
    const drop = (error: string): void => {
      if (dropped || closed || held !== client) return;
      dropped = true;
      held.end().catch(() => undefined);
      options.events.lost(error);
      reclaim(1000);
    };
    held.on('error', (error) => drop(error.message));
    held.on('end', () => drop('connection ended'));
  };
  watch(client);

  return {
    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      await client.end().catch(() => undefined); // ending the session frees the lock
    },
  };
}

async function connect(url: string): Promise<PgModule.Client> {
  const pg = loadPg();
  const client = new pg.Client({
    connectionString: url,
    application_name: `gatehouse ${process.pid}@${hostname()}`.slice(0, 63),
    keepAlive: true,
    connectionTimeoutMillis: 5000,
  });
  // Until `watch` takes over, an error on the idle client must not crash the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
    // The server notices a vanished holder within idle + interval × count seconds and frees the lock.
    await client.query('set tcp_keepalives_idle = 10; set tcp_keepalives_interval = 5; set tcp_keepalives_count = 3');
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new StoreUnavailableError(`cannot reach PostgreSQL to claim the instance id: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  return client;
}

const KEY_SQL = `hashtext($1::text || ':' || coalesce(current_schema(), ''))`;

async function tryLock(client: PgModule.Client, id: string): Promise<boolean> {
  const result = await client.query<{ got: boolean }>(
    `select pg_try_advisory_lock(${INSTANCE_LOCK_CLASS}, ${KEY_SQL}) as got`,
    [id],
  );
  return result.rows[0]?.got === true;
}

/**
 * Who holds the id, from the holding session's application_name (`another gateway (pid N)` and its host), as far
 * as this role may see it; otherwise `another process` and the address it connected from.
 */
async function describeHolder(client: PgModule.Client, id: string): Promise<{ who: string; host: string | null }> {
  const result = await client.query<{ application_name: string | null; client_addr: string | null }>(
    `select a.application_name, host(a.client_addr) as client_addr
       from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.objsubid = 2
        and l.classid = (${INSTANCE_LOCK_CLASS}::bigint & 4294967295)::oid
        and l.objid = (${KEY_SQL}::bigint & 4294967295)::oid
        and l.database = (select oid from pg_database where datname = current_database())`,
    [id],
  );
  const row = result.rows[0];
  const match = /^gatehouse (\d+)@(.+)$/.exec(row?.application_name ?? '');
  if (match) return { who: `another gateway (pid ${match[1]})`, host: match[2] ?? null };
  return { who: 'another process', host: row?.client_addr ?? null };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
