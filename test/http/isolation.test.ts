/**
 * The isolation matrix (DECISIONS §18), generated from the route table: every
 * route × {the owner, another api principal, an admin}. Each api route must
 * have a rule here, so a new route is covered or this test fails:
 * - `owned`: its path names one of the owner's resources: the owner and an
 *   admin reach it, another principal gets 404 (never 403: existence must
 *   not leak);
 * - `list`: it lists or aggregates per principal: the other principal's
 *   answer never carries the owner's resources, the owner's and the admin's do;
 * - `shared`: what every principal shares (agents, knowledge, skills, docs…);
 * - `creates`: it creates the caller's own resource (its isolation is asserted
 *   by test/routes/principals.test.ts and test/routes/agents.test.ts).
 * Admin-only routes are refused to both api principals (403), and routes
 * without auth are shared; both are taken from the table, with no rule needed.
 */
import { describe, expect, it } from 'vitest';
import { concreteRoutes } from '../../src/http/server.js';
import type { RouteDef } from '../../src/http/route.js';
import { echoReply } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness } from '../helpers/harness.js';

const ALICE = { 'x-api-token': 'alice-token-0123456789abcdef' };
const BOB = { 'x-api-token': 'bob-token-0123456789abcdef' };

type Rule = 'owned' | 'list' | 'shared' | 'creates';

/** Every api route, by method and path (the same under both prefixes). */
const RULES: Record<string, Rule> = {
  'GET /sessions': 'list',
  'POST /sessions': 'creates',
  'GET /sessions/:session_id': 'owned',
  'DELETE /sessions/:session_id': 'owned',
  'GET /sessions/:session_id/history': 'owned',
  'POST /sessions/:session_id/messages': 'owned',
  'POST /message': 'creates',
  'GET /turns/:event_id/events': 'owned',
  'GET /memory': 'list',
  'GET /memory/:id': 'owned',
  'GET /tasks': 'list',
  'GET /tasks/:task_id': 'owned',
  'GET /analytics': 'list',
  'GET /analytics/cost': 'list',
  'GET /analytics/usage': 'list',
  'GET /analytics/summary': 'list',
  'GET /agents': 'shared',
  'GET /agents/:id': 'shared',
  'GET /whoami': 'shared',
  'GET /knowledge': 'shared',
  'GET /knowledge/:id': 'shared',
  'GET /skills': 'shared',
  'GET /skills/:skill_id': 'shared',
  'GET /channels': 'shared',
  'GET /channels/:channel_name': 'shared',
  'GET /config': 'shared',
  'POST /config/validate': 'shared',
  'POST /pair/verify': 'shared',
  'GET /openapi.json': 'shared',
  'GET /asyncapi.json': 'shared',
  'GET /metrics': 'shared',
  'GET /v1/models': 'shared',
  'POST /v1/chat/completions': 'creates',
  'POST /v1/responses': 'creates',
  'GET /v1/responses/:id': 'owned',
  'POST /v1/responses/:id/cancel': 'owned',
  // JSON-RPC to the MCP server: its tools' isolation is asserted by test/mcp/server.test.ts.
  'POST /mcp': 'creates',
  'GET /mcp': 'shared',
  'DELETE /mcp': 'shared',
  // JSON-RPC to A2A agents: its tasks' isolation is asserted by test/a2a/a2a.test.ts.
  'POST /a2a': 'creates',
  'POST /a2a/:agent': 'creates',
};

/** The owner's resources, found once: what `owned` paths name and `list` answers must (not) carry. */
interface Owned {
  sessionKey: string;
  /** The owner's session's messages before the matrix ran. */
  messageCount: number;
  eventId: string;
  memoryId: string;
  taskId: string;
}

