/**
 * Principals and isolation (DECISIONS §18) over app.inject: an api principal
 * sees and changes only the sessions, messages and turns it owns; anything
 * else answers 404 and lists leave it out. Admins see everything and filter
 * with ?principal=. The same chat id or idempotency key used by two
 * principals makes two sessions and two turns, never a 409.
 */
import { describe, expect, it } from 'vitest';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';

const ALICE = { 'x-api-token': 'alice-token-0123456789abcdef' };
const BOB = { 'x-api-token': 'bob-token-0123456789abcdef' };
const PRINCIPALS = {
  gateway: {
    auth: {
      principals: [
        { id: 'alice', tokens: [ALICE['x-api-token']] },
        { id: 'bob', tokens: [BOB['x-api-token']] },
      ],
    },
  },
};
const enc = encodeURIComponent;

interface Waited {
  status: string;
  event_id: string;
  session_key: string;
}

async function send(h: Harness, headers: Record<string, string>, chat: string, key?: string): Promise<Waited> {
  const res = await h.message(
    { platform: 'web', user_id: 'u', chat_id: chat, text: `hello from ${chat}`, wait: true },
    { ...headers, ...(key ? { 'idempotency-key': key } : {}) },
  );
  expect(res.statusCode).toBe(200);
  return res.json<Waited>();
}

const get = (h: Harness, url: string, headers: Record<string, string>) => h.inject({ method: 'GET', url, headers });

describe('principals and isolation', () => {
  const rig = useHarness({ config: PRINCIPALS });

  it("another principal's session, history, messages and turn stream answer 404, and lists leave them out", async () => {
    const h = rig;
    const mine = await send(h, ALICE, 'c1');
    expect(mine.session_key).toBe('gateway:web@alice:c1');
    const session = `/api/v1/sessions/${enc(mine.session_key)}`;

    expect((await get(h, session, ALICE)).statusCode).toBe(200);
    for (const url of [session, `${session}/history`, `/api/v1/turns/${mine.event_id}/events`]) {
      const res = await get(h, url, BOB);
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
    }
    const post = await h.inject({
      method: 'POST',
      url: `${session}/messages`,
      headers: BOB,
      payload: { content: 'let me in' },
    });
    expect(post.statusCode).toBe(404);
    const del = await h.inject({ method: 'DELETE', url: session, headers: BOB });
    expect(del.statusCode).toBe(404);
    expect((await get(h, session, ALICE)).json()).toMatchObject({ message_count: 2 }); // nothing of bob's got in

    const keys = async (headers: Record<string, string>, query = '') =>
      (await get(h, `/api/v1/sessions${query}`, headers))
        .json<{ items: Array<{ id: string }> }>()
        .items.map((s) => s.id);
    await send(h, BOB, 'c2');
    expect(await keys(ALICE)).toEqual(['gateway:web@alice:c1']);
    expect(await keys(BOB)).toEqual(['gateway:web@bob:c2']);
    expect((await keys(adminHeaders)).sort()).toEqual(['gateway:web@alice:c1', 'gateway:web@bob:c2']);
    expect(await keys(adminHeaders, '?principal=bob')).toEqual(['gateway:web@bob:c2']);
    expect(await keys(BOB, '?principal=alice')).toEqual(['gateway:web@bob:c2']); // an api principal's filter is itself
    expect((await get(h, session, adminHeaders)).statusCode).toBe(200);
  });

  it('the same chat id and idempotency key from two principals are two sessions and two turns, not a 409', async () => {
    const h = rig;
    const a = await send(h, ALICE, 'shared', 'key-1');
    const b = await send(h, BOB, 'shared', 'key-1');
    expect(a.session_key).not.toBe(b.session_key);
    expect(a.event_id).not.toBe(b.event_id);
    // Each principal's retry replays its own turn.
    expect((await send(h, ALICE, 'shared', 'key-1')).event_id).toBe(a.event_id);
    expect((await send(h, BOB, 'shared', 'key-1')).event_id).toBe(b.event_id);
  });

  it("a message addressed to another principal's session by its key is refused with 404 and writes nothing", async () => {
    const h = rig;
    const mine = await send(h, ALICE, 'private');
    const ws = await h.inject({
      method: 'POST',
      url: `/api/v1/sessions/${enc(mine.session_key)}/messages`,
      headers: BOB,
      payload: { content: 'hi' },
    });
    expect(ws.statusCode).toBe(404);
    const turns = await get(h, `/api/v1/sessions/${enc(mine.session_key)}/turns`, adminHeaders);
    expect(turns.json<{ items: unknown[] }>().items).toHaveLength(1);
  });

  it('a single-owner gateway is unchanged: the default principal keeps plain keys and sees its sessions', async () => {
    const h = rig;
    const mine = await send(h, apiHeaders, 'plain');
    expect(mine.session_key).toBe('gateway:web:plain');
    expect((await get(h, `/api/v1/sessions/${enc(mine.session_key)}`, apiHeaders)).statusCode).toBe(200);
    expect((await get(h, `/api/v1/sessions/${enc(mine.session_key)}`, ALICE)).statusCode).toBe(404);
  });
});

