/**
 * Gatehouse's own MCP server at /mcp (DECISIONS §19) against a listening gateway, with the official SDK's client
 * and Streamable HTTP transport: the tools and their answers, idempotent send_message, isolation between two
 * configured principals through every tool (§18), and the refusals the guard raises before the SDK sees a request
 * (401, 403, 429), written as JSON-RPC errors with their HTTP status.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/lib/version.js';
import { chatRequests, echoReply, HASHED_EMBEDDINGS } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, API_TOKEN, adminHeaders, startHarness, useHarness } from '../helpers/harness.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef';

const CONFIG = {
  agents: { main: {}, helper: { approval_required: ['memory_save'] } },
  gateway: {
    auth: {
      principals: [
        { id: 'alice', tokens: [ALICE], agents: ['main'] },
        { id: 'bob', tokens: [BOB] },
      ],
    },
  },
};

const TOOLS = [
  'get_history',
  'get_turn',
  'list_agents',
  'list_sessions',
  'search_knowledge',
  'search_memory',
  'send_message',
];

/** What send_message answers. */
interface Sent {
  event_id: string;
  session_id: string;
  chat_id: string;
  status: string;
  reply: string | null;
  note: string | null;
  replayed: boolean;
}

/** The JSON-RPC error of a refused request. */
interface RpcError {
  jsonrpc: string;
  id: null;
  error: { code: number; message: string; data?: { status: number; code: string; request_id: string } };
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** A POST to /mcp as a Streamable HTTP client sends it. */
function post(base: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${ALICE}`,
      ...headers,
    },
    body,
  });
}

describe('the MCP server at /mcp', () => {
  const t = useHarness({
    fake: { always: echoReply, alwaysEmbeddings: HASHED_EMBEDDINGS },
    scope: 'all',
    config: CONFIG,
  });
  let base = '';
  const clients: Client[] = [];

  /** A connected SDK client with `token` as its bearer token. */
  const connect = async (token: string): Promise<Client> => {
    const client = new Client({ name: 'gatehouse-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };

  /** Calls a tool that must succeed; answers its structured content (checked against its text twin). */
  const call = async <T>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = result.content[0]?.type === 'text' ? result.content[0].text : '';
    expect(result.isError, `${name}: ${text}`).toBeFalsy();
    expect(JSON.parse(text)).toEqual(result.structuredContent);
    return result.structuredContent as T;
  };

  /** Calls a tool that must fail; answers its message. */
  const refused = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError, name).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    return result.content[0]?.type === 'text' ? result.content[0].text : '';
  };

  beforeAll(async () => {
    base = await t.gateway.listen();
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
  });

  it('initializes as gatehouse and lists its tools with input and output schemas', async () => {
    const client = await connect(ALICE);
    expect(client.getServerVersion()).toEqual({ name: 'gatehouse', version: packageVersion() });
    expect(client.getInstructions()).toContain('send_message');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      expect(tool.annotations?.readOnlyHint, tool.name).toBe(tool.name !== 'send_message');
    }
    const send = tools.find((tool) => tool.name === 'send_message')!;
    expect(send.inputSchema.required).toEqual(['text']);
  });

  it('send_message runs a turn in an mcp session of the caller, continues a chat, and the reads find it', async () => {
    const alice = await connect(ALICE);
    const fresh = await call<Sent>(alice, 'send_message', { text: 'hello there' });
    expect(fresh).toMatchObject({ status: 'completed', reply: 'fake: hello there', note: null, replayed: false });
    expect(fresh.event_id).toMatch(/^evt_/);
    expect(fresh.chat_id).toMatch(/^~/);
    expect(fresh.session_id).toBe(`gateway:mcp@alice:${fresh.chat_id}`);

    const first = await call<Sent>(alice, 'send_message', { text: 'one', chat_id: 'notes' });
    const second = await call<Sent>(alice, 'send_message', { text: 'two', chat_id: 'notes' });
    expect(second.session_id).toBe('gateway:mcp@alice:notes');
    expect(second.session_id).toBe(first.session_id);
    expect(second.reply).toBe('fake: two');

    const history = await call<{ items: Array<{ role: string; content: string; event_id: string }>; total: number }>(
      alice,
      'get_history',
      { session_id: 'gateway:mcp@alice:notes' },
    );
    expect(history.items.map((entry) => [entry.role, entry.content])).toEqual([
      ['user', 'one'],
      ['assistant', 'fake: one'],
      ['user', 'two'],
      ['assistant', 'fake: two'],
    ]);
    expect(history.total).toBe(4);
    const limited = await call<{ items: unknown[]; returned: number }>(alice, 'get_history', {
      session_id: 'gateway:mcp@alice:notes',
      limit: 1,
    });
    expect(limited.returned).toBe(1);

    const turn = await call<Record<string, unknown>>(alice, 'get_turn', { event_id: second.event_id });
    expect(turn).toMatchObject({
      event_id: second.event_id,
      session_id: 'gateway:mcp@alice:notes',
      status: 'completed',
      reply: 'fake: two',
      error: null,
    });

    // Sessions page with a cursor: two pages of one, then none.
    const page1 = await call<{ items: Array<{ id: string; channel: string; agent: string }>; next_cursor: string }>(
      alice,
      'list_sessions',
      { limit: 1 },
    );
    expect(page1.items).toHaveLength(1);
    expect(page1.items[0]).toMatchObject({ channel: 'mcp', agent: 'main' });
    const page2 = await call<{ items: Array<{ id: string }>; has_more: boolean }>(alice, 'list_sessions', {
      limit: 1,
      cursor: page1.next_cursor,
    });
    expect(page2.items[0]!.id).not.toBe(page1.items[0]!.id);
    expect(await refused(alice, 'list_sessions', { cursor: 'not-a-cursor' })).toContain('invalid cursor');
    expect(await refused(alice, 'get_history', { session_id: 'gateway:mcp@alice:nothing' })).toBe('session not found');
    expect(await refused(alice, 'send_message', { text: '   ' })).toContain('blank');
  });

  it('send_message twice with one idempotency key is one turn and one model call; other text is refused', async () => {
    const alice = await connect(ALICE);
    const before = chatRequests(t.fake).length;
    const original = await call<Sent>(alice, 'send_message', { text: 'charge once', idempotency_key: 'pay-1' });
    const retry = await call<Sent>(alice, 'send_message', { text: 'charge once', idempotency_key: 'pay-1' });
    expect(chatRequests(t.fake).length - before).toBe(1);
    expect(retry.event_id).toBe(original.event_id);
    expect(retry.session_id).toBe(original.session_id); // a keyed fresh chat is found again
    expect(retry).toMatchObject({ replayed: true, status: 'completed', reply: 'fake: charge once' });
    expect(original.replayed).toBe(false);
    expect(await refused(alice, 'send_message', { text: 'charge twice', idempotency_key: 'pay-1' })).toContain(
      'idempotency key',
    );
    expect(chatRequests(t.fake).length - before).toBe(1);
  });

  it('the same key from two principals is two turns in two sessions', async () => {
    const [alice, bob] = [await connect(ALICE), await connect(BOB)];
    const before = chatRequests(t.fake).length;
    const a = await call<Sent>(alice, 'send_message', { text: 'same', chat_id: 'shared', idempotency_key: 'k-2' });
    const b = await call<Sent>(bob, 'send_message', { text: 'same', chat_id: 'shared', idempotency_key: 'k-2' });
    expect(chatRequests(t.fake).length - before).toBe(2);
    expect(a.event_id).not.toBe(b.event_id);
    expect([a.session_id, b.session_id]).toEqual(['gateway:mcp@alice:shared', 'gateway:mcp@bob:shared']);
    expect(b.replayed).toBe(false);
  });

  it("another principal never sees a principal's sessions, history, turns or memory through any tool", async () => {
    const [alice, bob] = [await connect(ALICE), await connect(BOB)];
    t.fake.enqueue(
      { tool_calls: [{ name: 'memory_save', arguments: { content: 'the zebra code is tulip', key: 'zebra' } }] },
      { content: 'Saved.' },
    );
    const mine = await call<Sent>(alice, 'send_message', { text: 'remember the zebra code', chat_id: 'secret' });
    expect(mine).toMatchObject({ status: 'completed', reply: 'Saved.' });

    const aliceMemory = await call<{ items: Array<{ key: string; content: string }> }>(alice, 'search_memory', {
      query: 'zebra',
    });
    expect(aliceMemory.items.map((item) => item.key)).toContain('zebra');

    const bobSessions = await call<{ items: Array<{ id: string }>; total: number }>(bob, 'list_sessions', {
      limit: 100,
    });
    expect(bobSessions.items.length).toBeGreaterThan(0); // bob has sessions of his own from the test above
    expect(bobSessions.items.every((session) => session.id.startsWith('gateway:mcp@bob:'))).toBe(true);
    expect(bobSessions.total).toBe(bobSessions.items.length);
    expect(await refused(bob, 'get_history', { session_id: mine.session_id })).toBe('session not found');
    expect(await refused(bob, 'get_turn', { event_id: mine.event_id })).toBe('turn not found');
    expect(await refused(bob, 'get_turn', { event_id: 'evt_nothing' })).toBe('turn not found');
    const bobMemory = await call<{ items: unknown[]; total: number }>(bob, 'search_memory', { query: 'zebra' });
    expect(bobMemory).toEqual({ items: [], total: 0 });
    // Bob's chat of the same name is his own session, not a way into alice's.
    const bobs = await call<Sent>(bob, 'send_message', { text: 'hi', chat_id: 'secret' });
    expect(bobs.session_id).toBe('gateway:mcp@bob:secret');

    // An admin token sees every session, as on the API.
    const admin = await connect(ADMIN_TOKEN);
    const all = await call<{ items: Array<{ id: string }> }>(admin, 'list_sessions', { limit: 100 });
    expect(all.items.map((session) => session.id)).toEqual(expect.arrayContaining([mine.session_id, bobs.session_id]));
    expect(await call<{ status: string }>(admin, 'get_turn', { event_id: mine.event_id })).toMatchObject({
      status: 'completed',
    });
  });

  it('search_knowledge finds what the knowledge base holds, for every principal', async () => {
    const created = await t.inject({
      method: 'POST',
      url: '/api/v1/knowledge',
      headers: adminHeaders,
      payload: { title: 'Opening hours', content: 'The observatory opens at nine and closes at dusk.' },
    });
    expect(created.statusCode).toBe(201);
    for (const token of [ALICE, BOB]) {
      const found = await call<{ items: Array<{ title: string; score: number; matches: Array<{ text: string }> }> }>(
        await connect(token),
        'search_knowledge',
        { query: 'observatory', limit: 3 },
      );
      expect(found.items[0]).toMatchObject({ title: 'Opening hours' });
      expect(found.items[0]!.matches[0]!.text).toContain('observatory');
    }
  });

  it('list_agents and send_message agent: only the agents the principal may use', async () => {
    const [alice, bob] = [await connect(ALICE), await connect(BOB)];
    expect(await call(alice, 'list_agents')).toEqual({ items: [{ id: 'main', default: true }] });
    expect(await call(bob, 'list_agents')).toEqual({
      items: [
        { id: 'main', default: true },
        { id: 'helper', default: false },
      ],
    });
    const before = chatRequests(t.fake).length;
    expect(await refused(alice, 'send_message', { text: 'hi', agent: 'helper' })).toContain('no agent "helper"');
    expect(await refused(bob, 'send_message', { text: 'hi', agent: 'nobody' })).toContain('list_agents');
    expect(chatRequests(t.fake).length).toBe(before);
    const helped = await call<Sent>(bob, 'send_message', { text: 'help', agent: 'helper', chat_id: 'helped' });
    const sessions = await call<{ items: Array<{ id: string; agent: string }> }>(bob, 'list_sessions', { limit: 100 });
    expect(sessions.items.find((session) => session.id === helped.session_id)?.agent).toBe('helper');
  });

  it('a paused turn says so, and a wait that runs out answers the event id to poll with get_turn', async () => {
    const bob = await connect(BOB);
    t.fake.enqueue({ tool_calls: [{ name: 'memory_save', arguments: { content: 'needs a yes' } }] });
    const paused = await call<Sent>(bob, 'send_message', { text: 'save it', agent: 'helper', chat_id: 'approve' });
    expect(paused.status).toBe('waiting_approval');
    expect(paused.note).toContain('approve the tool call "memory_save"');
    const denied = await t.inject({
      method: 'POST',
      url: `/api/v1/turns/${paused.event_id}/deny`,
      headers: adminHeaders,
    });
    expect(denied.statusCode).toBe(200);
    expect((await t.internals.messages.waitFor(paused.event_id, 5000, undefined, 'terminal'))?.status).toBe(
      'completed',
    );

    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    t.fake.enqueue({ after: gate, then: { content: 'late answer' } });
    const waited = await call<Sent>(bob, 'send_message', { text: 'take your time', timeout_seconds: 1 });
    expect(waited.reply).toBeNull();
    expect(['accepted', 'running']).toContain(waited.status);
    expect(waited.note).toContain(waited.event_id);
    release();
    expect((await t.internals.messages.waitFor(waited.event_id, 5000))?.status).toBe('completed');
    expect(await call(bob, 'get_turn', { event_id: waited.event_id })).toMatchObject({
      status: 'completed',
      reply: 'late answer',
    });
  });

  it('a bad token is 401 and a cross-site Origin 403, as JSON-RPC errors; the SDK client fails to connect', async () => {
    await expect(connect('not-a-token')).rejects.toThrow(/401/);

    const unauthorized = await post(base, JSON.stringify(INITIALIZE), { authorization: 'Bearer not-a-token' });
    expect(unauthorized.status).toBe(401);
    const body = (await unauthorized.json()) as RpcError;
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000, data: { code: 'UNAUTHORIZED' } } });
    expect(body.error.data?.request_id).toBe(unauthorized.headers.get('x-request-id'));

    const crossSite = await post(base, JSON.stringify(INITIALIZE), { origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(((await crossSite.json()) as RpcError).error).toMatchObject({
      code: -32000,
      message: 'cross-site request forbidden',
      data: { status: 403, code: 'FORBIDDEN' },
    });
  });

  it('is stateless, answers a malformed body with a JSON-RPC error, and 405 to GET and DELETE', async () => {
    const initialized = await post(base, JSON.stringify(INITIALIZE));
    expect(initialized.status).toBe(200);
    expect(initialized.headers.get('mcp-session-id')).toBeNull();
    expect(initialized.headers.get('x-ratelimit-limit')).not.toBeNull(); // the guard's headers survive the hijack
    expect(await initialized.text()).toContain('"serverInfo":{"name":"gatehouse"');

    const notJson = await post(base, '{"jsonrpc": "2.0", "id": ');
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as RpcError).error).toMatchObject({ code: -32700, data: { code: 'BAD_REQUEST' } });

    const tooLarge = await post(
      base,
      JSON.stringify({ ...INITIALIZE, pad: 'x'.repeat(t.config.gateway.max_body_bytes) }),
    );
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as RpcError).error).toMatchObject({
      code: -32000,
      data: { status: 413, code: 'PAYLOAD_TOO_LARGE' },
    });

    const notRpc = await post(base, JSON.stringify({ hello: 'world' }));
    expect(notRpc.status).toBe(400);
    expect(await notRpc.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });

    // Whatever JSON it is, the answer is no 5xx and a JSON-RPC message.
    const listTools = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
    for (const odd of ['null', '[]', '42', '"x"', '{}', JSON.stringify([listTools(1), listTools(2)])]) {
      const res = await post(base, odd, { 'mcp-protocol-version': '2025-06-18' });
      expect(res.status, odd).toBeLessThan(500);
      if (odd === '[]')
        expect(res.status).toBe(202); // no request in it: nothing to answer, as the SDK has it
      else expect(await res.text(), odd).toContain('"jsonrpc":"2.0"');
    }

    const unknownMethod = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'no/such' }), {
      'mcp-protocol-version': '2025-06-18',
    });
    expect(await unknownMethod.text()).toContain('"code":-32601');

    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${base}/mcp`, {
        method,
        headers: { authorization: `Bearer ${ALICE}`, accept: 'text/event-stream' },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(((await res.json()) as RpcError).jsonrpc).toBe('2.0');
    }
  });
});

