/**
 * The kill -9 loop (fault tier): the built gateway runs under keyed load and
 * its process group is killed with SIGKILL twenty times in a row, on SQLite
 * and on PostgreSQL. Each time the next gateway is started on the same data
 * dir and port at once (within 100 ms, without waiting for the kernel to reap
 * the dead one, as a supervisor restarts a service), and every start must
 * succeed: the claim on the instance is a lock the dead process's death
 * released (ADR 0035), never a pid comparison.
 *
 * The load is a set of careful clients: each sends keyed messages and retries
 * the same key until it gets its 202, across the crash. Afterwards every
 * acknowledged message has reached a terminal ledger status, none ran twice
 * (one model call at most per message), and a keyed retry of every
 * acknowledged key replays the same event id without a model call.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { killAllNow, spawnGateway, type Child } from '../../bench/processes.js';
import { chatRequests, echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  e2eHome,
  getTurn,
  pollUntil,
  postMessage,
  removeE2EHomes,
  TERMINAL,
  type E2EHome,
  type MessageInput,
} from '../e2e/helpers.js';

const CYCLES = Number(process.env.GATEHOUSE_KILL_CYCLES ?? 20);
const SENDERS = 12;
const SESSIONS = 6;
const PG_URL = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NO_RATE_LIMITS = { security: { rate_limits: { read: 1_000_000, write: 1_000_000 } } };

interface Ack {
  key: string;
  input: MessageInput;
  eventId: string;
}

/** A TCP port free right now on 127.0.0.1, for a gateway that must come back on the same address. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Careful clients: `SENDERS` loops, each sending keyed messages and retrying the same key (network error, 503)
 * until it is acknowledged, so a message whose answer a crash swallowed is sent again with its key. `stop()`
 * ends the loops and resolves with the acknowledged messages.
 */
function keyedLoad(url: string): { stop(): Promise<Ack[]>; acked(): number } {
  const acks: Ack[] = [];
  let stopped = false;
  let n = 0;
  const sender = async (): Promise<void> => {
    while (!stopped) {
      const i = n++;
      const key = `kill9-${i}`;
      const input: MessageInput = {
        platform: 'fault',
        user_id: 'u',
        chat_id: `chat-${i % SESSIONS}`,
        text: `message ${key}`,
      };
      while (!stopped) {
        const res = await postMessage<{ event_id: string }>(url, input, key).catch(() => null);
        if (res?.status === 202) {
          acks.push({ key, input, eventId: res.body.event_id });
          break;
        }
        if (res && res.status !== 503) throw new Error(`${key}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
        await new Promise((resolve) => setTimeout(resolve, 10)); // down, starting or draining: the same key again
      }
    }
  };
  const senders = Array.from({ length: SENDERS }, sender);
  return {
    acked: () => acks.length,
    async stop() {
      stopped = true;
      await Promise.all(senders);
      return acks;
    },
  };
}

/** Spawns the built gateway in a process group of its own; `ready` resolves once it listens. */
function spawnInGroup(home: E2EHome): Child {
  return spawnGateway(['--config', home.configFile], { startTimeoutMs: 15_000, group: true });
}

async function killLoop(home: E2EHome, url: string, openai: FakeOpenAI): Promise<void> {
  const load = keyedLoad(url);
  const dead: Child[] = [];
  /** Per restart: whether the killed gateway was still unreaped when the next one was spawned (no wait for it). */
  const startedBeforeReaping: boolean[] = [];
  let running = spawnInGroup(home);
  let acks: Ack[] = [];
  try {
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      await running.ready.catch((err: Error) => {
        throw new Error(`start ${cycle} after a kill -9 failed: ${err.message}`);
      });
      const before = load.acked();
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 600));
      expect(load.acked(), `cycle ${cycle}: the gateway acknowledged messages`).toBeGreaterThan(before);
      const killed = running;
      killed.killGroup('SIGKILL');
      dead.push(killed);
      // At once, on the same data dir and port: no wait for the reaping of the dead process.
      running = spawnInGroup(home);
      startedBeforeReaping.push(killed.process.exitCode === null && killed.process.signalCode === null);
    }
    await running.ready.catch((err: Error) => {
      throw new Error(`the start after the last kill -9 failed: ${err.message}`);
    });
  } finally {
    acks = await load.stop();
  }
  for (const child of dead) expect(await child.exited).toBe('SIGKILL');
  expect(startedBeforeReaping.every(Boolean)).toBe(true);
  expect(acks.length).toBeGreaterThan(CYCLES * 10);

  const statuses = new Map<string, string>();
  await pollUntil(
    'every acknowledged message at a terminal status',
    async () => {
      for (const ack of acks) {
        if (TERMINAL.has(statuses.get(ack.eventId) ?? '')) continue;
        const turn = await getTurn(url, ack.eventId);
        if (turn.status === 200) statuses.set(ack.eventId, turn.body.status);
      }
      return acks.every((a) => TERMINAL.has(statuses.get(a.eventId) ?? '')) ? true : undefined;
    },
    {
      timeoutMs: 60_000,
      intervalMs: 250,
      describe: () => `${acks.filter((a) => !TERMINAL.has(statuses.get(a.eventId) ?? '')).length} not terminal`,
    },
  );

  // None ran twice: at most one model call per message, exactly one for each completed one.
  const calls = new Map<string, number>();
  for (const body of chatRequests(openai)) calls.set(lastUserText(body), (calls.get(lastUserText(body)) ?? 0) + 1);
  for (const ack of acks) {
    const count = calls.get(ack.input.text) ?? 0;
    expect(count, ack.key).toBeLessThanOrEqual(1);
    if (statuses.get(ack.eventId) === 'completed') expect(count, ack.key).toBe(1);
  }

  // A keyed retry of every acknowledged key replays its event id and calls nothing.
  const before = chatRequests(openai).length;
  for (const ack of acks) {
    const retry = await postMessage<{ event_id: string }>(url, ack.input, ack.key);
    expect(retry.status, ack.key).toBe(202);
    expect(retry.body.event_id, ack.key).toBe(ack.eventId);
  }
  expect(chatRequests(openai).length).toBe(before);
  running.killGroup('SIGKILL');
}

/** The home of a gateway on a fixed port (it comes back on the same address after each kill). */
function fixedPortHome(openai: FakeOpenAI, port: number, extra: Record<string, unknown> = {}): E2EHome {
  return e2eHome(openai, {
    ...NO_RATE_LIMITS,
    gateway: { port, auth: { api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN] } },
    ...extra,
  });
}

/** A fresh PostgreSQL database for one run, dropped afterwards. */
async function freshDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `gatehouse_fault_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

describe('kill -9 loop under keyed load', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    killAllNow();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    removeE2EHomes();
  });

  it(`SQLite: ${CYCLES} kill -9 cycles lose nothing and run nothing twice`, async () => {
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());
    openai.always(echoReply);
    const port = await freePort();
    await killLoop(fixedPortHome(openai, port), `http://127.0.0.1:${port}`, openai);
  });

  it(`PostgreSQL: ${CYCLES} kill -9 cycles lose nothing and run nothing twice`, async () => {
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());
    openai.always(echoReply);
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    const port = await freePort();
    const home = fixedPortHome(openai, port, { storage: { driver: 'postgres', url: db.url } });
    await killLoop(home, `http://127.0.0.1:${port}`, openai);
  });
});
