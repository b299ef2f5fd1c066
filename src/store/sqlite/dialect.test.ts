import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, sql } from 'kysely';
import { afterEach, expect, it } from 'vitest';
import { closeGuardedDialect } from '../guarded-dialect.js';
import { createSqliteDialect } from './dialect.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it('opens the database in WAL mode, syncing NORMAL (the writer fsyncs), checkpointing every 4000 pages', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-'));
  dirs.push(dir);
  const dialect = createSqliteDialect(dir);
  const db = new Kysely<Record<string, never>>({ dialect });
  try {
    const pragma = async (name: string): Promise<unknown> =>
      Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as object)[0];
    expect(await pragma('journal_mode')).toBe('wal');
    expect(await pragma('synchronous')).toBe(1);
    expect(await pragma('wal_autocheckpoint')).toBe(4000);
    expect(await pragma('foreign_keys')).toBe(1);
    expect(await pragma('busy_timeout')).toBe(5000);
    expect(await pragma('journal_size_limit')).toBe(4 * 1024 * 1024);
  } finally {
    await closeGuardedDialect(dialect);
  }
});

it('cuts the WAL back to 4 MB once a checkpoint lets it start over, instead of keeping its peak size', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-'));
  dirs.push(dir);
  const dialect = createSqliteDialect(dir);
  const db = new Kysely<Record<string, never>>({ dialect });
  const walBytes = () => statSync(join(dir, 'gatehouse.db-wal')).size;
  try {
    await sql`create table filler (body blob)`.execute(db);
    // About 24 MB of WAL in one transaction: past the checkpoint interval, so the WAL peaks well above the limit.
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < 6000; i++) await sql`insert into filler values (randomblob(4000))`.execute(trx);
    });
    expect(walBytes()).toBeGreaterThan(16 * 1024 * 1024);
    await sql`pragma wal_checkpoint(passive)`.execute(db);
    await sql`insert into filler values (randomblob(10))`.execute(db); // the WAL starts over here
    expect(walBytes()).toBeLessThanOrEqual(4 * 1024 * 1024);
  } finally {
    await closeGuardedDialect(dialect);
  }
});
