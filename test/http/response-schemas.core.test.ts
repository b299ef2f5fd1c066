/**
 * The declared success responses of the core capabilities (sessions,
 * messages, turns, memory, knowledge, skills, tasks, cron) against what the
 * handlers really answer: every route is driven at least once, and each
 * answer must be declared for its status and content type, its JSON body
 * must parse with the declared schema, and the schema must name every key
 * the body carries (a presenter that grows a field fails here until the
 * schema does too). SSE answers have each event checked against the stream
 * schemas of its name.
 */
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { MESSAGE_STREAM_EVENTS, TURN_STREAM_EVENTS } from '../../src/turns/index.js';
import type { HttpMethod, RouteDef } from '../../src/http/route.js';
import { echoReply } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';
import { msg, recordingTool } from '../routes/builders.js';

/** The capabilities this file covers, by route tag. */
const TAGS = new Set(['sessions', 'messages', 'turns', 'memory', 'knowledge', 'skills', 'tasks', 'cron']);

type EventSchemas = Readonly<Record<string, z.ZodType>>;

/** Routes driven so far (`METHOD path`), and every covered route seen in a gateway. */
const driven = new Set<string>();
const covered = new Map<string, RouteDef>();

const keyOf = (route: Pick<RouteDef, 'method' | 'path'>): string => `${route.method} ${route.path}`;

interface Call {
  params?: Record<string, string>;
  query?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** SSE event schemas by event name, for a `text/event-stream` answer. */
  events?: EventSchemas;
}

/** Calls route `method path` (as declared, e.g. `/sessions/:session_id`) with the admin token and checks the answer. */
async function drive(h: Harness, method: HttpMethod, path: string, call: Call = {}): Promise<LightMyRequestResponse> {
  const route = h.internals.routes.find((r) => r.method === method && r.path === path);
  if (!route) throw new Error(`no route ${method} ${path}`);
  for (const r of h.internals.routes) if (r.tags?.some((tag) => TAGS.has(tag))) covered.set(keyOf(r), r);
  const url =
    '/api/v1' +
    path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeURIComponent(call.params?.[name] ?? '')) +
    (call.query ?? '');
  const res = await h.inject({
    method,
    url,
    headers: { ...adminHeaders, ...call.headers },
    ...(call.body !== undefined ? { payload: call.body as Record<string, unknown> } : {}),
  });
  conform(route, res, call.events);
  driven.add(keyOf(route));
  return res;
}

/** Fails unless `res` is a declared response of `route` whose schema names exactly what it carries. */
function conform(route: RouteDef, res: LightMyRequestResponse, events: EventSchemas | undefined): void {
  const label = `${keyOf(route)} → ${res.statusCode}`;
  expect(res.statusCode, `${label}: not a success: ${res.body}`).toBeLessThan(300);
  const contentType = String(res.headers['content-type'] ?? '').split(';')[0]!;
  const declared = (route.responses ?? []).filter((r) => r.status === res.statusCode);
  expect(declared, `${label}: status not declared`).not.toHaveLength(0);
  if (res.statusCode === 204) {
    expect(res.body, `${label}: a 204 has no body`).toBe('');
    expect(
      declared.some((r) => r.schema === undefined),
      `${label}: declared with a body`,
    ).toBe(true);
    return;
  }
  const response = declared.find((r) => (r.contentType ?? 'application/json') === contentType);
  expect(response, `${label}: content type ${contentType} not declared`).toBeDefined();
  if (contentType === 'text/event-stream') {
    expect(events, `${label}: give the event schemas of the stream`).toBeDefined();
    const stream = parseSse(res.body);
    expect(stream, `${label}: an empty stream`).not.toHaveLength(0);
    for (const event of stream) {
      const schema = events?.[event.event];
      expect(schema, `${label}: undeclared event ${event.event}`).toBeDefined();
      expectShape(schema!, event.data, `${label} event ${event.event}`);
    }
    return;
  }
  expect(response!.schema, `${label}: declared without a schema`).toBeDefined();
  expectShape(response!.schema!, res.json(), label);
}

/** `value` parses with `schema`, and nothing of it is left out by the schema. */
function expectShape(schema: z.ZodType, value: unknown, label: string): void {
  const result = schema.safeParse(value);
  if (!result.success) expect.fail(`${label}: ${z.prettifyError(result.error)}\n${JSON.stringify(value)}`);
  expect(result.data, `${label}: keys the schema does not declare`).toEqual(value);
}

const json = <T>(res: LightMyRequestResponse): T => res.json<T>();

