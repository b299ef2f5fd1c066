/**
 * Several agents behind one gateway (DECISIONS §17-18), end to end over
 * app.inject with a real fake of the model provider: which agent a session
 * gets (a requested one, bindings, the default), what its turns send to the
 * model (its prompt, its tools), GET /agents, GET /whoami, and live bindings.
 */
import { describe, expect, it } from 'vitest';
import { allContents, chatRequests, echoReply } from '../helpers/fake-openai.js';
import { ConfigError } from '../../src/config/config.load.js';
import { adminHeaders, apiHeaders, startHarness, useHarness, type Harness } from '../helpers/harness.js';

const ALICE_TOKEN = 'alice-token-0123456789abcdef';
const alice = { 'x-api-token': ALICE_TOKEN };
const enc = encodeURIComponent;

const AGENTS = {
  agents: {
    main: { system_prompt: 'You are the main agent.' },
    support: { system_prompt: 'You are support.', tools: { allow: ['knowledge_*'], deny: [] } },
  },
  bindings: [
    { agent: 'support', match: { channel: 'slack' } },
    { agent: 'main', match: { channel: 'slack', chat_id: 'vip' } },
  ],
  gateway: { auth: { principals: [{ id: 'alice', tokens: [ALICE_TOKEN], agents: ['main'] }] } },
};

async function sessionAgent(h: Harness, key: string): Promise<string> {
  const res = await h.inject({ method: 'GET', url: `/api/v1/sessions/${enc(key)}`, headers: adminHeaders });
  expect(res.statusCode).toBe(200);
  return res.json<{ agent: string }>().agent;
}

