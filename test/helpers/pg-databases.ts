/**
 * Whole PostgreSQL databases for tests that start gateway processes on one (the cluster tier, the bus and
 * store-outage e2e tests): a fresh database per suite, and one-off clients of it.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server's admin URL (GATEHOUSE_TEST_PG_URL, else the local one). */
export const PG_ADMIN_URL = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Runs `use` with a connected client of `url`, closed afterwards whatever happens. */
export async function withPgClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A database named `<prefix>_<random>` on the test server: created by `create`, dropped (forced) by `drop`. */
export function freshPgDatabase(prefix: string) {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    create: () => withPgClient(PG_ADMIN_URL, (client) => client.query(`create database ${name}`)),
    drop: () => withPgClient(PG_ADMIN_URL, (client) => client.query(`drop database if exists ${name} with (force)`)),
  };
}
