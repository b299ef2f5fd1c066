/**
 * Store outages under load (fault tier), against the built gateway:
 * - SQLite: the data dir lives on a small tmpfs that is filled to the last
 *   byte for 8 s, then freed (needs root to mount; otherwise the case is
 *   skipped and the fault-seam tests of test/routes/store-outage cover it);
 * - PostgreSQL: every backend of the gateway's database is terminated for
 *   6 s, then connections are refused for 8 s (`ALLOW_CONNECTIONS false`).
 * Without a restart, every acknowledged message reaches a terminal ledger
 * status, none runs twice, and health goes unhealthy and comes back.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { killAllNow, spawnGateway } from '../../bench/processes.js';
import {
  e2eHome,
  getTurn,
  pollUntil,
  postMessage,
  removeE2EHomes,
  startGateway,
  stopGateway,
  TERMINAL,
  type E2EHome,
  type MessageInput,
  type Running,
} from '../e2e/helpers.js';
import { mountSmallDisk } from '../helpers/small-disk.js';
import { chatRequests, echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';

const PG_URL = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NO_RATE_LIMITS = { security: { rate_limits: { read: 1_000_000, write: 1_000_000 } } };

interface Ack {
  key: string;
  input: MessageInput;
  eventId: string;
  /** When the request was sent and when its 202 arrived (ms since the epoch). */
  sentAt: number;
  ackAt: number;
}

/**
 * Keyed load from `senders` loops (each pausing `pauseMs` between sends, over `chats` sessions) until
 * `stop()`; collects the acknowledged messages and every status seen. The default pace, about 100
 * messages/s, is one the gateway keeps up with, so a backlog left after the outage is the outage's.
 */
