import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testBackends } from '../../../test/helpers/stores.js';
import { StatementNames } from './named-statements.js';

describe('statement names', () => {
  it('names a data statement on its second use, with a name derived from its text', () => {
    const names = new StatementNames();
    const text = 'select "event_id" from "turns" where "seq" = $1';
    expect(names.nameOf(text)).toBeNull();
    const name = names.nameOf(text);
    expect(name).toMatch(/^gh_[0-9a-f]{24}$/);
    expect(names.nameOf(text)).toBe(name);
    expect(names.nameOf(`${text} limit $2`)).toBeNull();
    expect(names.nameOf(`${text} limit $2`)).not.toBe(name);
  });

  it('leaves DDL, settings and transaction control unnamed however often they run', () => {
    const names = new StatementNames();
    for (const text of ['create table t (a int)', 'set search_path to x', 'begin', 'commit', 'vacuum']) {
      for (let i = 0; i < 3; i++) expect(names.nameOf(text)).toBeNull();
    }
    expect(names.size).toBe(0);
  });

  it('names at most 256 statements; later ones run unnamed', () => {
    const names = new StatementNames();
    for (let i = 0; i < 300; i++) {
      names.nameOf(`select ${i}`);
      names.nameOf(`select ${i}`);
    }
    expect(names.size).toBe(256);
    expect(names.nameOf('select 299')).toBeNull();
  });
});

const postgres = testBackends().find((b) => b.name === 'postgres')!;

describe.skipIf(postgres.skip)('named statements on PostgreSQL', () => {
  let t: TestStore;
  beforeEach(async () => {
    t = await postgres.open();
  });
  afterEach(() => t.cleanup());

  it('prepares a recurring query once per connection and answers it as before', async () => {
    const prepared = await t.store.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 3; i++) {
        const rows = await trx.selectFrom('turns').select('event_id').where('seq', '=', i).execute();
        expect(rows).toEqual([]);
      }
      const found = await sql<{
        statement: string;
      }>`select statement from pg_prepared_statements where name like 'gh\\_%'`.execute(trx);
      return found.rows.map((row) => row.statement);
    });
    expect(prepared.some((text) => text.includes('from "turns"'))).toBe(true);
  });
});
