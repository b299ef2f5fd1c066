/**
 * Crash and restart, end to end (DECISIONS §5, §6, §12; ADR 0005, ADR 0029):
 * the built process over real sockets, a fake OpenAI server in this process,
 * and a store that outlives each gateway process: SQLite in a temp data dir,
 * then a fresh PostgreSQL database per test.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { deferred } from '../helpers/deferred.js';
import { freshPgDatabase } from '../helpers/pg-databases.js';
import { testBackends } from '../helpers/stores.js';
import { chatRequests, echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import {
  API_TOKEN,
  call,
  e2eHome as sqliteHome,
  getTurn,
  killNow,
  type MessageInput,
  pollUntil,
  postMessage,
  readSse,
  removeE2EHomes,
  type Running,
  startGateway,
  stopGateway,
  TERMINAL,
  type TurnView,
} from './helpers.js';

/** Ledger polling asks often: lift the per-token rate limits so polling never meets a 429. */
const NO_RATE_LIMITS = { security: { rate_limits: { read: 100_000, write: 100_000 } } };

interface Waited {
  status: string;
  event_id: string;
  session_key: string;
  response: string | null;
  message: { content: string | null; status: string; event_id: string };
}

interface Ack {
  status: string;
  event_id: string;
  session_key: string;
}

interface ErrorEnvelope {
  error: { code: string; message: string; request_id: string };
}

/**
 * POSTs a message over node:http and kills the gateway with SIGKILL in the
 * same tick its answer's first bytes arrive — before anything else runs —
 * then resolves with that answer (read from what had arrived).
 */
function postThenKill(
  running: Running,
  input: MessageInput,
  key: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const target = new URL(`${running.url}/api/v1/message`);
  const payload = Buffer.from(JSON.stringify(input));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: {
          'x-api-token': API_TOKEN,
          'idempotency-key': key,
          'content-type': 'application/json',
          'content-length': payload.length,
        },
      },
      (res) => {
        running.gw.process.kill('SIGKILL');
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        const done = (): void => {
          const text = Buffer.concat(parts).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} });
        };
        res.on('end', done);
        res.on('error', done); // the connection breaks once the process is gone; what arrived is enough
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const message = (chat: string, text: string, wait: boolean): MessageInput => ({
  platform: 'e2e',
  user_id: `user-${chat}`,
  chat_id: chat,
  text,
  wait,
});

const postgres = testBackends().find((backend) => backend.name === 'postgres')!;