describe("a principal's own rate limits", () => {
  const CAROL_1 = { 'x-api-token': 'carol-token-one-0123456789' };
  const CAROL_2 = { 'x-api-token': 'carol-token-two-0123456789' };
  const rig = useHarness({
    clock: Date.UTC(2026, 10, 27, 12, 0, 0), // a manual clock: the three reads share one window
    config: {
      gateway: {
        auth: {
          principals: [
            {
              id: 'carol',
              tokens: [CAROL_1['x-api-token'], CAROL_2['x-api-token']],
              rate_limits: { read: 2, write: 30, analytics: 10, lifecycle: 5 },
            },
            { id: 'alice', tokens: [ALICE['x-api-token']] },
          ],
        },
      },
    },
  });

  it('count all its tokens together and replace the per-token limits; other principals keep theirs', async () => {
    const h = rig;
    const first = await get(h, '/api/v1/sessions', CAROL_1);
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    expect((await get(h, '/api/v1/sessions', CAROL_2)).statusCode).toBe(200);
    const third = await get(h, '/api/v1/sessions', CAROL_1);
    expect(third.statusCode).toBe(429);
    expect(third.json()).toMatchObject({ error: { code: 'RATE_LIMITED' } });
    const other = await get(h, '/api/v1/sessions', ALICE);
    expect(other.statusCode).toBe(200);
    expect(Number(other.headers['x-ratelimit-limit'])).toBeGreaterThan(2);
  });
});