describe('agents and bindings', () => {
  const rig = useHarness({ fake: { always: echoReply }, config: AGENTS });

  it("a binding decides a new session's agent, the most specific wins, and the turn runs with its prompt and tools", async () => {
    const h = rig;
    const before = chatRequests(h.fake).length;
    const res = await h.message({ platform: 'slack', user_id: 'u1', chat_id: 'c1', text: 'hello', wait: true });
    expect(res.statusCode).toBe(200);
    expect(await sessionAgent(h, 'gateway:slack:c1')).toBe('support');
    const [request] = chatRequests(h.fake, before);
    expect(allContents(request!).join('\n')).toContain('You are support.');
    const toolNames = (request!.tools ?? []).map((t) => (t as { function: { name: string } }).function.name);
    expect(toolNames.length).toBeGreaterThan(0);
    expect(toolNames.every((name) => name.startsWith('knowledge_'))).toBe(true);

    // Two matching keys beat one; no match → the default agent, with every tool.
    await h.message({ platform: 'slack', user_id: 'u1', chat_id: 'vip', text: 'hi', wait: true });
    expect(await sessionAgent(h, 'gateway:slack:vip')).toBe('main');
    const mark = chatRequests(h.fake).length;
    await h.message({ platform: 'web', user_id: 'u1', chat_id: 'w1', text: 'hi', wait: true });
    expect(await sessionAgent(h, 'gateway:web:w1')).toBe('main');
    const [plain] = chatRequests(h.fake, mark);
    expect(allContents(plain!).join('\n')).toContain('You are the main agent.');
    expect((plain!.tools ?? []).length).toBeGreaterThan(toolNames.length);
  });

  it("a session's agent is sticky, and a requested agent decides a new session; unknown 404, not allowed 403", async () => {
    const h = rig;
    await h.message({ platform: 'web', user_id: 'u', chat_id: 'asked', text: 'x', agent: 'support', wait: true });
    expect(await sessionAgent(h, 'gateway:web:asked')).toBe('support');
    await h.message({ platform: 'web', user_id: 'u', chat_id: 'asked', text: 'again', wait: true });
    expect(await sessionAgent(h, 'gateway:web:asked')).toBe('support');

    const ghost = await h.message({ platform: 'web', user_id: 'u', chat_id: 'g', text: 'x', agent: 'ghost' });
    expect(ghost.statusCode).toBe(404);
    expect(ghost.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
    const denied = await h.message({ platform: 'web', user_id: 'u', chat_id: 'd', text: 'x', agent: 'support' }, alice);
    expect(denied.statusCode).toBe(403);
    // Nothing was created by either.
    for (const key of ['gateway:web:g', 'gateway:web:d']) {
      const res = await h.inject({ method: 'GET', url: `/api/v1/sessions/${enc(key)}`, headers: adminHeaders });
      expect(res.statusCode).toBe(404);
    }

    const created = await h.inject({
      method: 'POST',
      url: '/api/v1/sessions',
      headers: apiHeaders,
      payload: { agent: 'support' },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ agent: 'support' });
    const refused = await h.inject({
      method: 'POST',
      url: '/api/v1/sessions',
      headers: alice,
      payload: { agent: 'support' },
    });
    expect(refused.statusCode).toBe(403);
  });

  it("/status names the session's agent and its model, and /new keeps the agent", async () => {
    const h = rig;
    await h.message({ platform: 'slack', user_id: 'u', chat_id: 'st', text: 'hello', wait: true });
    await h.message({ platform: 'slack', user_id: 'u', chat_id: 'st', text: '/new', wait: true });
    const status = await h.message({ platform: 'slack', user_id: 'u', chat_id: 'st', text: '/status', wait: true });
    expect(status.json<{ response: string }>().response).toMatch(/agent support, provider openai:gpt-4o-mini/);
    expect(await sessionAgent(h, 'gateway:slack:st')).toBe('support');
  });

  it('GET /whoami and GET /agents show each principal what it may use; another agent is 404 to it', async () => {
    const h = rig;
    const me = await h.inject({ method: 'GET', url: '/api/v1/whoami', headers: alice });
    expect(me.json()).toEqual({ principal: 'alice', role: 'api', agents: ['main'] });
    const owner = await h.inject({ method: 'GET', url: '/api/v1/whoami', headers: apiHeaders });
    expect(owner.json()).toEqual({ principal: 'default', role: 'api', agents: ['main', 'support'] });
    const admin = await h.inject({ method: 'GET', url: '/api/v1/whoami', headers: adminHeaders });
    expect(admin.json()).toMatchObject({ role: 'admin' });

    const list = await h.inject({ method: 'GET', url: '/api/v1/agents', headers: alice });
    expect(list.json<{ items: Array<{ id: string }> }>().items.map((a) => a.id)).toEqual(['main']);
    const all = await h.inject({ method: 'GET', url: '/api/v1/agents', headers: adminHeaders });
    const items = all.json<{ items: Array<{ id: string; tools: string[]; default: boolean; provider: string }> }>()
      .items;
    expect(items.map((a) => a.id)).toEqual(['main', 'support']);
    expect(items[0]).toMatchObject({ default: true, provider: 'openai' });
    expect(items[1]!.tools.every((name) => name.startsWith('knowledge_'))).toBe(true);

    expect((await h.inject({ method: 'GET', url: '/api/v1/agents/support', headers: alice })).statusCode).toBe(404);
    expect((await h.inject({ method: 'GET', url: '/api/v1/agents/ghost', headers: adminHeaders })).statusCode).toBe(
      404,
    );
    const one = await h.inject({ method: 'GET', url: '/api/v1/agents/support', headers: apiHeaders });
    expect(one.json()).toMatchObject({ id: 'support', default: false });
  });

  it('bindings apply live through PATCH /config to new sessions; a binding to an unknown agent is a 400 naming the key', async () => {
    const h = rig;
    const bad = await h.inject({
      method: 'PATCH',
      url: '/api/v1/config',
      headers: adminHeaders,
      payload: { bindings: [{ agent: 'nobody', match: { channel: 'web' } }] },
    });
    expect(bad.statusCode).toBe(400);
    expect(JSON.stringify(bad.json())).toContain('bindings.0.agent');

    const ok = await h.inject({
      method: 'PATCH',
      url: '/api/v1/config',
      headers: adminHeaders,
      payload: { bindings: [{ agent: 'support', match: { channel: 'web' } }] },
    });
    expect(ok.statusCode).toBe(200);
    await h.message({ platform: 'web', user_id: 'u', chat_id: 'after', text: 'x', wait: true });
    expect(await sessionAgent(h, 'gateway:web:after')).toBe('support');
  });
});

describe('agents as OpenAI model names', () => {
  const rig = useHarness({ fake: { always: echoReply }, config: AGENTS });

  it('/v1/models lists gatehouse and gatehouse/<agent> per agent the token may use; the model selects the agent', async () => {
    const h = rig;
    const models = async (headers: Record<string, string>) =>
      (await h.inject({ method: 'GET', url: '/v1/models', headers }))
        .json<{ data: Array<{ id: string }> }>()
        .data.map((m) => m.id);
    expect(await models(apiHeaders)).toEqual(['gatehouse', 'gatehouse/main', 'gatehouse/support']);
    expect(await models(alice)).toEqual(['gatehouse', 'gatehouse/main']);

    const complete = (model: string, headers: Record<string, string>, chat: string) =>
      h.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { ...headers, 'x-session-key': chat },
        payload: { model, messages: [{ role: 'user', content: 'hi' }] },
      });
    const res = await complete('gatehouse/support', apiHeaders, 'oa-1');
    expect(res.statusCode).toBe(200);
    const key = res.headers['x-gatehouse-event-id'] as string;
    const turn = await h.inject({ method: 'GET', url: `/api/v1/turns/${key}`, headers: adminHeaders });
    expect(await sessionAgent(h, turn.json<{ session_key: string }>().session_key)).toBe('support');

    const hidden = await complete('gatehouse/support', alice, 'oa-2');
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json()).toMatchObject({ error: { code: 'model_not_found' } });
    expect((await complete('gpt-4o', apiHeaders, 'oa-3')).statusCode).toBe(404);
  });
});