describe('declared responses of the core routes', () => {
  const lookup = recordingTool('lookup', (args) => ({ found: String(args.value) }));
  const risky = recordingTool('risky', () => 'did it');
  const rig = useHarness({
    fake: { always: echoReply },
    tools: [lookup, risky],
    config: { agent: { approval_required: ['risky'] } },
  });

  it('sessions, messages and turns', async () => {
    const h: Harness = rig;
    const created = json<{ id: string }>(
      await drive(h, 'POST', '/sessions', { body: { channel: 'api', metadata: { team: 'a' } } }),
    );
    const session = { session_id: created.id };
    await drive(h, 'GET', '/sessions', { query: '?limit=1' });
    await drive(h, 'GET', '/sessions/:session_id', { params: session });

    rig.fake.enqueue(
      { tool_calls: [{ id: 'call_l', name: 'lookup', arguments: { value: 'x' } }] },
      { content: 'looked it up' },
    );
    await drive(h, 'POST', '/sessions/:session_id/messages', { params: session, body: { content: 'look up x' } });
    await drive(h, 'POST', '/sessions/:session_id/messages', {
      params: session,
      body: { content: 'and stream it' },
      headers: { accept: 'text/event-stream' },
      events: MESSAGE_STREAM_EVENTS,
    });
    await drive(h, 'GET', '/sessions/:session_id/history', { params: session });

    const accepted = json<{ event_id: string }>(await drive(h, 'POST', '/message', { body: msg('no wait', 'c1') }));
    await h.internals.messages.waitFor(accepted.event_id, 5_000);
    const done = json<{ event_id: string; session_key: string }>(
      await drive(h, 'POST', '/message', { body: msg('wait', 'c1', { wait: true }) }),
    );
    const turn = { event_id: done.event_id };
    await drive(h, 'GET', '/turns/:event_id', { params: turn });
    await drive(h, 'GET', '/sessions/:session_id/turns', { params: { session_id: done.session_key } });
    const events = await drive(h, 'GET', '/turns/:event_id/events', { params: turn, events: TURN_STREAM_EVENTS });
    const lastId = parseSse(events.body).at(-1)?.id;
    expect(lastId).toBeDefined();
    // Resumed after the end: nothing left to send.
    const resumed = await drive(h, 'GET', '/turns/:event_id/events', {
      params: turn,
      headers: { 'last-event-id': lastId! },
      events: TURN_STREAM_EVENTS,
    });
    expect(resumed.statusCode).toBe(204);

    for (const [chat, resolution] of [
      ['c2', 'approve'],
      ['c3', 'deny'],
    ] as const) {
      rig.fake.enqueue({ tool_calls: [{ id: `call_${chat}`, name: 'risky', arguments: {} }] });
      const paused = json<{ status: string; event_id: string }>(
        await drive(h, 'POST', '/message', { body: msg('do the risky thing', chat, { wait: true }) }),
      );
      expect(paused.status).toBe('waiting_approval');
      await drive(h, 'GET', '/turns/:event_id', { params: { event_id: paused.event_id } });
      await drive(h, 'GET', '/turns', {});
      await drive(h, 'POST', `/turns/:event_id/${resolution}`, { params: { event_id: paused.event_id } });
      await h.internals.messages.waitFor(paused.event_id, 5_000);
    }

    rig.fake.enqueue({ tool_calls: [{ id: 'call_q', name: 'ask_user', arguments: { question: 'Which city?' } }] });
    const asked = json<{ status: string }>(
      await drive(h, 'POST', '/message', { body: msg('weather?', 'c4', { wait: true }) }),
    );
    expect(asked.status).toBe('waiting_clarification');

    await drive(h, 'DELETE', '/sessions/:session_id', { params: session });
  });

  it('memory', async () => {
    const h: Harness = rig;
    const entry = json<{ id: string }>(
      await drive(h, 'POST', '/memory', { body: { content: 'The sky is blue', tags: ['sky'], key: 'sky' } }),
    );
    await drive(h, 'POST', '/memory', { body: { content: 'Grass is green' } });
    await drive(h, 'GET', '/memory');
    await drive(h, 'GET', '/memory', { query: '?query=sky&limit=5' });
    await drive(h, 'GET', '/memory/:id', { params: { id: entry.id } });
    await drive(h, 'GET', '/memory/:id', { params: { id: 'sky' } });
    await drive(h, 'PUT', '/memory/:id', { params: { id: entry.id }, body: { tags: ['sky', 'colour'] } });
    await drive(h, 'DELETE', '/memory/:id', { params: { id: 'sky' } });
  });

  it('knowledge', async () => {
    const h: Harness = rig;
    const doc = json<{ id: string }>(
      await drive(h, 'POST', '/knowledge', {
        body: { title: 'Runbook', content: 'Restart the fox service when it stalls.', metadata: { team: 'ops' } },
      }),
    );
    await drive(h, 'GET', '/knowledge');
    await drive(h, 'GET', '/knowledge', { query: '?query=fox&top_k=3' });
    await drive(h, 'GET', '/knowledge/:id', { params: { id: doc.id } });
    await drive(h, 'POST', '/knowledge/:id/reindex', { params: { id: doc.id } });
    await drive(h, 'DELETE', '/knowledge/:id', { params: { id: doc.id } });
  });

  it('skills', async () => {
    const h: Harness = rig;
    const skill = json<{ id: string; name: string }>(
      await drive(h, 'POST', '/skills', {
        body: { name: 'pdf-forms', description: 'Fill PDF forms', instructions: 'Open the form.', category: 'docs' },
      }),
    );
    await drive(h, 'POST', '/skills', {
      body: { skill_md: '---\nname: notes\ndescription: Take notes\n---\nWrite them down.\n' },
    });
    const id = { skill_id: skill.id };
    await drive(h, 'GET', '/skills');
    await drive(h, 'GET', '/skills/:skill_id', { params: id });
    await drive(h, 'PUT', '/skills/:skill_id/status', { params: id, body: { status: 'disabled' } });
    await drive(h, 'POST', '/skills/:skill_id/enable', { params: id });
    await drive(h, 'POST', '/skills/:skill_id/disable', { params: id });
    await drive(h, 'POST', '/skills/:skill_id/enable', { params: id });

    // The agent proposes a revision: staged, evolved from the skill, then approved.
    rig.fake.enqueue(
      {
        tool_calls: [
          {
            id: 'call_p',
            name: 'propose_skill',
            arguments: { name: 'pdf-forms', description: 'Fill PDF forms better', instructions: 'Open it first.' },
          },
        ],
      },
      { content: 'proposed' },
    );
    expect(json<{ status: string }>(await h.message(msg('improve the skill', 'c1', { wait: true }))).status).toBe(
      'completed',
    );
    const staged = json<{ items: Array<{ id: string; evolved_from: string | null }> }>(
      await drive(h, 'GET', '/skills', { query: '?status=staged' }),
    ).items;
    expect(staged).toHaveLength(1);
    expect(staged[0]!.evolved_from).toBe(skill.id);
    await drive(h, 'POST', '/skills/:skill_id/approve', { params: { skill_id: staged[0]!.id } });
    await drive(h, 'DELETE', '/skills/:skill_id', { params: id });
  });

  it('tasks', async () => {
    const h: Harness = rig;
    const task = json<{ task: { id: string } }>(
      await drive(h, 'POST', '/tasks', {
        body: { title: 'Review', description: 'Read it', priority: 8, labels: ['x'], assignee: 'alice' },
      }),
    ).task;
    const id = { task_id: task.id };
    await drive(h, 'GET', '/tasks');
    await drive(h, 'GET', '/tasks/:task_id', { params: id });
    await drive(h, 'PATCH', '/tasks/:task_id', { params: id, body: { status: 'running', progress: 0.5 } });
    await drive(h, 'DELETE', '/tasks/:task_id', { params: id });

    // An agent task runs in its own session, with its turn and result.
    const agent = json<{ task: { id: string } }>(await drive(h, 'POST', '/tasks', { body: { title: 'Say hi' } })).task;
    await vi.waitFor(
      async () => {
        const res = await drive(h, 'GET', '/tasks/:task_id', { params: { task_id: agent.id } });
        expect(json<{ task: { status: string } }>(res).task.status).toBe('completed');
      },
      { timeout: 10_000, interval: 20 },
    );
  });

  it('cron', async () => {
    const h: Harness = rig;
    const job = json<{ id: string }>(
      await drive(h, 'POST', '/cron', { body: { schedule: '0 9 * * 1', prompt: 'hi' } }),
    );
    const id = { cron_id: job.id };
    await drive(h, 'GET', '/cron');
    await drive(h, 'GET', '/cron/:cron_id', { params: id });
    await drive(h, 'PUT', '/cron/:cron_id', { params: id, body: { enabled: false } });
    await drive(h, 'PUT', '/cron/:cron_id', { params: id, body: { enabled: true } });
    await drive(h, 'POST', '/cron/:cron_id/trigger', { params: id });
    await drive(h, 'POST', '/cron/:cron_id/authorize', { params: id });
    const run = json<{ event_id: string }>(await drive(h, 'POST', '/cron/:cron_id/trigger', { params: id }));
    await h.internals.messages.waitFor(run.event_id, 5_000);
    await drive(h, 'GET', '/cron/:cron_id/runs', { params: id });
    await drive(h, 'POST', '/cron/:cron_id/revoke', { params: id });
    await drive(h, 'DELETE', '/cron/:cron_id', { params: id });
  });

  // Last: the tests above run first, in order, in this file.
  it('drives every route of these capabilities; each declared schema converts to JSON Schema', () => {
    expect(covered.size).toBeGreaterThan(0);
    expect([...covered.keys()].filter((key) => !driven.has(key))).toEqual([]);
    for (const route of covered.values()) {
      for (const response of route.responses ?? []) {
        if (response.schema) expect(() => z.toJSONSchema(response.schema!, { io: 'output' })).not.toThrow();
      }
    }
  });
});
