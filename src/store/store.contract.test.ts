import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Transaction, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, isoTime } from '../lib/clock.js';
import type { Database } from './database.js';
import { GroupCommit } from './group-commit.js';
import { getMeta, setMeta } from './meta.repo.js';
import { type Migration, migrate, validateMigrations } from './migrate.js';
import { migrations as postgresMigrations } from './postgres/migrations.js';
import { migrations as sqliteMigrations } from './sqlite/migrations.js';
import { StoreUnavailableError, createStore, openStore } from './store.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';

const clock = new ManualClock();
const now = (): string => isoTime(clock.now());
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** An op that fails inside the database (NOT NULL violation), not in JS. */
async function failingInsert(trx: Transaction<Database>): Promise<void> {
  await sql`insert into gateway_meta (key, value, updated_at) values ('bad', null, 'x')`.execute(trx);
}

async function metaKeys(t: TestStore): Promise<string[]> {
  const rows = await t.store.db.selectFrom('gateway_meta').select('key').orderBy('key').execute();
  return rows.map((row) => row.key);
}

describeBackends('store contract', (backend) => {
  let t: TestStore;
  const migrations = backend.name === 'sqlite' ? sqliteMigrations : postgresMigrations;

  beforeEach(async () => {
    t = await backend.open({ clock });
  });
  afterEach(async () => {
    await t.cleanup();
  });

  describe('migrations', () => {
    it('records every migration once; reopening the same database applies nothing', async () => {
      const first = await t.store.db.selectFrom('schema_migrations').selectAll().orderBy('name').execute();
      expect(first.map((row) => row.name)).toEqual(migrations.map((m) => m.name));
      expect(first[0]!.applied_at).toBe(now());

      await t.store.close();
      clock.advance(60_000);
      const reopened = await t.reopen();
      const second = await reopened.db.selectFrom('schema_migrations').selectAll().orderBy('name').execute();
      expect(second).toEqual(first);
    });

    it('applies an appended migration once', async () => {
      const appended: Migration[] = [
        ...migrations,
        {
          name: '999_contract_probe',
          up: ['create table contract_probe (id text primary key)', "insert into contract_probe (id) values ('x')"],
        },
      ];
      const options = { dialect: backend.name, migrations: appended, now };
      expect(await migrate(t.store.db, options)).toEqual(['999_contract_probe']);
      expect(await migrate(t.store.db, options)).toEqual([]);
      const rows = await sql<{ id: string }>`select id from contract_probe`.execute(t.store.db);
      expect(rows.rows).toEqual([{ id: 'x' }]);
    });

    it('rolls back a failing migration entirely and does not record it', async () => {
      const broken: Migration[] = [
        ...migrations,
        { name: '999_broken', up: ['create table half_done (id text)', 'insert into no_such_table values (1)'] },
      ];
      await expect(migrate(t.store.db, { dialect: backend.name, migrations: broken, now })).rejects.toThrow();
      const recorded = await t.store.db.selectFrom('schema_migrations').select('name').execute();
      expect(recorded.map((row) => row.name)).not.toContain('999_broken');
      await expect(sql`select * from half_done`.execute(t.store.db)).rejects.toThrow(/half_done/);
    });

    it('refuses a database migrated by a newer Gatehouse', async () => {
      await t.store.db
        .insertInto('schema_migrations')
        .values({ name: '998_from_the_future', applied_at: now() })
        .execute();
      await t.store.close();
      await expect(t.reopen()).rejects.toThrow(/newer Gatehouse.*998_from_the_future/);
    });

    it.runIf(backend.name === 'sqlite')('opens <dataDir>/gatehouse.db with the durability pragmas', async () => {
      expect(existsSync(join(t.options.dataDir, 'gatehouse.db'))).toBe(true);
      const pragma = async (name: string): Promise<unknown> => {
        const { rows } = await sql<Record<string, unknown>>`${sql.raw(`pragma ${name}`)}`.execute(t.store.db);
        return Object.values(rows[0]!)[0];
      };
      expect(await pragma('journal_mode')).toBe('wal');
      expect(await pragma('synchronous')).toBe(1); // NORMAL: the writer fsyncs the WAL itself
      expect(await pragma('busy_timeout')).toBe(5000);
      expect(await pragma('foreign_keys')).toBe(1);
    });

    it.runIf(backend.name === 'postgres')('keeps every table in the configured schema', async () => {
      const schema = t.options.schema!;
      const { rows } = await sql<{ current: string; meta: boolean; migrations: boolean }>`
        select current_schema() as current,
               to_regclass(${`${schema}.gateway_meta`}) is not null as meta,
               to_regclass(${`${schema}.schema_migrations`}) is not null as migrations`.execute(t.store.db);
      expect(rows).toEqual([{ current: schema, meta: true, migrations: true }]);
    });

    // Two stores on one SQLite file in one process would block the event loop
    // in busy_timeout (better-sqlite3 is synchronous); across processes
    // BEGIN IMMEDIATE serialises them. The PostgreSQL race is the one to pin.
    it.runIf(backend.name === 'postgres')('lets several processes migrate a fresh schema at once', async () => {
      const options = { ...t.options, schema: `${t.options.schema!}_race` };
      const results = await Promise.allSettled([openStore(options), openStore(options), openStore(options)]);
      const stores = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      try {
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
        const rows = await stores[0]!.db.selectFrom('schema_migrations').select('name').execute();
        expect(rows.map((row) => row.name)).toEqual(migrations.map((m) => m.name));
      } finally {
        await Promise.all(stores.map((s) => s.close()));
        await sql`drop schema if exists ${sql.id(options.schema)} cascade`.execute(t.store.db);
      }
    });
  });

  describe('ping and close', () => {
    it('ping resolves while the database is up', async () => {
      await expect(t.store.ping()).resolves.toBeUndefined();
    });

    it('close is idempotent; afterwards ping and writer reject with StoreUnavailableError', async () => {
      await Promise.all([t.store.close(), t.store.close()]);
      await t.store.close();
      await expect(t.store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(t.store.writer.run(async () => 1)).rejects.toThrow(StoreUnavailableError);
      // Reads through `db` too: a closed store is "unavailable" (503), never a plain Error (500).
      await expect(getMeta(t.store.db, 'x')).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it('close waits for queued writes, then rejects new ones; the writes survive reopening', async () => {
      const queued = range(10).map((i) => t.store.writer.run((trx) => setMeta(trx, `q${i}`, `v${i}`, now())));
      const closing = t.store.close();
      await expect(t.store.writer.run(async () => 1)).rejects.toThrow(/closed/);
      await closing;
      const settled = await Promise.allSettled(queued);
      expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);

      const reopened = await t.reopen();
      expect(await getMeta(reopened.db, 'q9')).toBe('v9');
    });

    it('data written through db and writer survives close and reopen', async () => {
      await setMeta(t.store.db, 'direct', 'd', now());
      await t.store.writer.run((trx) => setMeta(trx, 'batched', 'b', now()));
      await t.store.close();
      const reopened = await t.reopen();
      expect(await getMeta(reopened.db, 'direct')).toBe('d');
      expect(await getMeta(reopened.db, 'batched')).toBe('b');
    });
  });

  describe('meta repository', () => {
    it('returns null for a missing key, then upserts value and updated_at', async () => {
      expect(await getMeta(t.store.db, 'instance')).toBeNull();

      await setMeta(t.store.db, 'instance', 'one', '2026-11-21T10:00:00.000Z');
      expect(await getMeta(t.store.db, 'instance')).toBe('one');

      await setMeta(t.store.db, 'instance', 'two', '2026-11-21T10:05:00.000Z');
      const rows = await t.store.db.selectFrom('gateway_meta').selectAll().execute();
      expect(rows).toEqual([{ key: 'instance', value: 'two', updated_at: '2026-11-21T10:05:00.000Z' }]);
    });

    it('works inside a transaction and rolls back with it', async () => {
      await t.store.db.transaction().execute((trx) => setMeta(trx, 'kept', 'yes', now()));
      await expect(
        t.store.db.transaction().execute(async (trx) => {
          await setMeta(trx, 'dropped', 'no', now());
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await metaKeys(t)).toEqual(['kept']);
    });

    it('sorts ISO timestamps as text and counts as numbers on both databases', async () => {
      await setMeta(t.store.db, 'b', '2', '2026-11-21T10:00:00.100Z');
      await setMeta(t.store.db, 'a', '1', '2026-11-21T09:59:59.999Z');
      await setMeta(t.store.db, 'c', '3', '2026-12-01T00:00:00.000Z');
      const rows = await t.store.db
        .selectFrom('gateway_meta')
        .select('key')
        .where('updated_at', '>=', '2026-11-21T10:00:00.000Z')
        .orderBy('updated_at')
        .execute();
      expect(rows.map((row) => row.key)).toEqual(['b', 'c']);
      const count = await t.store.db
        .selectFrom('gateway_meta')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      expect(count.n).toBe(3);
    });
  });

  describe('group commit', () => {
    it('commits a burst of concurrent ops in one transaction', async () => {
      const before = t.store.writer.stats;
      const results = await Promise.all(
        range(100).map((i) =>
          t.store.writer.run(async (trx) => {
            await setMeta(trx, `k${String(i).padStart(3, '0')}`, `v${i}`, now());
            return i;
          }),
        ),
      );
      const after = t.store.writer.stats;
      expect(results).toEqual(range(100));
      expect(after.opsCommitted - before.opsCommitted).toBe(100);
      expect(after.batchesCommitted - before.batchesCommitted).toBe(1);
      expect(await metaKeys(t)).toHaveLength(100);
    });

    it('batches the ops submitted while a batch is committing into the next one', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let markStarted!: () => void;
      const started = new Promise<void>((resolve) => (markStarted = resolve));

      const before = t.store.writer.stats;
      const first = t.store.writer.run(async (trx) => {
        markStarted();
        await gate;
        await setMeta(trx, 'first', '1', now());
      });
      await started;
      const rest = range(50).map((i) => t.store.writer.run((trx) => setMeta(trx, `r${i}`, 'x', now())));
      expect(t.store.writer.stats.queued).toBe(50);
      release();
      await Promise.all([first, ...rest]);

      const after = t.store.writer.stats;
      expect(after.batchesCommitted - before.batchesCommitted).toBe(2);
      expect(after.largestBatch).toBeGreaterThanOrEqual(50);
    });

    it('caps a transaction at maxBatch ops', async () => {
      const writer = new GroupCommit(t.store.db, { maxBatch: 10 });
      await Promise.all(range(35).map((i) => writer.run((trx) => setMeta(trx, `m${i}`, 'x', now()))));
      expect(writer.stats).toMatchObject({ batchesCommitted: 4, opsCommitted: 35, largestBatch: 10 });
      await writer.close();
    });

    it('a failing op rejects only itself; the rest of its batch commits', async () => {
      const before = t.store.writer.stats;
      const settled = await Promise.allSettled(
        range(10).map((i) =>
          t.store.writer.run(async (trx) => {
            if (i === 4) await failingInsert(trx);
            else await setMeta(trx, `ok${i}`, 'x', now());
            return i;
          }),
        ),
      );
      expect(settled.map((s) => s.status)).toEqual(range(10).map((i) => (i === 4 ? 'rejected' : 'fulfilled')));
      const failure = settled[4] as PromiseRejectedResult;
      expect(failure.reason).toBeInstanceOf(Error);
      expect(failure.reason).not.toBeInstanceOf(StoreUnavailableError);
      expect(await metaKeys(t)).toEqual(range(10).flatMap((i) => (i === 4 ? [] : [`ok${i}`])));

      const after = t.store.writer.stats;
      expect(after.opsCommitted - before.opsCommitted).toBe(9);
      expect(after.opsFailed - before.opsFailed).toBe(1);
    });

    it('settles promises in submission order, failures included', async () => {
      const order: number[] = [];
      await Promise.all(
        range(20).map((i) =>
          t.store.writer
            .run(async (trx) => {
              if (i % 7 === 3) await failingInsert(trx);
              else await setMeta(trx, `o${i}`, 'x', now());
            })
            .then(
              () => order.push(i),
              () => order.push(i),
            ),
        ),
      );
      expect(order).toEqual(range(20));
    });

    it('resolves only after commit: the write is visible through db at once', async () => {
      const seen = await Promise.all(
        range(20).map((i) =>
          t.store.writer
            .run((trx) => setMeta(trx, `vis${i}`, `v${i}`, now()))
            .then(() => getMeta(t.store.db, `vis${i}`)),
        ),
      );
      expect(seen).toEqual(range(20).map((i) => `v${i}`));
    });

    it('rejects ops beyond maxQueue with StoreUnavailableError and recovers once drained', async () => {
      const writer = new GroupCommit(t.store.db, { maxQueue: 5 });
      const accepted = range(5).map((i) => writer.run((trx) => setMeta(trx, `b${i}`, 'x', now())));
      const overflow = writer.run((trx) => setMeta(trx, 'overflow', 'x', now()));
      await expect(overflow).rejects.toThrow(StoreUnavailableError);
      await expect(overflow).rejects.toThrow('write queue full');
      await Promise.all(accepted);
      await writer.run((trx) => setMeta(trx, 'after', 'x', now()));
      expect(await metaKeys(t)).toEqual(['after', 'b0', 'b1', 'b2', 'b3', 'b4']);
      await writer.close();
    });
  });

  describe('exclusive writes and sharing', () => {
    /** A promise and the function that resolves it. */
    const gate = (): { opened: Promise<void>; open: () => void } => {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      return { opened, open };
    };

    /** Whether another session could take the advisory lock `key` right now (PostgreSQL). */
    const lockFree = async (key: string): Promise<boolean> => {
      const probe = await t.reopen();
      const { rows } = await probe.db.transaction().execute((trx) =>
        sql<{
          got: boolean;
        }>`select pg_try_advisory_xact_lock(hashtext(${key}::text || coalesce(current_schema(), ''))) as got`.execute(
          trx,
        ),
      );
      await probe.close();
      return rows[0]!.got;
    };

    /** Polls (bounded) until a session waits for the advisory lock `key` of this schema (PostgreSQL). */
    const someoneWaitsFor = async (key: string): Promise<void> => {
      for (let i = 0; i < 200; i++) {
        const { rows } = await sql<{ n: number }>`
          select count(*) as n from pg_locks
          where locktype = 'advisory' and not granted and objsubid = 1
            and objid::bigint = (hashtext(${key}::text || coalesce(current_schema(), ''))::bigint & 4294967295)`.execute(
          t.store.db,
        );
        if (Number(rows[0]!.n) > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`no session waits for the advisory lock ${key}`);
    };

    it('shared is true only where other processes may use the database (PostgreSQL)', () => {
      expect(t.store.shared).toBe(backend.name === 'postgres');
    });

    it('commits what fn writes and resolves with its result; a failing fn rolls back and rejects', async () => {
      const value = await t.store.exclusive('contract.probe', async (trx) => {
        await setMeta(trx, 'kept', 'yes', now());
        return 42;
      });
      expect(value).toBe(42);
      await expect(
        t.store.exclusive('contract.probe', async (trx) => {
          await setMeta(trx, 'dropped', 'no', now());
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await metaKeys(t)).toEqual(['kept']);
    });

    it('rejects with StoreUnavailableError once the store is closed', async () => {
      await t.store.close();
      await expect(t.store.exclusive('contract.probe', async () => 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it('two exclusive writes under one name do not interleave', async () => {
      // PostgreSQL: two stores, as two gateway processes would hold them.
      const other = backend.name === 'postgres' ? await t.reopen() : t.store;
      const events: string[] = [];
      const held = gate();
      const release = gate();
      const first = t.store.exclusive('contract.lock', async (trx) => {
        events.push('first start');
        held.open();
        await release.opened;
        await setMeta(trx, 'first', '1', now());
        events.push('first end');
      });
      await held.opened;
      const second = other.exclusive('contract.lock', async (trx) => {
        events.push('second start');
        events.push(`second sees first = ${await getMeta(trx, 'first')}`);
        events.push('second end');
      });
      try {
        if (backend.name === 'postgres') {
          await someoneWaitsFor('contract.lock:');
          expect(events).toEqual(['first start']);
        }
      } finally {
        release.open();
        await Promise.allSettled([first, second]);
      }
      await Promise.all([first, second]);
      expect(events).toEqual(['first start', 'first end', 'second start', 'second sees first = 1', 'second end']);
    });

    it('bounds a check-then-insert across concurrent writers', async () => {
      const stores =
        backend.name === 'postgres' ? [t.store, ...(await Promise.all(range(3).map(() => t.reopen())))] : [t.store];
      const claims = range(12).map((i) =>
        stores[i % stores.length]!.exclusive('contract.slots', async (trx) => {
          const { n } = await trx
            .selectFrom('gateway_meta')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('key', 'like', 'slot%')
            .executeTakeFirstOrThrow();
          if (Number(n) >= 3) return false;
          await setMeta(trx, `slot${i}`, 'x', now());
          return true;
        }),
      );
      expect((await Promise.all(claims)).filter(Boolean)).toHaveLength(3);
      expect(await metaKeys(t)).toHaveLength(3);
    });

    it.runIf(backend.name === 'postgres')(
      "holds the advisory lock '<name>:' || current_schema until commit, and only that one",
      async () => {
        const held = gate();
        const release = gate();
        const holding = t.store.exclusive('gatehouse.tasks.claim', async () => {
          held.open();
          await release.opened;
        });
        await held.opened;
        try {
          expect(await lockFree('gatehouse.tasks.claim:')).toBe(false);
          expect(await lockFree('gatehouse.other:')).toBe(true);
          // Another name is not blocked.
          const other = await t.reopen();
          await expect(other.exclusive('gatehouse.other', async () => 'done')).resolves.toBe('done');
        } finally {
          release.open();
          await holding;
        }
        expect(await lockFree('gatehouse.tasks.claim:')).toBe(true);
      },
    );

    it.runIf(backend.name === 'sqlite')('is one writer op on SQLite (the writer serialises every write)', async () => {
      const before = t.store.writer.stats.opsCommitted;
      await t.store.exclusive('contract.probe', (trx) => setMeta(trx, 'w', 'x', now()));
      expect(t.store.writer.stats.opsCommitted - before).toBe(1);
    });
  });
});

describe('migration lists', () => {
  it('SQLite and PostgreSQL have the same migrations, well formed and in order', () => {
    expect(sqliteMigrations.map((m) => m.name)).toEqual(postgresMigrations.map((m) => m.name));
    expect(() => validateMigrations(sqliteMigrations)).not.toThrow();
    expect(() => validateMigrations(postgresMigrations)).not.toThrow();
  });

  it('validateMigrations rejects malformed names, bad order and empty migrations', () => {
    expect(() => validateMigrations([{ name: 'init', up: ['select 1'] }])).toThrow(/001_snake_case/);
    expect(() =>
      validateMigrations([
        { name: '002_b', up: ['select 1'] },
        { name: '001_a', up: ['select 1'] },
      ]),
    ).toThrow(/strictly increasing/);
    expect(() => validateMigrations([{ name: '001_a', up: [] }])).toThrow(/no statements/);
  });
});

describe('connection problems (no database needed)', () => {
  const closedPort = 'postgres://postgres@127.0.0.1:1/test';

  it('postgres ping rejects with StoreUnavailableError for a closed port', async () => {
    const store = createStore({ driver: 'postgres', dataDir: tmpdir(), url: closedPort });
    try {
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await store.close();
    }
  });

  it('postgres ping gives up within ~2 s on a server that never answers', async () => {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const store = createStore({
      driver: 'postgres',
      dataDir: tmpdir(),
      url: `postgres://postgres@127.0.0.1:${port}/test`,
    });
    try {
      const started = Date.now();
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await store.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('openStore rejects with StoreUnavailableError when postgres is unreachable', async () => {
    await expect(openStore({ driver: 'postgres', dataDir: tmpdir(), url: closedPort })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });

  it('the writer fails a whole batch at once when the database is unreachable', async () => {
    const store = createStore({ driver: 'postgres', dataDir: tmpdir(), url: closedPort });
    try {
      const settled = await Promise.allSettled(range(5).map(() => store.writer.run(async () => 1)));
      for (const s of settled) {
        expect(s.status).toBe('rejected');
        expect((s as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      }
      expect(store.writer.stats).toMatchObject({ failedTransactions: 1, opsFailed: 5, opsCommitted: 0 });
    } finally {
      await store.close();
    }
  });

  it('names storage.url when the postgres url is missing or malformed, without echoing it', async () => {
    const dataDir = tmpdir();
    expect(() => createStore({ driver: 'postgres', dataDir, url: null })).toThrow(/storage\.url is required/);
    expect(() => createStore({ driver: 'postgres', dataDir })).toThrow(/storage\.url/);
    expect(() => createStore({ driver: 'postgres', dataDir, url: 'not a url' })).toThrow(/storage\.url/);
    const wrongScheme = (): unknown => createStore({ driver: 'postgres', dataDir, url: 'mysql://u:hunter2@h/db' });
    expect(wrongScheme).toThrow(/storage\.url/);
    expect(wrongScheme).not.toThrow(/hunter2/);
    await expect(openStore({ driver: 'postgres', dataDir, url: '' })).rejects.toThrow(/storage\.url/);
  });

  it('refuses a postgres schema name that is not a plain identifier', () => {
    expect(() =>
      createStore({ driver: 'postgres', dataDir: tmpdir(), url: closedPort, schema: 'x; drop table y' }),
    ).toThrow(/schema/);
  });

  it('sqlite reports StoreUnavailableError when the data directory cannot be created', () => {
    const file = join(tmpdir(), `gatehouse-not-a-dir-${process.pid}-${Date.now()}`);
    writeFileSync(file, '');
    try {
      expect(() => createStore({ driver: 'sqlite', dataDir: join(file, 'data') })).toThrow(StoreUnavailableError);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
