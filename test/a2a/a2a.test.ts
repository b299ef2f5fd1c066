/**
 * A2A (DECISIONS §22) against a listening gateway, with the official `@a2a-js/sdk` client only: card discovery,
 * blocking and streaming sends, get, cancel, resubscribe after a dropped stream (Last-Event-ID), an approval pause,
 * keyed retries, isolation between principals, the guard's 401 and malformed requests in JSON-RPC's shape.
 */
import { Role, TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  ClientFactory,
  ClientFactoryOptions,
  createAuthenticatingFetchWithRetry,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/lib/version.js';
import { deferred } from '../helpers/deferred.js';
import { allContents, chatRequests, echoReply, HASHED_EMBEDDINGS } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness } from '../helpers/harness.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef';

const CONFIG = {
  agents: { main: {}, support: { approval_required: ['memory_save'] } },
  gateway: {
    auth: {
      principals: [
        { id: 'alice', tokens: [ALICE], agents: ['main'] },
        { id: 'bob', tokens: [BOB] },
      ],
    },
  },
};

/** `fetch` with `token` as the bearer token: the SDK's authenticating fetch. */
function authedFetch(token: string): typeof fetch {
  return createAuthenticatingFetchWithRetry(fetch, {
    headers: () => Promise.resolve({ Authorization: `Bearer ${token}` }),
    shouldRetryWithHeaders: () => Promise.resolve(undefined),
  });
}

