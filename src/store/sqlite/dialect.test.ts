import { mkdtempSync, rmSync } from 'node:fs';
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
  } finally {
    await closeGuardedDialect(dialect);
  }
});
