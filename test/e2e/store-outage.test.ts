/**
 * PostgreSQL connections dropped under the built server (issue: a `pg`
 * Client's `error` event without a listener crashed the process). The
 * gateway gets a database of its own, and every backend of that database is
 * terminated — `pg_terminate_backend` on `pg_stat_activity` of
 * `current_database()` — while it is idle and while it works. It must live,
 * report health truthfully, and end every acknowledged turn.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { chatRequests, echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { freshPgDatabase, withPgClient } from '../helpers/pg-databases.js';
import { testBackends } from '../helpers/stores.js';
import {
  call,
  e2eHome,
  getTurn,
  pollUntil,
  postMessage,
  removeE2EHomes,
  startGateway,
  stopGateway,
  TERMINAL,
  type Running,
} from './helpers.js';

const postgres = testBackends().find((b) => b.name === 'postgres')!;
const database = freshPgDatabase('gh_e2e');
const databaseUrl = database.url;

/** Terminates every other backend of the gateway's database; answers how many. */
function terminateBackends(): Promise<number> {
  return withPgClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ ok: boolean }>(
      'select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    );
    return rows.length;
  });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const alive = (running: Running) => running.gw.process.exitCode === null && running.gw.process.signalCode === null;
const health = async (running: Running) => (await call(running.url, 'GET', '/api/v1/health')).status;

describe.skipIf(postgres.skip)('postgres backends terminated under the built server', () => {
  let fake: FakeOpenAI | undefined;

  beforeAll(async () => {
    await database.create();
  });
  afterAll(async () => {
    await database.drop();
  });
  afterEach(async () => {
    killAllNow();
    await fake?.close();
    removeE2EHomes();
  });

  it('lives through terminations while idle and while working, and ends every acknowledged turn', async () => {
    fake = await startFakeOpenAI();
    fake.always({ delayMs: 30, then: echoReply });
    const home = e2eHome(fake, {
      storage: { driver: 'postgres', url: databaseUrl },
      security: { rate_limits: { read: 100_000, write: 100_000 } },
    });
    const running = await startGateway(home);
    const input = (chat: string, text: string) => ({ platform: 'e2e', user_id: 'u', chat_id: chat, text });

    // Idle: the pool's connections go away between requests.
    expect((await postMessage(running.url, { ...input('c0', 'warm'), wait: true })).status).toBe(200);
    expect(await terminateBackends()).toBeGreaterThan(0);
    await pause(300);
    expect(alive(running)).toBe(true);
    await pollUntil(
      'health 200 after the idle termination',
      async () => ((await health(running)) === 200 ? true : undefined),
      {
        timeoutMs: 2_000,
        intervalMs: 50,
      },
    );
    expect((await postMessage(running.url, { ...input('c0', 'after-idle'), wait: true })).status).toBe(200);

    // Working: terminations while turns run and messages arrive; keyed retries ride out the 503s.
    const accepted = new Map<string, string>();
    const send = async (chat: string, i: number): Promise<void> => {
      const text = `${chat}-m${i}`;
      for (let attempt = 0; attempt < 200; attempt++) {
        const res = await postMessage<{ event_id: string }>(running.url, input(chat, text), `key-${text}`).catch(
          () => null,
        );
        if (res?.status === 202) {
          accepted.set(text, res.body.event_id);
          return;
        }
        if (res) expect(res.status).toBe(503);
        await pause(25);
      }
      throw new Error(`${text} was never accepted`);
    };
    const load = Promise.all(
      ['w0', 'w1', 'w2', 'w3'].map(async (chat) => {
        for (let i = 0; i < 10; i++) await send(chat, i);
      }),
    );
    for (let k = 0; k < 3; k++) {
      await pause(150);
      await terminateBackends();
    }
    await load;
    expect(alive(running)).toBe(true);

    const ended = new Map<string, string>();
    await pollUntil(
      'every acknowledged turn terminal',
      async () => {
        for (const [text, eventId] of accepted) {
          if (ended.has(text)) continue;
          const turn = await getTurn(running.url, eventId);
          if (turn.status === 200 && TERMINAL.has(turn.body.status)) ended.set(text, turn.body.status);
        }
        return ended.size === accepted.size ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, describe: () => `${ended.size}/${accepted.size} ended` },
    );
    const calls = new Map<string, number>();
    for (const body of chatRequests(fake)) calls.set(lastUserText(body), (calls.get(lastUserText(body)) ?? 0) + 1);
    for (const [text, status] of ended) {
      expect(['completed', 'interrupted']).toContain(status);
      if (status === 'completed') expect(calls.get(text), text).toBe(1);
      else expect(calls.get(text) ?? 0, text).toBeLessThanOrEqual(1);
    }
    expect(await health(running)).toBe(200);
    expect(alive(running)).toBe(true);
    expect(await stopGateway(running, 'SIGTERM')).toBe(0);
  });
});