/** A user message as the SDK's client types it. */
function userMessage(text: string, extra: Partial<Message> = {}): Message {
  return {
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

function request(message: Message) {
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

/** The text of a task's reply artifact. */
function replyOf(task: Task): string {
  return task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');
}

/** The text of a status message. */
function noteOf(task: Pick<Task, 'status'>): string {
  const part = task.status?.message?.parts[0]?.content;
  return part?.$case === 'text' ? part.value : '';
}

/** The turn event number an event carries. */
function seqOf(event: StreamResponse): number | undefined {
  const value = event.payload?.value as { metadata?: { gatehouse?: { seq?: number } } } | undefined;
  return value?.metadata?.gatehouse?.seq;
}

/** A compact view of a stream: its kinds, the text streamed and the states. */
function summary(events: StreamResponse[]): { kinds: string[]; text: string; states: TaskState[] } {
  let text = '';
  const states: TaskState[] = [];
  for (const event of events) {
    const payload = event.payload!;
    if (payload.$case === 'artifactUpdate') {
      const part = payload.value.artifact?.parts[0]?.content;
      if (part?.$case === 'text') text += part.value;
    } else if (payload.$case === 'statusUpdate') states.push(payload.value.status!.state);
    else if (payload.$case === 'task') states.push(payload.value.status!.state);
  }
  return { kinds: events.map((event) => event.payload!.$case), text, states };
}

describe('A2A at /a2a', () => {
  const t = useHarness({
    fake: { always: echoReply, alwaysEmbeddings: HASHED_EMBEDDINGS },
    scope: 'all',
    config: CONFIG,
  });
  let base = '';

  /** A client of the agent whose card is at `path` (relative to the gateway), calling with `token`. */
  const clientFor = async (token: string, path = ''): Promise<Client> => {
    const fetchImpl = authedFetch(token);
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    return factory.createFromUrl(`${base}/${path}`);
  };

  /** Reads a stream to its end. */
  const drain = async (stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> => {
    const events: StreamResponse[] = [];
    for await (const event of stream) events.push(event);
    return events;
  };

  beforeAll(async () => {
    base = await t.gateway.listen();
  });

  it('serves the default agent card without a token, with its JSON-RPC url and bearer auth', async () => {
    const card = await new DefaultAgentCardResolver().resolve(base);
    expect(card.name).toBe('Gatehouse');
    expect(card.version).toBe(packageVersion());
    expect(card.supportedInterfaces).toEqual([
      { url: `${base}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ]);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.securitySchemes.bearer?.scheme).toMatchObject({
      $case: 'httpAuthSecurityScheme',
      value: { scheme: 'Bearer' },
    });
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    expect(card.skills.length).toBeGreaterThan(0);
  });

  it("shows another agent's card only to a token that may use it", async () => {
    const support = `${base}/a2a/support/`;
    await expect(new DefaultAgentCardResolver().resolve(support)).rejects.toThrow(/404/);
    await expect(new DefaultAgentCardResolver({ fetchImpl: authedFetch(ALICE) }).resolve(support)).rejects.toThrow(
      /404/,
    );
    const card = await new DefaultAgentCardResolver({ fetchImpl: authedFetch(BOB) }).resolve(support);
    expect(card.supportedInterfaces[0]!.url).toBe(`${base}/a2a/support`);
    await expect(new DefaultAgentCardResolver().resolve(`${base}/a2a/nobody/`)).rejects.toThrow(/404/);
  });

  it('sends a message (blocking): a completed task with the reply; its context continues the session', async () => {
    const alice = await clientFor(ALICE);
    const first = (await alice.sendMessage(request(userMessage('hello there')))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(first)).toBe('fake: hello there');
    expect(first.id).toMatch(/^evt_/);
    expect(first.contextId).toMatch(/^~/);

    const second = (await alice.sendMessage(request(userMessage('and again', { contextId: first.contextId })))) as Task;
    expect(second.contextId).toBe(first.contextId);
    expect(replyOf(second)).toBe('fake: and again');
    expect(allContents(chatRequests(t.fake).at(-1)!)).toContain('hello there');

    // The turn's channel and source are a2a (analytics by channel, the turn inspector).
    const key = `gateway:a2a@alice:${first.contextId}`;
    const session = await t.adminGet(`/api/v1/sessions/${encodeURIComponent(key)}`);
    expect(session.json()).toMatchObject({ channel: 'a2a' });
    const record = await t.adminGet(`/api/v1/turns/${first.id}`);
    expect(record.json()).toMatchObject({ event_id: first.id, source: 'a2a' }); // what the turn inspector shows
    const analytics = await t.adminGet('/api/v1/analytics?group_by=channel');
    expect(Object.keys(analytics.json<{ by_channel: Record<string, unknown> }>().by_channel)).toContain('a2a');

    const got = await alice.getTask({ tenant: '', id: second.id, historyLength: undefined });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(got)).toBe('fake: and again');
    expect(got.contextId).toBe(first.contextId);
  });

  it('streams a message: the task, working, the reply in pieces, then completed', async () => {
    const alice = await clientFor(ALICE);
    const events = await drain(alice.sendMessageStream(request(userMessage('stream me'))));
    const { kinds, text, states } = summary(events);
    expect(kinds[0]).toBe('task');
    expect(kinds.at(-1)).toBe('statusUpdate');
    expect(states[0]).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(states).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(text).toBe('fake: stream me');
    expect(kinds.filter((kind) => kind === 'artifactUpdate').length).toBeGreaterThan(2);
    const seqs = events.map(seqOf).filter((seq) => seq !== undefined);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const task = events[0]!.payload!.value as Task;
    const got = await alice.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(replyOf(got)).toBe('fake: stream me');
  });

  it('cancels a working task; a finished one cannot be canceled', async () => {
    const alice = await clientFor(ALICE);
    const gate = deferred();
    t.fake.enqueue({ after: gate.promise, then: { content: 'too late' } });
    const stream = alice.sendMessageStream(request(userMessage('take your time')));
    let taskId = '';
    for await (const event of stream) {
      const payload = event.payload!;
      if (payload.$case === 'task') taskId = payload.value.id;
      if (payload.$case === 'statusUpdate' && payload.value.status?.state === TaskState.TASK_STATE_WORKING) break;
    }
    const canceled = await alice.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    gate.resolve();
    expect((await alice.getTask({ tenant: '', id: taskId, historyLength: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    );
    await expect(alice.cancelTask({ tenant: '', id: taskId, metadata: undefined })).rejects.toBeInstanceOf(
      TaskNotCancelableError,
    );
  });

  it('resubscribes after a dropped stream with Last-Event-ID: the remaining events, nothing lost or doubled', async () => {
    const alice = await clientFor(ALICE);
    const gate = deferred();
    t.fake.enqueue({ after: gate.promise, then: { content: 'alpha beta gamma delta', chunks: 4 } });
    let taskId = '';
    let lastSeq = 0;
    for await (const event of alice.sendMessageStream(request(userMessage('long answer')))) {
      const payload = event.payload!;
      if (payload.$case === 'task') taskId = payload.value.id;
      lastSeq = seqOf(event) ?? lastSeq;
      if (payload.$case === 'statusUpdate' && payload.value.status?.state === TaskState.TASK_STATE_WORKING) break;
    }
    expect(lastSeq).toBeGreaterThan(0);
    gate.resolve(); // the turn answers while no stream is open

    const resumed = await drain(
      alice.resubscribeTask({ tenant: '', id: taskId }, { serviceParameters: { 'Last-Event-ID': String(lastSeq) } }),
    );
    const { kinds, text, states } = summary(resumed);
    expect(kinds[0]).toBe('task');
    expect(text).toBe('alpha beta gamma delta');
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const seqs = resumed.map(seqOf).filter((seq) => seq !== undefined);
    expect(seqs.every((seq) => seq > lastSeq)).toBe(true);
    expect(new Set(seqs).size).toBe(seqs.length);

    // From the start (no Last-Event-ID), the whole reply again.
    expect(summary(await drain(alice.resubscribeTask({ tenant: '', id: taskId }))).text).toBe('alpha beta gamma delta');
  });

  it('an approval pause is input-required, at the agent /a2a/support', async () => {
    const bob = await clientFor(BOB, 'a2a/support/');
    t.fake.enqueue({ tool_calls: [{ name: 'memory_save', arguments: { content: 'remember this' } }] });
    const task = (await bob.sendMessage(request(userMessage('save it')))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(noteOf(task)).toContain('memory_save');
    const turn = await t.adminGet(`/api/v1/turns/${task.id}`);
    expect(turn.json()).toMatchObject({ status: 'waiting_approval' });
    const session = await t.adminGet(`/api/v1/sessions/${encodeURIComponent(`gateway:a2a@bob:${task.contextId}`)}`);
    expect(session.json()).toMatchObject({ agent: 'support' });
    // The turn is denied, so it ends (the model is told and answers).
    const denied = await t.inject({ method: 'POST', url: `/api/v1/turns/${task.id}/deny`, headers: adminHeaders });
    expect(denied.statusCode).toBe(200);
    const after = summary(await drain(bob.resubscribeTask({ tenant: '', id: task.id })));
    expect(after.states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('a retry with the same messageId is the same task and one model call', async () => {
    const alice = await clientFor(ALICE);
    const before = chatRequests(t.fake).length;
    const message = userMessage('charge once', { messageId: 'pay-1' });
    const original = (await alice.sendMessage(request(message))) as Task;
    const retry = (await alice.sendMessage(request(message))) as Task;
    expect(retry.id).toBe(original.id);
    expect(retry.contextId).toBe(original.contextId);
    expect(replyOf(retry)).toBe('fake: charge once');
    expect(chatRequests(t.fake).length).toBe(before + 1);
    // The same messageId with other text is the idempotency conflict: invalid params.
    await expect(alice.sendMessage(request({ ...message, parts: userMessage('other').parts }))).rejects.toBeInstanceOf(
      RequestMalformedError,
    );
  });

  it('a question of the agent is input-required with the question; a reply naming the task answers it', async () => {
    const alice = await clientFor(ALICE);
    t.fake.enqueue({ tool_calls: [{ name: 'ask_user', arguments: { question: 'Which colour?' } }] });
    const asked = (await alice.sendMessage(request(userMessage('paint it')))) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(noteOf(asked)).toBe('Which colour?');
    t.fake.enqueue({ content: 'blue it is' });
    const answered = (await alice.sendMessage(
      request(userMessage('blue', { taskId: asked.id, contextId: asked.contextId })),
    )) as Task;
    expect(answered.contextId).toBe(asked.contextId);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(answered)).toBe('blue it is');
    const done = await alice.getTask({ tenant: '', id: asked.id, historyLength: undefined });
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // A finished task takes no reply.
    await expect(alice.sendMessage(request(userMessage('again', { taskId: asked.id })))).rejects.toBeInstanceOf(
      RequestMalformedError,
    );
  });

  it("another principal's task is not found; its context id names the caller's own conversation", async () => {
    const [alice, bob] = [await clientFor(ALICE), await clientFor(BOB)];
    const mine = (await alice.sendMessage(request(userMessage('alice-only secret')))) as Task;
    await expect(bob.getTask({ tenant: '', id: mine.id, historyLength: undefined })).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
    await expect(bob.cancelTask({ tenant: '', id: mine.id, metadata: undefined })).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
    await expect(drain(bob.resubscribeTask({ tenant: '', id: mine.id }))).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(bob.sendMessage(request(userMessage('answer', { taskId: mine.id })))).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
    const theirs = (await bob.sendMessage(request(userMessage('hi', { contextId: mine.contextId })))) as Task;
    expect(theirs.contextId).toBe(mine.contextId);
    expect(allContents(chatRequests(t.fake).at(-1)!).join('\n')).not.toContain('alice-only');
    // Alice may not use the support agent: as absent as an unknown one.
    const refused = await fetch(`${base}/a2a/support`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: mine.id } }),
    });
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 'NOT_FOUND' } } });
  });

  it('a bad token is 401 in JSON-RPC shape, and the client rejects', async () => {
    const response = await fetch(`${base}/a2a`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong-token', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, data: { status: 401, code: 'UNAUTHORIZED' } },
    });
    const card = await new DefaultAgentCardResolver().resolve(base);
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch('wrong-token') })],
      }),
    );
    const client = await factory.createFromAgentCard(card);
    await expect(client.sendMessage(request(userMessage('hello')))).rejects.toThrow();
  });

  it('malformed requests answer the protocol errors, never a 5xx', async () => {
    const post = async (body: string) => {
      const response = await fetch(`${base}/a2a`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
        body,
      });
      expect(response.status, body).toBeLessThan(500);
      return (await response.json()) as { jsonrpc: string; error?: { code: number } };
    };
    expect((await post('{not json')).error?.code).toBe(-32700);
    expect((await post('[]')).error?.code).toBe(-32600);
    expect((await post('{"jsonrpc":"1.0","id":1,"method":"GetTask"}')).error?.code).toBe(-32600);
    expect((await post('{"jsonrpc":"2.0","id":1}')).error?.code).toBe(-32600);
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}')).error?.code).toBe(-32601);
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}')).error?.code).toBe(-32602);
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":[1]}')).error?.code).toBe(-32602);
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"evt_nope"}}')).error?.code).toBe(
      -32001,
    );
    const noText = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'SendMessage',
      params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ data: { a: 1 } }] } },
    });
    expect((await post(noText)).error?.code).toBe(-32602);
    for (const params of [
      '{"message":"text"}',
      '{"message":{"messageId":"m2","parts":5}}',
      '{"message":{"messageId":"m3","parts":[{"text":""}]}}',
      '{"message":{"messageId":"","parts":[{"text":"hi"}]}}',
    ]) {
      const answer = await post(`{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":${params}}`);
      expect(answer.error?.code, params).toBe(-32602);
    }
    // The SDK's decoder reads a numeric id as its text: no such task.
    expect((await post('{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":5}}')).error?.code).toBe(-32001);
  });
});
