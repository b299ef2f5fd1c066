import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { appendMessage } from '../../src/sessions/sessions.repo.js';
import { allContents, chatRequests, echoReply } from '../helpers/fake-openai.js';
import { apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';
import { ISO_MS, MESSAGE_FIELDS, msg } from './builders.js';

interface SessionView {
  id: string;
  channel: string;
  created_at: string;
  last_active: string;
  message_count: number;
  status: string;
}
interface SessionPage {
  items: SessionView[];
  pagination: { cursor: string | null; has_more: boolean; total: number };
}
interface HistoryPage {
  items: Array<{ id: string; role: string; content: string; created_at: string; event_id: string }>;
  total: number;
  returned: number;
}

const enc = encodeURIComponent;

describe('sessions API', () => {
  // Model calls a test does not script get the echo `fake: <text>`.
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  const get = (h: Harness, url: string) => h.inject({ method: 'GET', url, headers: apiHeaders });
  const createSession = async (h: Harness, body: Record<string, unknown> = {}) => {
    const res = await h.inject({ method: 'POST', url: '/api/v1/sessions', headers: apiHeaders, payload: body });
    expect(res.statusCode).toBe(201);
    return res.json<SessionView>();
  };
  const sendTo = (h: Harness, id: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    h.inject({
      method: 'POST',
      url: `/api/v1/sessions/${enc(id)}/messages`,
      headers: { ...apiHeaders, ...headers },
      payload: body,
    });

  describe('happy', () => {
    it('POST /sessions creates gateway:api:<id> (201), and a custom channel; GET returns it', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      expect(session.id).toMatch(/^gateway:api:[^:]+$/);
      expect(session).toMatchObject({ channel: 'api', message_count: 0, status: 'active' });
      expect(session.created_at).toMatch(ISO_MS);
      expect(session.last_active).toMatch(ISO_MS);

      const custom = await createSession(h, { channel: 'slack', metadata: { team: 'x' } });
      expect(custom.id).toMatch(/^gateway:slack:[^:]+$/);
      expect(custom.channel).toBe('slack');
      expect(custom.id).not.toBe(session.id);

      const read = await get(h, `/api/v1/sessions/${enc(session.id)}`);
      expect(read.statusCode).toBe(200);
      expect(read.json()).toEqual(session);
      // The /api alias serves the same.
      expect((await get(h, `/api/sessions/${enc(custom.id)}`)).json()).toEqual(custom);
    });

    it('lists with cursor pagination over 3 pages (limit 2, 5 sessions), newest activity first', async () => {
      const clock = new ManualClock();
      const h = await rig.open({ clock });
      const created: string[] = [];
      for (let i = 0; i < 5; i++) {
        created.push((await createSession(h)).id);
        clock.advance(1_000);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      const pages: SessionPage[] = [];
      for (let page = 0; page < 3; page++) {
        const res = await get(h, `/api/v1/sessions?limit=2${cursor ? `&cursor=${enc(cursor)}` : ''}`);
        expect(res.statusCode).toBe(200);
        const body = res.json<SessionPage>();
        pages.push(body);
        seen.push(...body.items.map((s) => s.id));
        cursor = body.pagination.cursor;
      }
      expect(pages.map((p) => p.items.length)).toEqual([2, 2, 1]);
      expect(pages.map((p) => p.pagination.has_more)).toEqual([true, true, false]);
      expect(pages.map((p) => p.pagination.total)).toEqual([5, 5, 5]);
      expect(typeof pages[0]!.pagination.cursor).toBe('string');
      expect(pages[2]!.pagination.cursor).toBeNull();
      expect(seen).toEqual([...created].reverse());
    });

    it('filters by status and channel', async () => {
      const h = await rig.open();
      await createSession(h);
      await createSession(h, { channel: 'slack' });
      const active = await get(h, '/api/v1/sessions?status=active');
      expect(active.json<SessionPage>().pagination.total).toBe(2);
      const archived = await get(h, '/api/v1/sessions?status=archived');
      expect(archived.json<SessionPage>()).toEqual({
        items: [],
        pagination: { cursor: null, has_more: false, total: 0 },
      });
      const all = await get(h, '/api/v1/sessions?status=all');
      expect(all.json<SessionPage>().items).toHaveLength(2);
      const slack = await get(h, '/api/v1/sessions?channel=slack');
      expect(slack.json<SessionPage>().items.map((s) => s.channel)).toEqual(['slack']);
    });

    it('history: default 100 newest in chronological order, with total and returned; limit picks the newest', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      await h.internals.store.writer.run(async (trx) => {
        for (let i = 0; i < 105; i++) {
          await appendMessage(trx, {
            id: `msg_${String(i).padStart(6, '0')}`,
            sessionKey: session.id,
            contextEpoch: 0,
            role: i % 2 === 0 ? 'user' : 'assistant',
            content: `m${i}`,
            toolCalls: null,
            toolCallId: null,
            name: null,
            eventId: null,
            createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
          });
        }
      });
      const all = await get(h, `/api/v1/sessions/${enc(session.id)}/history`);
      expect(all.statusCode).toBe(200);
      const page = all.json<HistoryPage>();
      expect(page.total).toBe(105);
      expect(page.returned).toBe(100);
      expect(page.items).toHaveLength(100);
      expect(page.items[0]!.content).toBe('m5');
      expect(page.items.at(-1)!.content).toBe('m104');

      const three = (await get(h, `/api/v1/sessions/${enc(session.id)}/history?limit=3`)).json<HistoryPage>();
      expect(three.items.map((m) => m.content)).toEqual(['m102', 'm103', 'm104']);
      expect(three).toMatchObject({ total: 105, returned: 3 });
      const max = (await get(h, `/api/v1/sessions/${enc(session.id)}/history?limit=500`)).json<HistoryPage>();
      expect(max.returned).toBe(105);
    });

    it('history entries carry {id, role, content, created_at, event_id} of real turns', async () => {
      const h = await rig.open();
      const res = await h.message(msg('hi there', 'hist', { wait: true }));
      expect(res.statusCode).toBe(200);
      const page = (await get(h, `/api/v1/sessions/${enc('gateway:api:hist')}/history`)).json<HistoryPage>();
      expect(page.items.map((m) => [m.role, m.content])).toEqual([
        ['user', 'hi there'],
        ['assistant', 'fake: hi there'],
      ]);
      for (const entry of page.items) {
        expect(entry.event_id).toBe(res.json<{ event_id: string }>().event_id);
        expect(entry.created_at).toMatch(ISO_MS);
        expect(entry.id).toMatch(/^msg_/);
      }
      const session = (await get(h, `/api/v1/sessions/${enc('gateway:api:hist')}`)).json<SessionView>();
      expect(session.message_count).toBe(2);
    });

    it('DELETE → {id, deleted: true}; then GET/history are 404 and reusing the key starts a new context', async () => {
      const h = await rig.open();
      const key = 'gateway:api:reuse';
      expect((await h.message(msg('remember the word pineapple', 'reuse', { wait: true }))).statusCode).toBe(200);
      const del = await h.inject({ method: 'DELETE', url: `/api/v1/sessions/${enc(key)}`, headers: apiHeaders });
      expect(del.statusCode).toBe(200);
      expect(del.json()).toEqual({ id: key, deleted: true });
      expect((await get(h, `/api/v1/sessions/${enc(key)}`)).statusCode).toBe(404);
      expect((await get(h, `/api/v1/sessions/${enc(key)}/history`)).statusCode).toBe(404);
      expect((await get(h, '/api/v1/sessions')).json<SessionPage>().pagination.total).toBe(0);

      const again = await h.message(msg('what was the word?', 'reuse', { wait: true }));
      expect(again.statusCode).toBe(200);
      const calls = chatRequests(rig.fake);
      expect(calls).toHaveLength(2);
      expect(allContents(calls[1]!).join('\n')).not.toContain('pineapple');
      expect(calls[1]!.messages?.filter((m) => m.role !== 'system')).toHaveLength(1);
      const page = (await get(h, `/api/v1/sessions/${enc(key)}/history`)).json<HistoryPage>();
      expect(page.items.map((m) => m.content)).toEqual(['what was the word?', 'fake: what was the word?']);
      const revived = (await get(h, `/api/v1/sessions/${enc(key)}`)).json<SessionView>();
      expect(revived.message_count).toBe(2);
    });

    it('POST /sessions/{id}/messages answers 200 with the Message; role "user" is optional', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      rig.fake.enqueue({ content: 'hello back', usage: { prompt_tokens: 20, completion_tokens: 4 } });
      const res = await sendTo(h, session.id, { content: 'hello', role: 'user' });
      expect(res.statusCode).toBe(200);
      const message = res.json<Record<string, unknown>>();
      expect(Object.keys(message).sort()).toEqual(MESSAGE_FIELDS);
      expect(message).toMatchObject({
        role: 'assistant',
        content: 'hello back',
        tool_calls: [],
        status: 'completed',
        cost: { input_tokens: 20, output_tokens: 4 },
      });
      expect(message.id).toMatch(/^msg_/);
      expect(message.event_id).toMatch(/^evt_/);
      const again = await sendTo(h, session.id, { content: 'and again' });
      expect(again.statusCode).toBe(200);
      expect(again.json()).toMatchObject({ content: 'fake: and again' });
      const history = (await get(h, `/api/v1/sessions/${enc(session.id)}/history`)).json<HistoryPage>();
      expect(history.total).toBe(4);
    });

    it('streams SSE with Accept: text/event-stream: delta frames, then done carrying the Message', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      rig.fake.enqueue({ content: 'one two three', chunks: 3 });
      const res = await sendTo(h, session.id, { content: 'stream please' }, { accept: 'text/event-stream' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/event-stream');
      const events = parseSse(res.body);
      const names = events.map((e) => e.event);
      expect(names.filter((n) => n === 'delta')).toHaveLength(3);
      expect(names.at(-1)).toBe('done');
      expect(names.slice(0, 4)).toEqual(['accepted', 'delta', 'delta', 'delta']);
      expect(names).not.toContain('status');
      const text = events
        .filter((e) => e.event === 'delta')
        .map((e) => (e.data as { content: string }).content)
        .join('');
      expect(text).toBe('one two three');
      // `done` carries the Message itself (DECISIONS §5).
      const done = events.at(-1)!.data as Record<string, unknown>;
      expect(done).toMatchObject({ role: 'assistant', content: 'one two three', status: 'completed' });
      expect(typeof done.id).toBe('string');
    });

    it(
      'a streamed turn that pauses for a question ends with done carrying the waiting Message',
      { timeout: 8_000 },
      async () => {
        const h = await rig.open();
        const session = await createSession(h);
        rig.fake.enqueue(
          { tool_calls: [{ id: 'call_q', name: 'ask_user', arguments: { question: 'Which one?' } }] },
          { content: 'the blue one', chunks: 2 },
        );
        const first = await sendTo(h, session.id, { content: 'pick one' }, { accept: 'text/event-stream' });
        const events = parseSse(first.body);
        expect(events.map((e) => e.event)).toEqual(['accepted', 'tool_call', 'done']);
        const done = events.at(-1)!.data as Record<string, unknown>;
        expect(done).toMatchObject({ role: 'assistant', status: 'waiting_clarification', content: 'Which one?' });

        // The answer streams the resumed run to its end.
        const answer = await sendTo(h, session.id, { content: 'blue' }, { accept: 'text/event-stream' });
        const resumed = parseSse(answer.body);
        expect(resumed.map((e) => e.event)).toEqual(['accepted', 'tool_result', 'delta', 'delta', 'done']);
        expect(resumed.at(-1)!.data).toMatchObject({ status: 'completed', content: 'the blue one' });
      },
    );
  });

  describe('errors', () => {
    it.each(['0', '101', 'abc', '1.5', ''])('list limit=%s → 400', async (limit) => {
      const h = await rig.open();
      const res = await get(h, `/api/v1/sessions?limit=${limit}`);
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('BAD_REQUEST');
    });

    it('a bad cursor → 400; an unknown status → 400', async () => {
      const h = await rig.open();
      for (const cursor of ['not-a-cursor', Buffer.from('{"a":1}').toString('base64url')]) {
        expect((await get(h, `/api/v1/sessions?cursor=${enc(cursor)}`)).statusCode).toBe(400);
      }
      expect((await get(h, '/api/v1/sessions?status=idle')).statusCode).toBe(400);
    });

    it.each(['0', '501', 'x'])('history limit=%s → 400', async (limit) => {
      const h = await rig.open();
      const session = await createSession(h);
      const res = await get(h, `/api/v1/sessions/${enc(session.id)}/history?limit=${limit}`);
      expect(res.statusCode).toBe(400);
    });

    it('an unknown session → 404 on get, history, messages and delete', async () => {
      const h = await rig.open();
      const id = enc('gateway:api:nope');
      const responses = [
        await get(h, `/api/v1/sessions/${id}`),
        await get(h, `/api/v1/sessions/${id}/history`),
        await sendTo(h, 'gateway:api:nope', { content: 'hi' }),
        await h.inject({ method: 'DELETE', url: `/api/v1/sessions/${id}`, headers: apiHeaders }),
      ];
      for (const res of responses) {
        expect(res.statusCode).toBe(404);
        expect(res.json<{ error: { code: string } }>().error.code).toBe('NOT_FOUND');
      }
      expect(chatRequests(rig.fake)).toHaveLength(0);
    });

    it('deleting twice → 404 the second time', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      const url = `/api/v1/sessions/${enc(session.id)}`;
      expect((await h.inject({ method: 'DELETE', url, headers: apiHeaders })).statusCode).toBe(200);
      expect((await h.inject({ method: 'DELETE', url, headers: apiHeaders })).statusCode).toBe(404);
    });

    it.each([
      ['role assistant', { content: 'x', role: 'assistant' }],
      ['role system', { content: 'x', role: 'system' }],
      ['missing content', { role: 'user' }],
      ['empty content', { content: '' }],
      ['non-string content', { content: 5 }],
    ])('POST /sessions/{id}/messages with %s → 400, nothing runs', async (_name, body) => {
      const h = await rig.open();
      const session = await createSession(h);
      const res = await sendTo(h, session.id, body);
      expect(res.statusCode).toBe(400);
      expect(chatRequests(rig.fake)).toHaveLength(0);
    });

    it('POST /sessions with a bad channel or non-object metadata → 400', async () => {
      const h = await rig.open();
      for (const body of [{ channel: '' }, { channel: 'x'.repeat(65) }, { metadata: 'text' }, { metadata: [1] }]) {
        const res = await h.inject({ method: 'POST', url: '/api/v1/sessions', headers: apiHeaders, payload: body });
        expect(res.statusCode).toBe(400);
      }
    });

    it('a provider failure on the message route → 502 UPSTREAM_ERROR with details.event_id', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      rig.fake.enqueue({ status: 500 });
      const res = await sendTo(h, session.id, { content: 'boom' });
      expect(res.statusCode).toBe(502);
      const error = res.json<{ error: { code: string; details: { event_id: string } } }>().error;
      expect(error.code).toBe('UPSTREAM_ERROR');
      expect(error.details.event_id).toMatch(/^evt_/);
    });

    it('a provider failure while streaming gives an error event', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      rig.fake.enqueue({ status: 500 });
      const res = await sendTo(h, session.id, { content: 'boom' }, { accept: 'text/event-stream' });
      expect(res.statusCode).toBe(200);
      const events = parseSse(res.body);
      expect(events.at(-1)!.event).toBe('error');
      // `error` carries the error object itself (DECISIONS §5).
      const data = events.at(-1)!.data as { code: string; details: { event_id: string } };
      expect(data.code).toBe('UPSTREAM_ERROR');
      expect(data.details.event_id).toMatch(/^evt_/);
      expect(events.map((e) => e.event)).not.toContain('done');
    });
  });

  describe('security', () => {
    it('every sessions route needs a token', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      const id = enc(session.id);
      const requests = [
        { method: 'GET' as const, url: '/api/v1/sessions' },
        { method: 'POST' as const, url: '/api/v1/sessions', payload: {} },
        { method: 'GET' as const, url: `/api/v1/sessions/${id}` },
        { method: 'GET' as const, url: `/api/v1/sessions/${id}/history` },
        { method: 'POST' as const, url: `/api/v1/sessions/${id}/messages`, payload: { content: 'x' } },
        { method: 'DELETE' as const, url: `/api/v1/sessions/${id}` },
      ];
      for (const request of requests) {
        const res = await h.inject(request);
        expect(res.statusCode, `${request.method} ${request.url}`).toBe(401);
      }
      expect((await get(h, `/api/v1/sessions/${id}`)).statusCode).toBe(200);
      expect(chatRequests(rig.fake)).toHaveLength(0);
    });

    it('a channel cannot smuggle key separators into the session key', async () => {
      const h = await rig.open();
      const res = await h.inject({
        method: 'POST',
        url: '/api/v1/sessions',
        headers: apiHeaders,
        payload: { channel: 'api:victim' },
      });
      expect(res.statusCode).toBe(400);
    });

    it('a deleted session’s old messages never reach the model again, even via the session route', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      expect((await sendTo(h, session.id, { content: 'secret token 1234' })).statusCode).toBe(200);
      await h.inject({ method: 'DELETE', url: `/api/v1/sessions/${enc(session.id)}`, headers: apiHeaders });
      expect((await sendTo(h, session.id, { content: 'hello?' })).statusCode).toBe(404);
    });
  });
});