describe('isolation matrix: every route × owner, another principal, admin', () => {
  const t = useHarness({
    fake: { always: echoReply },
    scope: 'all',
    config: {
      gateway: {
        auth: {
          principals: [
            { id: 'alice', tokens: [ALICE['x-api-token']] },
            { id: 'bob', tokens: [BOB['x-api-token']] },
          ],
        },
      },
    },
  });

  const owned = async (): Promise<Owned> => {
    t.fake.enqueue(
      {
        tool_calls: [
          { name: 'memory_save', arguments: { content: 'alice-only memory', key: 'alice-key' } },
          { name: 'task_create', arguments: { title: 'alice-only task' } },
        ],
      },
      { content: 'Done.' },
    );
    const sent = await t.message(
      { platform: 'web', user_id: 'a', chat_id: 'alice-chat', text: 'alice-only message', wait: true },
      ALICE,
    );
    expect(sent.statusCode).toBe(200);
    const { session_key: sessionKey, event_id: eventId } = sent.json<{ session_key: string; event_id: string }>();
    const memory = await t.inject({ method: 'GET', url: '/api/v1/memory?key=alice-key', headers: ALICE });
    const memoryId = memory.json<{ items: Array<{ id: string }> }>().items[0]!.id;
    const tasks = await t.inject({ method: 'GET', url: '/api/v1/tasks', headers: adminHeaders });
    const task = tasks
      .json<{ items: Array<{ id: string; title: string }> }>()
      .items.find((item) => item.title === 'alice-only task');
    const session = await t.inject({
      method: 'GET',
      url: `/api/v1/sessions/${encodeURIComponent(sessionKey)}`,
      headers: ALICE,
    });
    const messageCount = session.json<{ message_count: number }>().message_count;
    return { sessionKey, messageCount, eventId, memoryId, taskId: task!.id };
  };

  /** The URL of `route` with its parameters naming the owner's resources. */
  const urlOf = (url: string, mine: Owned) =>
    url
      .replace(':session_id', encodeURIComponent(mine.sessionKey))
      .replace(':event_id', mine.eventId)
      .replace(':task_id', mine.taskId)
      .replace(/\/memory\/:id$/, `/memory/${mine.memoryId}`)
      .replace(/\/v1\/responses\/:id/, `/v1/responses/resp_${mine.eventId}`)
      .replace(/:[a-z_]+/g, 'x1')
      .replace(/\/analytics\/cost$/, '/analytics/cost?group_by=session'); // names sessions: the owner's must not show

  const bodyOf = (route: RouteDef) =>
    route.path === '/sessions/:session_id/messages' ? { content: 'hello' } : route.method === 'GET' ? undefined : {};

  it('has a rule for every api route, and each holds for the owner, another principal and an admin', async () => {
    const mine = await owned();
    const routes = concreteRoutes(t.internals.routes, t.config.gateway.api_prefix);
    const missing = routes
      .filter(({ route }) => route.permission === 'api' && RULES[`${route.method} ${route.path}`] === undefined)
      .map(({ route }) => `${route.method} ${route.path}`);
    expect(missing, 'api routes without an isolation rule').toEqual([]);

    // Deleting comes last: it would take the owner's session away from the checks after it.
    const ordered = [...routes].sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
    for (const { method, url, route } of ordered) {
      const label = `${method} ${url}`;
      const target = urlOf(url, mine);
      const payload = bodyOf(route);
      const send = (headers: Record<string, string>) =>
        t.inject({ method, url: target, headers, ...(payload !== undefined ? { payload } : {}) });
      if (route.permission === 'admin') {
        expect((await send(BOB)).statusCode, label).toBe(403);
        expect((await send(ALICE)).statusCode, label).toBe(403);
        continue;
      }
      if (route.permission === 'none') continue;
      const rule = RULES[`${route.method} ${route.path}`]!;
      if (rule === 'owned') {
        const other = await send(BOB);
        expect(other.statusCode, `${label} as another principal`).toBe(404);
        expect(other.body, label).not.toContain('alice-only');
        if (method === 'GET') {
          expect((await send(ALICE)).statusCode, `${label} as the owner`).toBe(200);
          expect((await send(adminHeaders)).statusCode, `${label} as an admin`).toBe(200);
        }
      } else if (rule === 'list') {
        const other = await send(BOB);
        expect(other.statusCode, label).toBe(200);
        for (const marker of [mine.sessionKey, mine.eventId, mine.memoryId, mine.taskId, 'alice-only']) {
          expect(other.body, `${label} as another principal carries ${marker}`).not.toContain(marker);
        }
        expect((await send(ALICE)).statusCode, label).toBe(200);
      } else if (rule === 'shared') {
        const [a, b] = [await send(ALICE), await send(BOB)];
        expect(b.statusCode, label).toBe(a.statusCode);
        expect(b.body, label).not.toContain('alice-only');
      }
    }

    // The other principal's refused writes changed nothing: the owner's session is there, with its messages.
    const session = await t.inject({
      method: 'GET',
      url: `/api/v1/sessions/${encodeURIComponent(mine.sessionKey)}`,
      headers: ALICE,
    });
    expect(session.statusCode).toBe(200);
    expect(session.json()).toMatchObject({ message_count: mine.messageCount });
  });
});
