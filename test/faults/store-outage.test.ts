/**
 * Store outages under load (fault tier), against the built gateway:
 * - SQLite: the data dir lives on a small tmpfs that is filled to the last
 *   byte for a few seconds, then freed (needs root to mount; otherwise the
 *   case is skipped and the in-process fault-seam tests cover it);
 * - PostgreSQL: every backend of the gateway's database is terminated for a
 *   few seconds, then connections are refused (`ALLOW_CONNECTIONS false`).
 * Without a restart, every acknowledged message reaches a terminal ledger
 * status, none runs twice, and health goes unhealthy and comes back.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import {
  call,
  e2eHome,
  getTurn,
  pollUntil,
  postMessage,
  removeE2EHomes,
  startGateway,
  TERMINAL,
  type E2EHome,
  type MessageInput,
  type Running,
} from '../e2e/helpers.js';
import { chatRequests, echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';

const PG_URL = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NO_RATE_LIMITS = { security: { rate_limits: { read: 1_000_000, write: 1_000_000 } } };
const IS_ROOT = process.getuid?.() === 0;

interface Ack {
  key: string;
  input: MessageInput;
  eventId: string;
}

/** Keyed load from `senders` loops until `stop()`; collects the acknowledged messages and every status seen. */
function keyedLoad(url: string, senders = 8) {
  const acks: Ack[] = [];
  const statuses = new Map<number, number>();
  let stopped = false;
  let n = 0;
  const loop = async (): Promise<void> => {
    while (!stopped) {
      const i = n++;
      const key = `outage-${i}`;
      const input: MessageInput = { platform: 'fault', user_id: 'u', chat_id: `chat-${i % 5}`, text: `message ${key}` };
      try {
        const res = await postMessage<{ event_id: string }>(url, input, key);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 202) acks.push({ key, input, eventId: res.body.event_id });
      } catch {
        /* a request cut off by the outage: retried by the next loop turn with a new key */
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const running = Promise.all(Array.from({ length: senders }, loop));
  return {
    acks,
    statuses,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** Polls health every 100 ms, recording each status code in order (deduplicated runs). */
function watchHealth(url: string) {
  const seen: number[] = [];
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      try {
        const res = await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(3_000) });
        if (seen.at(-1) !== res.status) seen.push(res.status);
      } catch {
        if (seen.at(-1) !== 0) seen.push(0);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    seen,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** The common ending: every ack terminal without a restart, none run twice, health back to 200. */
async function settles(running: Running, acks: Ack[], openai: FakeOpenAI): Promise<void> {
  expect(acks.length).toBeGreaterThan(20);
  const statuses = new Map<string, string>();
  await pollUntil(
    'every acknowledged message at a terminal status, without a restart',
    async () => {
      for (const ack of acks) {
        if (TERMINAL.has(statuses.get(ack.eventId) ?? '')) continue;
        const turn = await getTurn(running.url, ack.eventId).catch(() => null);
        if (turn?.status === 200) statuses.set(ack.eventId, turn.body.status);
      }
      return acks.every((a) => TERMINAL.has(statuses.get(a.eventId) ?? '')) ? true : undefined;
    },
    {
      timeoutMs: 60_000,
      intervalMs: 250,
      describe: () => `${acks.filter((a) => !TERMINAL.has(statuses.get(a.eventId) ?? '')).length} not terminal`,
    },
  );
  const calls = new Map<string, number>();
  for (const body of chatRequests(openai)) calls.set(lastUserText(body), (calls.get(lastUserText(body)) ?? 0) + 1);
  for (const ack of acks) expect(calls.get(ack.input.text) ?? 0, ack.key).toBeLessThanOrEqual(1);
  const health = await call(running.url, 'GET', '/api/v1/health');
  expect(health.status).toBe(200);
}

describe('store outages under load, healed without a restart', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    killAllNow();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    removeE2EHomes();
  });

  it.skipIf(!IS_ROOT)('SQLite: a full disk for 4 s', async () => {
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());
    openai.always(echoReply);
    const mount = mkdtempSync(join(tmpdir(), 'gatehouse-tmpfs-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mount]);
    cleanups.push(() => {
      execFileSync('umount', ['-l', mount]);
      rmSync(mount, { recursive: true, force: true });
    });
    const home: E2EHome = e2eHome(openai, { ...NO_RATE_LIMITS, data_dir: join(mount, 'data') });
    mkdirSync(join(mount, 'data'), { recursive: true });
    const running = await startGateway(home);
    const health = watchHealth(running.url);
    const load = keyedLoad(running.url);
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    // Fill every free byte, hold it, then free it.
    const filler = join(mount, 'filler');
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { stdio: 'ignore' });
    } catch {
      /* dd stops with ENOSPC: the disk is full */
    }
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    rmSync(filler, { force: true });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await load.stop();
    await settles(running, load.acks, openai);
    await health.stop();
    expect(health.seen).toContain(503);
    expect(health.seen.at(-1)).toBe(200);
  });

  it('PostgreSQL: backends terminated for 3 s, then connections refused for 4 s', async () => {
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());
    openai.always(echoReply);
    const name = `gatehouse_outage_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    admin.on('error', () => undefined);
    cleanups.push(async () => {
      await admin.query(`alter database ${name} allow_connections true`).catch(() => undefined);
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    });
    await admin.query(`create database ${name}`);
    const url = new URL(PG_URL);
    url.pathname = `/${name}`;
    const home = e2eHome(openai, { ...NO_RATE_LIMITS, storage: { driver: 'postgres', url: url.toString() } });
    const running = await startGateway(home);
    const health = watchHealth(running.url);
    const load = keyedLoad(running.url);
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    const terminate = () =>
      admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [name],
      );
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      await terminate();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await admin.query(`alter database ${name} allow_connections false`);
    await terminate();
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    await admin.query(`alter database ${name} allow_connections true`);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await load.stop();
    expect(running.gw.process.exitCode).toBeNull(); // it lived through it
    await settles(running, load.acks, openai);
    await health.stop();
    expect(health.seen).toContain(503);
    expect(health.seen.at(-1)).toBe(200);
  });
});