for (const store of ['sqlite', 'postgres'] as const) {
  describe.skipIf(store === 'postgres' && postgres.skip)(`crash and restart of the built server (${store})`, () => {
    const fakes: FakeOpenAI[] = [];
    const databases: Array<ReturnType<typeof freshPgDatabase>> = [];
    /** A gateway home on this store (PostgreSQL: a database of its own). */
    const e2eHome = async (openai: FakeOpenAI, extra: Record<string, unknown> = {}) => {
      if (store === 'sqlite') return sqliteHome(openai, extra);
      const database = freshPgDatabase('gh_crash');
      await database.create();
      databases.push(database);
      return sqliteHome(openai, { ...extra, storage: { driver: 'postgres', url: database.url } });
    };
    const fake = async (): Promise<FakeOpenAI> => {
      const server = await startFakeOpenAI();
      fakes.push(server);
      return server;
    };

    afterEach(async () => {
      killAllNow();
      const closing = fakes.splice(0);
      await Promise.all(closing.map((f) => f.close()));
      removeE2EHomes();
      await Promise.all(databases.splice(0).map((database) => database.drop()));
      for (const f of closing) f.verify();
    });

    it('keeps idempotency across a graceful restart: same event ids, same bodies, no new model call', async () => {
      const openai = await fake();
      openai.always(echoReply);
      const home = await e2eHome(openai);
      const first = await startGateway(home);

      const chats = ['alpha', 'beta', 'gamma'];
      const inputs = Array.from({ length: 10 }, (_, i) => ({
        key: `restart-key-${i}`,
        input: message(chats[i % chats.length]!, `question number ${i}`, true),
      }));
      const originals = await Promise.all(inputs.map(({ key, input }) => postMessage<Waited>(first.url, input, key)));
      for (const [i, original] of originals.entries()) {
        expect(original.status, JSON.stringify(original.body)).toBe(200);
        expect(original.body.status).toBe('completed');
        expect(original.body.response).toBe(`fake: question number ${i}`);
        expect(original.body.event_id).toMatch(/^evt_/);
        expect(original.body.message.event_id).toBe(original.body.event_id);
      }
      expect(new Set(originals.map((o) => o.body.event_id)).size).toBe(10);
      const callsBefore = chatRequests(openai).length;
      expect(callsBefore).toBe(10);

      expect(await stopGateway(first, 'SIGTERM')).toBe(0);
      const second = await startGateway(home);
      expect(second.url).not.toBe(first.url); // a new port: nothing is answered from the old process

      const retries = await Promise.all(inputs.map(({ key, input }) => postMessage<Waited>(second.url, input, key)));
      for (const [i, retry] of retries.entries()) {
        expect(retry.status).toBe(200);
        // Status, event id, session key, response and the whole Message, byte for byte as JSON.
        expect(retry.body).toEqual(originals[i]!.body);
      }
      expect(chatRequests(openai).length).toBe(callsBefore);

      // The same key with changed content: the spec's bare 409 `{"error": "..."}`.
      const conflict = await postMessage(second.url, { ...inputs[0]!.input, text: 'something else' }, inputs[0]!.key);
      expect(conflict.status).toBe(409);
      expect(Object.keys(conflict.body)).toEqual(['error']);
      expect(typeof conflict.body.error).toBe('string');
      expect((conflict.body.error as string).length).toBeGreaterThan(0);
      expect(chatRequests(openai).length).toBe(callsBefore);

      expect(await stopGateway(second, 'SIGTERM')).toBe(0);
    });

    it('after kill -9: running turns end interrupted (never re-run), accepted ones run once, none lost', async () => {
      const openai = await fake();
      openai.always({ hang: true }); // turns that reach the model stay running
      const home = await e2eHome(openai, { agent: { max_concurrent_turns: 2 }, ...NO_RATE_LIMITS });
      const first = await startGateway(home);

      // Five sessions, plus two more messages to the first one: seven turns, at most two at once.
      const plan = [
        ['s1', 'kill text s1 a'],
        ['s2', 'kill text s2'],
        ['s3', 'kill text s3'],
        ['s4', 'kill text s4'],
        ['s5', 'kill text s5'],
        ['s1', 'kill text s1 b'],
        ['s1', 'kill text s1 c'],
      ] as const;
      const submitted: Array<{ key: string; input: MessageInput; eventId: string }> = [];
      for (const [i, [chat, text]] of plan.entries()) {
        const key = `kill-key-${i}`;
        const input = message(chat, text, false);
        const ack = await postMessage<Ack>(first.url, input, key);
        expect(ack.status, JSON.stringify(ack.body)).toBe(202);
        expect(ack.body).toEqual({
          status: 'accepted',
          event_id: ack.body.event_id,
          session_key: `gateway:e2e:${chat}`,
        });
        submitted.push({ key, input, eventId: ack.body.event_id });
      }
      const textOf = new Map(submitted.map((s) => [s.eventId, s.input.text]));

      // Settle: both slots busy (the model was called for each running turn), everything else queued.
      let snapshot: TurnView[] = [];
      await pollUntil(
        'two running turns with their model calls in flight, the rest accepted',
        async () => {
          snapshot = await Promise.all(
            submitted.map(async (s) => {
              const res = await getTurn(first.url, s.eventId);
              expect(res.status).toBe(200);
              return res.body;
            }),
          );
          const running = snapshot.filter((t) => t.status === 'running').length;
          const accepted = snapshot.filter((t) => t.status === 'accepted').length;
          const settled = running === 2 && accepted === submitted.length - 2 && chatRequests(openai).length === running;
          return settled ? true : undefined;
        },
        { timeoutMs: 10_000, describe: () => JSON.stringify(snapshot.map((t) => t.status)) },
      );
      const runningIds = snapshot.filter((t) => t.status === 'running').map((t) => t.event_id);
      const acceptedIds = snapshot.filter((t) => t.status === 'accepted').map((t) => t.event_id);
      expect(runningIds.length).toBeGreaterThanOrEqual(1);
      expect(acceptedIds.length).toBeGreaterThanOrEqual(1);
      // The model calls in flight are exactly those of the running turns.
      expect(chatRequests(openai).map(lastUserText).sort()).toEqual(runningIds.map((id) => textOf.get(id)).sort());

      const killed = killNow(first);

      openai.always({ content: 'after restart' });
      const requestsBeforeRestart = openai.requests.length;
      const second = await startGateway(home); // at once: the dead process's lock went with it
      expect(await killed).toBe('SIGKILL');

      const final = new Map<string, TurnView>();
      await pollUntil(
        'every acknowledged turn to reach a terminal status',
        async () => {
          for (const s of submitted) {
            if (final.has(s.eventId)) continue;
            const res = await getTurn(second.url, s.eventId);
            expect(res.status, `ledger record of ${s.eventId}`).toBe(200); // none lost
            if (TERMINAL.has(res.body.status)) final.set(s.eventId, res.body);
          }
          return final.size === submitted.length ? true : undefined;
        },
        {
          timeoutMs: 15_000,
          describe: () => `${final.size}/${submitted.length} terminal: ${JSON.stringify([...final.values()])}`,
        },
      );

      for (const id of runningIds) {
        const turn = final.get(id)!;
        expect(turn.status, id).toBe('interrupted');
        expect(turn.termination_reason).toBe('process_restart');
      }
      for (const id of acceptedIds) {
        const turn = final.get(id)!;
        expect(turn.status, id).toBe('completed');
        expect(turn.response).toBe('after restart');
      }

      // The session's queued turns ran after restart in arrival order, one at a time.
      const [b, c] = submitted.slice(5).map((s) => final.get(s.eventId)!);
      expect(b!.finished_at! <= c!.started_at!, `${b!.finished_at} <= ${c!.started_at}`).toBe(true);

      // A keyed retry with wait of an interrupted turn answers its state (200), it does not run it again.
      const interrupted = submitted.find((s) => s.eventId === runningIds[0])!;
      const retry = await postMessage<Waited>(second.url, { ...interrupted.input, wait: true }, interrupted.key);
      expect(retry.status, JSON.stringify(retry.body)).toBe(200);
      expect(retry.body.status).toBe('interrupted');
      expect(retry.body.event_id).toBe(interrupted.eventId);

      // A graceful stop ends every run, so any stray (double) execution has called the model by now. Model
      // calls since the restart: exactly one per turn that had not started, none for the interrupted ones.
      expect(await stopGateway(second, 'SIGTERM')).toBe(0);
      const afterRestart = chatRequests(openai, requestsBeforeRestart).map(lastUserText).sort();
      expect(afterRestart).toEqual(acceptedIds.map((id) => textOf.get(id)).sort());
      for (const id of runningIds) expect(afterRestart).not.toContain(textOf.get(id));
      expect(chatRequests(openai, requestsBeforeRestart).length).toBe(acceptedIds.length);
    }, 40_000);

    it('an acknowledgement survives a SIGKILL in the very tick it arrives: the event is there after restart, and runs', async () => {
      const openai = await fake();
      openai.always(echoReply);
      const home = await e2eHome(openai, NO_RATE_LIMITS);
      const acked: Array<{ key: string; input: MessageInput; eventId: string }> = [];
      const killed: Array<Promise<number | string>> = [];
      for (let round = 0; round < 3; round++) {
        const running = await startGateway(home);
        const key = `ack-kill-${round}`;
        const input = message(`ack-kill-${round}`, `acknowledged then killed ${round}`, false);
        const ack = await postThenKill(running, input, key);
        expect(ack.status, JSON.stringify(ack.body)).toBe(202);
        killed.push(running.gw.exited); // the next start does not wait for its reaping
        acked.push({ key, input, eventId: ack.body.event_id as string });
      }

      const after = await startGateway(home);
      for (const exit of killed) expect(await exit).toBe('SIGKILL');
      const final = new Map<string, TurnView>();
      await pollUntil(
        'every acknowledged event in the ledger and terminal',
        async () => {
          for (const a of acked) {
            const turn = await getTurn(after.url, a.eventId);
            expect(turn.status, `ledger record of ${a.eventId}`).toBe(200); // never lost
            if (TERMINAL.has(turn.body.status)) final.set(a.eventId, turn.body);
          }
          return final.size === acked.length ? true : undefined;
        },
        { timeoutMs: 15_000 },
      );
      for (const a of acked) {
        // Accepted but (at most) claimed when the process died: run after the restart, or ended, never twice.
        expect(['completed', 'interrupted']).toContain(final.get(a.eventId)!.status);
        const retry = await postMessage<Ack>(after.url, a.input, a.key);
        expect(retry.status).toBe(202);
        expect(retry.body.event_id).toBe(a.eventId);
      }
      const calls = new Map<string, number>();
      for (const body of chatRequests(openai)) calls.set(lastUserText(body), (calls.get(lastUserText(body)) ?? 0) + 1);
      for (const a of acked) expect(calls.get(a.input.text) ?? 0, a.key).toBeLessThanOrEqual(1);
      expect(await stopGateway(after, 'SIGTERM')).toBe(0);
    }, 40_000);

    it('a waited answer survives a SIGKILL in the very tick it arrives: after restart the turn has that outcome', async () => {
      const openai = await fake();
      openai.always(echoReply);
      const home = await e2eHome(openai, NO_RATE_LIMITS);
      const running = await startGateway(home);
      const input = message('waited-kill', 'answered then killed', true);
      const answer = await postThenKill(running, input, 'waited-kill-1');
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.status).toBe('completed');

      const after = await startGateway(home);
      expect(await running.gw.exited).toBe('SIGKILL');
      const turn = await getTurn(after.url, answer.body.event_id as string);
      expect(turn.status).toBe(200);
      expect(turn.body.status).toBe('completed');
      expect(turn.body.response).toBe(answer.body.response);
      // Its reply is in the history too, stored in the same commit as the outcome.
      const history = await call<{ items: Array<{ role: string; content: string }> }>(
        after.url,
        'GET',
        `/api/v1/sessions/${encodeURIComponent('gateway:e2e:waited-kill')}/history`,
        { token: API_TOKEN },
      );
      expect(history.body.items.map((m) => `${m.role}:${m.content}`)).toEqual([
        'user:answered then killed',
        `assistant:${answer.body.response as string}`,
      ]);
      // The same key answers the same outcome without a model call.
      const before = chatRequests(openai).length;
      const retry = await postMessage<Waited>(after.url, input, 'waited-kill-1');
      expect(retry.status).toBe(200);
      expect(retry.body.response).toBe(answer.body.response);
      expect(chatRequests(openai).length).toBe(before);
      expect(await stopGateway(after, 'SIGTERM')).toBe(0);
    }, 40_000);

    it('drains on SIGTERM: 503 for new requests, unhealthy, the running turn completes, exit 0', async () => {
      const openai = await fake();
      // The model answers only when the test says so: the drain must wait for it.
      const answer = deferred();
      openai.enqueue({ after: answer.promise, then: { content: 'slow but finished' } });
      const home = await e2eHome(openai, NO_RATE_LIMITS);
      const first = await startGateway(home);

      const ack = await postMessage<Ack>(first.url, message('drain', 'take your time', false), 'drain-key-1');
      expect(ack.status).toBe(202);
      const eventId = ack.body.event_id;
      await pollUntil('the turn to be running with its model call in flight', async () => {
        const turn = await getTurn(first.url, eventId);
        return turn.body.status === 'running' && chatRequests(openai).length === 1 ? true : undefined;
      });

      first.gw.process.kill('SIGTERM');
      const health = await pollUntil('health to report unhealthy', async () => {
        const res = await call<{ status: string; server_running: boolean }>(first.url, 'GET', '/api/v1/health');
        return res.status === 503 ? res : undefined;
      });
      expect(health.body.status).toBe('unhealthy');
      expect(health.body.server_running).toBe(false);

      const refused = await postMessage<ErrorEnvelope>(first.url, message('drain', 'one more', false), 'drain-key-2');
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('UNAVAILABLE');
      const read = await getTurn(first.url, eventId);
      expect(read.status).toBe(503);

      // Draining, the process waits for the model's answer: still running while it is held back.
      expect([first.gw.process.exitCode, first.gw.process.signalCode]).toEqual([null, null]);
      answer.resolve();
      expect(await stopGateway(first, 'SIGTERM', 15_000)).toBe(0);
      expect(chatRequests(openai).length).toBe(1); // the refused message never reached the model

      openai.always({ content: 'quick now' });
      const second = await startGateway(home);
      const turn = await getTurn(second.url, eventId);
      expect(turn.status).toBe(200);
      expect(turn.body.status).toBe('completed');
      expect(turn.body.response).toBe('slow but finished');
      expect(turn.body.termination_reason).not.toBe('shutdown'); // finished, not cut short by the drain
      // The refused message left no trace: its key was never claimed, so it is accepted now.
      const late = await postMessage<Waited>(
        second.url,
        { ...message('drain', 'one more', true), timeout_seconds: 10 },
        'drain-key-2',
      );
      expect(late.status).toBe(200);
      expect(late.body.status).toBe('completed');
      expect(late.body.response).toBe('quick now');
      expect(chatRequests(openai).length).toBe(2);
      expect(await stopGateway(second, 'SIGTERM', 15_000)).toBe(0);
    }, 40_000);

    it("replays a completed turn's stored events after a restart, ending with done", async () => {
      const openai = await fake();
      openai.always({ content: 'one two three four five six', chunks: 4 });
      const home = await e2eHome(openai);
      const first = await startGateway(home);

      const waited = await postMessage<Waited>(first.url, message('events', 'tell me', true), 'events-key-1');
      expect(waited.status).toBe(200);
      expect(waited.body.status).toBe('completed');
      const eventId = waited.body.event_id;
      const path = `/api/v1/turns/${eventId}/events`;
      const before = await readSse(first.url, path, { token: API_TOKEN });
      expect(await stopGateway(first, 'SIGTERM')).toBe(0);

      const second = await startGateway(home);
      const after = await readSse(second.url, path, { token: API_TOKEN });
      expect(after.status).toBe(200);
      expect(after.contentType).toMatch(/^text\/event-stream/);
      // The same stored events as before the restart.
      expect(after.events).toEqual(before.events);

      const events = after.events;
      expect(events.length).toBeGreaterThanOrEqual(3);
      const ids = events.map((e) => Number(e.id));
      for (const [i, id] of ids.entries()) {
        expect(Number.isInteger(id), `event ${i} has a numeric id`).toBe(true);
        if (i > 0) expect(id).toBeGreaterThan(ids[i - 1]!);
      }
      const last = events[events.length - 1]!;
      expect(last.event).toBe('done');
      const done = last.data as { status: string; content: string; event_id: string };
      expect(done.status).toBe('completed');
      expect(done.content).toBe('one two three four five six');
      expect(done.event_id).toBe(eventId);
      expect(events.filter((e) => e.event === 'done')).toHaveLength(1);
      const text = events
        .filter((e) => e.event === 'delta')
        .map((e) => (e.data as { content: string }).content)
        .join('');
      expect(text).toBe('one two three four five six');

      // Last-Event-ID resumes after the given event: only what follows it.
      const resumed = await readSse(second.url, path, {
        token: API_TOKEN,
        headers: { 'last-event-id': events[events.length - 2]!.id! },
      });
      expect(resumed.events).toEqual([last]);
      expect(await stopGateway(second, 'SIGTERM')).toBe(0);
    });
  });
}