describe('the MCP server, configured', () => {
  it('mcp.server.enabled: false serves no /mcp', async () => {
    const h = await startHarness({ config: { mcp: { server: { enabled: false } } } });
    try {
      const base = await h.gateway.listen();
      const res = await post(base, JSON.stringify(INITIALIZE), { authorization: `Bearer ${API_TOKEN}` });
      expect(res.status).toBe(404);
      expect(h.internals.routes.some((route) => route.path === '/mcp')).toBe(false);
    } finally {
      await h.close();
    }
  });

  it('a rate-limited request is 429 with Retry-After, and a draining gateway 503, as JSON-RPC errors', async () => {
    const h = await startHarness({ roomyLimits: false, config: { security: { rate_limits: { write: 1 } } } });
    try {
      const base = await h.gateway.listen();
      const headers = { authorization: `Bearer ${API_TOKEN}` };
      expect((await post(base, JSON.stringify(INITIALIZE), headers)).status).toBe(200);
      const limited = await post(base, JSON.stringify(INITIALIZE), headers);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await limited.json()) as RpcError).error).toMatchObject({
        code: -32000,
        data: { status: 429, code: 'RATE_LIMITED' },
      });
      h.internals.beginDrain();
      const draining = await post(base, JSON.stringify(INITIALIZE), headers);
      expect(draining.status).toBe(503);
      expect(((await draining.json()) as RpcError).error).toMatchObject({ data: { status: 503, code: 'UNAVAILABLE' } });
    } finally {
      await h.close();
    }
  });
});