describe('memory by principal and by agent (memory_scope, DECISIONS §17-18)', () => {
  const rig = useHarness({
    fake: true,
    config: {
      agents: { main: {}, team: { memory_scope: 'agent' } },
      ...PRINCIPALS,
    },
  });
  const ask = async (headers: Record<string, string>, chat: string, text: string, agent = 'main') => {
    const res = await rig.message({ platform: 'web', user_id: 'u', chat_id: chat, text, agent, wait: true }, headers);
    expect(res.statusCode).toBe(200);
    return res.json<Waited>();
  };
  const toolResult = async (sessionKey: string): Promise<string> => {
    const res = await get(rig, `/api/v1/sessions/${enc(sessionKey)}/history`, adminHeaders);
    const entries = res.json<{ items: Array<{ role: string; content: string }> }>().items;
    return entries.filter((e) => e.role === 'tool').at(-1)!.content;
  };
  const save = (content: string, key: string) =>
    rig.fake.enqueue({ tool_calls: [{ name: 'memory_save', arguments: { content, key } }] }, { content: 'Saved.' });
  const search = (query: string) =>
    rig.fake.enqueue({ tool_calls: [{ name: 'memory_search', arguments: { query } }] }, { content: 'Found.' });

  it("a principal's memory is its own, keys included; an agent's shared memory is everyone's who uses it", async () => {
    save('Alice drinks green tea.', 'drink');
    await ask(ALICE, 'm1', 'remember my drink');
    save('Bob drinks black coffee.', 'drink'); // the same key, another owner: no clash
    await ask(BOB, 'm2', 'remember my drink');

    search('what does the user drink? tea coffee');
    const bobs = await ask(BOB, 'm3', 'what do I drink?');
    const found = await toolResult(bobs.session_key);
    expect(found).toContain('Bob drinks black coffee.');
    expect(found).not.toContain('Alice');

    const listed = async (headers: Record<string, string>) =>
      (await get(rig, '/api/v1/memory', headers))
        .json<{ items: Array<{ content: string }> }>()
        .items.map((m) => m.content);
    expect(await listed(ALICE)).toEqual(['Alice drinks green tea.']);
    expect(await listed(BOB)).toEqual(['Bob drinks black coffee.']);
    expect((await listed(adminHeaders)).sort()).toEqual(['Alice drinks green tea.', 'Bob drinks black coffee.']);
    const aliceEntry = (await get(rig, '/api/v1/memory?key=drink', ALICE)).json<{ items: Array<{ id: string }> }>()
      .items[0]!;
    expect((await get(rig, `/api/v1/memory/${aliceEntry.id}`, BOB)).statusCode).toBe(404);

    save('The team meets on Mondays.', 'meeting');
    await ask(ALICE, 't1', 'remember the meeting', 'team');
    search('when does the team meet? Mondays');
    const shared = await ask(BOB, 't2', 'when do we meet?', 'team');
    expect(await toolResult(shared.session_key)).toContain('The team meets on Mondays.');
    search('when does the team meet? Mondays');
    const privateView = await ask(BOB, 'm4', 'when do we meet?');
    expect(await toolResult(privateView.session_key)).not.toContain('Mondays');
  });
});

describe("GET /config shows an api principal its own part, never another principal's", () => {
  const rig = useHarness({
    config: {
      gateway: {
        auth: {
          principals: [
            { id: 'alice', tokens: [ALICE['x-api-token']], agents: ['main'] },
            { id: 'bob', tokens: [BOB['x-api-token']], budget: { daily_usd: 3 } },
          ],
        },
      },
      agents: { main: {}, secret: { system_prompt: 'for bob only' } },
      bindings: [
        { agent: 'secret', match: { channel: 'webhook' }, owner: 'bob' },
        { agent: 'main', match: { platform: 'web' } },
      ],
    },
  });

  interface Seen {
    gateway: { auth: { principals: Array<{ id: string; tokens: string[] }> } };
    agents: Record<string, unknown>;
    bindings: Array<{ agent: string; owner: string | null }>;
  }
  const seen = async (headers: Record<string, string>) => (await get(rig, '/api/v1/config', headers)).json<Seen>();

  it('narrows principals, agents and bindings for an api principal; admins read all of it', async () => {
    const alice = await seen(ALICE);
    expect(alice.gateway.auth.principals.map((p) => p.id)).toEqual(['alice']);
    expect(alice.gateway.auth.principals[0]!.tokens).toEqual(['***']);
    expect(Object.keys(alice.agents)).toEqual(['main']);
    expect(alice.bindings).toEqual([expect.objectContaining({ agent: 'main', owner: null })]);
    expect(JSON.stringify(alice)).not.toContain('bob');

    const bob = await seen(BOB);
    expect(bob.gateway.auth.principals.map((p) => p.id)).toEqual(['bob']);
    expect(Object.keys(bob.agents)).toEqual(['main', 'secret']);
    expect(bob.bindings.map((b) => b.agent)).toEqual(['secret', 'main']);

    const admin = await seen(adminHeaders);
    expect(admin.gateway.auth.principals.map((p) => p.id)).toEqual(['alice', 'bob']);
    expect(admin.bindings).toHaveLength(2);
  });
});
