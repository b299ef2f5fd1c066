/**
 * The kill -9 loop (fault tier): the built gateway under keyed load is killed
 * with SIGKILL ten times in a row, on SQLite and on PostgreSQL. Afterwards
 * every acknowledged message has reached a terminal ledger status, none ran
 * twice (one model call at most per message), and a keyed retry of every
 * acknowledged key replays the same event id without a model call.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { chatRequests, echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import {
  e2eHome,
  getTurn,
  pollUntil,
  postMessage,
  removeE2EHomes,
  startGateway,
  TERMINAL,
  type E2EHome,
  type MessageInput,
} from '../e2e/helpers.js';

const CYCLES = Number(process.env.GATEHOUSE_KILL_CYCLES ?? 10);
const LOAD_MS = 1_200;
const SENDERS = 12;
const SESSIONS = 6;
const PG_URL = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NO_RATE_LIMITS = { security: { rate_limits: { read: 1_000_000, write: 1_000_000 } } };

interface Ack {
  key: string;
  input: MessageInput;
  eventId: string;
}

/** Sends keyed messages from `SENDERS` loops for `LOAD_MS`; returns the acknowledged ones (202). */
async function load(url: string, cycle: number): Promise<Ack[]> {
  const acks: Ack[] = [];
  const until = Date.now() + LOAD_MS;
  let n = 0;
  const sender = async (): Promise<void> => {
    while (Date.now() < until) {
      const i = n++;
      const key = `kill9-${cycle}-${i}`;
      const input: MessageInput = {
        platform: 'fault',
        user_id: 'u',
        chat_id: `chat-${i % SESSIONS}`,
        text: `message ${key}`,
      };
      try {
        const res = await postMessage<{ event_id: string }>(url, input, key);
        if (res.status === 202) acks.push({ key, input, eventId: res.body.event_id });
      } catch {
        return; // the process is gone
      }
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
  return acks;
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

async function killLoop(home: E2EHome, openai: FakeOpenAI): Promise<void> {
  const acks: Ack[] = [];
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    const running = await startGateway(home);
    const sent = load(running.url, cycle);
    await new Promise((resolve) => setTimeout(resolve, LOAD_MS / 2 + Math.random() * (LOAD_MS / 2)));
    running.gw.process.kill('SIGKILL');
    await running.gw.exited;
    acks.push(...(await sent));
  }
  expect(acks.length).toBeGreaterThan(CYCLES * 10);

  const final = await startGateway(home);
  const statuses = new Map<string, string>();
  await pollUntil(
    'every acknowledged message at a terminal status',
    async () => {
      for (const ack of acks) {
        if (TERMINAL.has(statuses.get(ack.eventId) ?? '')) continue;
        const turn = await getTurn(final.url, ack.eventId);
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
    const retry = await postMessage<{ event_id: string }>(final.url, ack.input, ack.key);
    expect(retry.status, ack.key).toBe(202);
    expect(retry.body.event_id, ack.key).toBe(ack.eventId);
  }
  expect(chatRequests(openai).length).toBe(before);
  final.gw.process.kill('SIGKILL');
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
    await killLoop(e2eHome(openai, NO_RATE_LIMITS), openai);
  });

  it(`PostgreSQL: ${CYCLES} kill -9 cycles lose nothing and run nothing twice`, async () => {
    const openai = await startFakeOpenAI();
    cleanups.push(() => openai.close());
    openai.always(echoReply);
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    await killLoop(e2eHome(openai, { ...NO_RATE_LIMITS, storage: { driver: 'postgres', url: db.url } }), openai);
  });
});