function keyedLoad(url: string, { senders = 8, pauseMs = 70, chats = 20 } = {}) {
  const acks: Ack[] = [];
  const statuses = new Map<number, number>();
  let stopped = false;
  let n = 0;
  const loop = async (): Promise<void> => {
    while (!stopped) {
      const i = n++;
      const key = `outage-${i}`;
      const input: MessageInput = {
        platform: 'fault',
        user_id: 'u',
        chat_id: `chat-${i % chats}`,
        text: `message ${key}`,
      };
      const sentAt = Date.now();
      try {
        const res = await postMessage<{ event_id: string }>(url, input, key);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 202) acks.push({ key, input, eventId: res.body.event_id, sentAt, ackAt: Date.now() });
      } catch {
        /* a request cut off by the outage: the next loop turn sends a new key */
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
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

/** Polls health every 100 ms, recording each change of status code and when it was seen. */
function watchHealth(url: string) {
  const seen: Array<{ status: number; at: number }> = [];
  let stopped = false;
  const note = (status: number) => {
    if (seen.at(-1)?.status !== status) seen.push({ status, at: Date.now() });
  };
  const running = (async () => {
    while (!stopped) {
      try {
        const res = await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(3_000) });
        await res.arrayBuffer();
        note(res.status);
      } catch {
        note(0);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    seen,
    /** Milliseconds from `since` to the first 200 seen at or after it. */
    healthyAfter(since: number): number | null {
      const back = seen.find((s) => s.at >= since && s.status === 200);
      return back ? back.at - since : null;
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** Polls the ledger until every ack in `acks` is terminal; answers the final statuses. */
async function allTerminal(
  url: string,
  acks: Ack[],
  statuses = new Map<string, string>(),
): Promise<Map<string, string>> {
  await pollUntil(
    'every acknowledged message at a terminal status, without a restart',
    async () => {
      for (const ack of acks) {
        if (TERMINAL.has(statuses.get(ack.eventId) ?? '')) continue;
        const turn = await getTurn(url, ack.eventId).catch(() => null);
        if (turn?.status === 200) statuses.set(ack.eventId, turn.body.status);
      }
      return acks.every((a) => TERMINAL.has(statuses.get(a.eventId) ?? '')) ? true : undefined;
    },
    {
      timeoutMs: 60_000,
      intervalMs: 100,
      describe: () => {
        const open = acks.filter((a) => !TERMINAL.has(statuses.get(a.eventId) ?? ''));
        const byStatus: Record<string, number> = {};
        for (const a of open)
          byStatus[statuses.get(a.eventId) ?? '?'] = (byStatus[statuses.get(a.eventId) ?? '?'] ?? 0) + 1;
        return `${open.length} not terminal ${JSON.stringify(byStatus)}, e.g. ${open
          .slice(0, 3)
          .map((a) => a.eventId)
          .join(', ')}`;
      },
    },
  );
  return statuses;
}

/**
 * The fault test's measurements and assertions, from the moment the store came back (`recoveredAt`):
 * every ack acknowledged before then is terminal without a restart (the time it took is the heal time),
 * then, once the load stops, every ack at all; no event ran twice; within a session, a message
 * acknowledged before another was sent ran first; health went 503 and was 200 within 2 s of recovery.
 */
async function healsWithoutRestart(
  label: string,
  running: Running,
  load: ReturnType<typeof keyedLoad>,
  health: ReturnType<typeof watchHealth>,
  openai: FakeOpenAI,
  recoveredAt: number,
): Promise<void> {
  const before = load.acks.filter((a) => a.ackAt < recoveredAt);
  const statuses = await allTerminal(running.url, before).catch((error: unknown) => {
    throw new Error(`${String(error)}\n--- gateway output ---\n${running.gw.tail()}`);
  });
  const healMs = Date.now() - recoveredAt;
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // load on a healed store
  await load.stop();
  expect(running.gw.process.exitCode).toBeNull(); // it lived through it
  const acks = load.acks;
  expect(acks.length).toBeGreaterThan(20);
  await allTerminal(running.url, acks, statuses);

  // None ran twice: at most one model call per acknowledged message.
  const requests = chatRequests(openai).map(lastUserText);
  const calls = new Map<string, number>();
  for (const text of requests) calls.set(text, (calls.get(text) ?? 0) + 1);
  for (const ack of acks) expect(calls.get(ack.input.text) ?? 0, ack.key).toBeLessThanOrEqual(1);

  // Arrival order within a session: A acknowledged before B was sent ⇒ A's model call came first.
  const callIndex = new Map(requests.map((text, i) => [text, i]));
  let orderedPairs = 0;
  for (const a of acks) {
    const ia = callIndex.get(a.input.text);
    if (ia === undefined) continue;
    for (const b of acks) {
      if (b.input.chat_id !== a.input.chat_id || a.ackAt >= b.sentAt) continue;
      const ib = callIndex.get(b.input.text);
      if (ib === undefined) continue;
      orderedPairs++;
      expect(ia, `${a.key} before ${b.key}`).toBeLessThan(ib);
    }
  }

  await new Promise((resolve) => setTimeout(resolve, 300));
  await health.stop();
  const healthBackMs = health.healthyAfter(recoveredAt);
  expect(health.seen.map((s) => s.status)).toContain(503);
  expect(health.seen.at(-1)?.status).toBe(200);
  expect(healthBackMs).not.toBeNull();
  expect(healthBackMs!).toBeLessThanOrEqual(2_000);

  const byStatus: Record<string, number> = {};
  for (const ack of acks) byStatus[statuses.get(ack.eventId)!] = (byStatus[statuses.get(ack.eventId)!] ?? 0) + 1;
  const answers = Object.fromEntries([...load.statuses].sort(([x], [y]) => x - y));
  console.log(
    `[fault ${label}] ${acks.length} acked (${before.length} before recovery), terminal without restart: ` +
      `${JSON.stringify(byStatus)}, run twice: 0, order pairs checked: ${orderedPairs}; ` +
      `heal: the ${before.length} earlier acks terminal ${healMs} ms after recovery, health 200 after ` +
      `${healthBackMs} ms; answers ${JSON.stringify(answers)}`,
  );
}

describe('store outages under load, healed without a restart', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    killAllNow();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    removeE2EHomes();
  });

  it('SQLite: a full disk for 8 s, then freed', async (ctx) => {
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());
    openai.always(echoReply);
    const disk = mountSmallDisk(24 * 1024);
    if (!disk) return ctx.skip(); // not root: the fault seam's tests (test/routes/store-outage) cover it
    cleanups.push(() => disk.unmount());
    const home: E2EHome = e2eHome(openai, { ...NO_RATE_LIMITS, data_dir: join(disk.dir, 'data') });
    mkdirSync(join(disk.dir, 'data'), { recursive: true });
    const running = await startGateway(home);
    const health = watchHealth(running.url);
    const load = keyedLoad(running.url);
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    disk.fill(); // every free byte, held for 8 s, then freed
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    disk.free();
    await healsWithoutRestart('sqlite', running, load, health, openai, Date.now());
  });

  it('SQLite: a start on a full disk is one clear line, and the next start once space is back runs', async (ctx) => {
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());
    openai.always(echoReply);
    const disk = mountSmallDisk(20 * 1024);
    if (!disk) return ctx.skip(); // not root: cannot mount a small disk here
    cleanups.push(() => disk.unmount());
    const dataDir = join(disk.dir, 'data');
    const home: E2EHome = e2eHome(openai, { ...NO_RATE_LIMITS, data_dir: dataDir });
    mkdirSync(dataDir, { recursive: true });
    const first = await startGateway(home);
    const load = keyedLoad(first.url);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    first.gw.killGroup('SIGKILL'); // the WAL stays behind, as after a crash
    await load.stop();
    const acked = load.acks;
    expect(acked.length).toBeGreaterThan(0);

    disk.fill();
    // A gateway that must write to start (a new data dir: its database does not exist yet) refuses in one line.
    // The crashed data dir is not started here: its WAL may still have room for a start's writes, and then
    // that start rightly runs (its later writes meet the full disk as a store outage, the test above).
    const freshDir = join(disk.dir, 'fresh');
    const fresh: E2EHome = e2eHome(openai, { ...NO_RATE_LIMITS, data_dir: freshDir });
    const refused = spawnGateway(['--config', fresh.configFile], { startTimeoutMs: 15_000 });
    expect(await refused.exited).toBe(1);
    const text = refused.stderr.join('\n');
    expect(text).toContain(
      `gatehouse: data dir ${freshDir}: the disk is full (SQLite could not write); free some space`,
    );
    expect(text).not.toMatch(/^\s+at /m);

    disk.free();
    const again = await startGateway(home);
    for (const ack of acked) expect((await getTurn(again.url, ack.eventId)).status).toBe(200); // nothing lost
    expect(await stopGateway(again, 'SIGTERM')).toBe(0);
  });

  it('PostgreSQL: backends terminated for 6 s, then connections refused for 8 s', async () => {
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
    const until = Date.now() + 6_000;
    while (Date.now() < until) {
      await terminate();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await admin.query(`alter database ${name} allow_connections false`);
    await terminate();
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    await admin.query(`alter database ${name} allow_connections true`);
    await healsWithoutRestart('postgres', running, load, health, openai, Date.now());
  });
});