describe('spend caps of an agent and of a principal (DECISIONS §17-18)', () => {
  const BOB = { 'x-api-token': 'bob-token-0123456789abcdef' };
  const rig = useHarness({
    fake: { always: echoReply },
    config: {
      agents: { main: { budget: { daily_usd: 0.000001 } }, support: {} },
      gateway: {
        auth: {
          principals: [
            { id: 'alice', tokens: [ALICE_TOKEN], budget: { daily_usd: 0.000001 } },
            { id: 'bob', tokens: [BOB['x-api-token']] },
          ],
        },
      },
    },
  });
  const ask = async (headers: Record<string, string>, chat: string, agent: string) => {
    const res = await rig.message(
      { platform: 'web', user_id: 'u', chat_id: chat, text: 'spend', agent, wait: true },
      headers,
    );
    expect(res.statusCode).toBe(200);
    return res.json<{ status: string; event_id: string }>();
  };
  const reason = async (eventId: string) =>
    (await rig.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders })).json<{
      termination_reason: string;
    }>().termination_reason;

  it("a principal's cap stops only its own turns, an agent's cap only that agent's", async () => {
    expect((await ask(alice, 'a1', 'support')).status).toBe('completed');
    const stopped = await ask(alice, 'a2', 'support');
    expect(stopped.status).toBe('incomplete');
    expect(await reason(stopped.event_id)).toBe('budget_exceeded');
    expect((await ask(BOB, 'b1', 'support')).status).toBe('completed'); // alice's spend is not bob's

    expect((await ask(BOB, 'b2', 'main')).status).toBe('completed');
    const main = await ask(apiHeaders, 'd1', 'main'); // main's cap is spent, whoever spent it
    expect(main.status).toBe('incomplete');
    expect((await ask(apiHeaders, 'd2', 'support')).status).toBe('completed');
  });
});

describe('an agent naming a tool the gateway lacks (DECISIONS §17)', () => {
  const rig = useHarness({ config: { agents: { main: {} }, mcp: { servers: { files: { command: 'true' } } } } });

  it('is refused at start-up with the key named, and nothing is left running', async () => {
    const start = startHarness({
      config: { agents: { main: { tools: { allow: ['knowledge_*', 'shell'], deny: [] } } } },
    });
    const err = await start.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([
      expect.objectContaining({ path: 'agents.main.tools.allow.1', message: expect.stringContaining('"shell"') }),
    ]);
  });

  it('is a 400 from PATCH /config naming the key; MCP tools of a configured server pass', async () => {
    const patch = (agent: Record<string, unknown>) =>
      rig.inject({
        method: 'PATCH',
        url: '/api/v1/config',
        headers: adminHeaders,
        payload: { agents: { main: agent } },
      });
    const bad = await patch({ approval_required: ['memory_save', 'rm_rf'] });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({
      error: { details: [expect.objectContaining({ path: 'agents.main.approval_required.1' })] },
    });
    const otherServer = await patch({ tools: { allow: ['mcp__github__create_issue'], deny: [] } });
    expect(otherServer.statusCode).toBe(400);
    expect(JSON.stringify(otherServer.json())).toContain('agents.main.tools.allow.0');
    const ok = await patch({ tools: { allow: ['memory_*', 'mcp__files__read', 'mcp__*'], deny: ['memory_save'] } });
    expect(ok.statusCode).toBe(200);
  });
});
