import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../helpers/deferred.js';
import { allContents, chatRequests, contentText, echoReply, type FakeReply } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';
import { msg, recordingTool } from './builders.js';

interface Waited {
  status: string;
  event_id: string;
  session_key: string;
  response: string | null;
  message: {
    id: string | null;
    content: string | null;
    status: string;
    tool_calls: Array<{ id: string; name: string; arguments: string; result?: unknown }>;
    cost: { input_tokens: number; output_tokens: number; total_usd: number };
  };
}
interface TurnView {
  event_id: string;
  status: string;
  current_tool: string | null;
  response: string | null;
  termination_reason: string | null;
  context_epoch: number;
  started_at: string | null;
  finished_at: string | null;
}
interface HistoryEntry {
  role: string;
  content: string | null;
  event_id: string;
  tool_calls?: Array<{ id: string; name: string; arguments: string }>;
  tool_call_id?: string;
  name?: string;
}

const enc = encodeURIComponent;

describe('the agent behind the message routes', () => {
  // Model calls a test does not script get the echo `fake: <text>`.
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  const ask = async (h: Harness, text: string, chat = 'c1') => {
    const res = await h.message(msg(text, chat, { wait: true }));
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Waited>();
  };
  const turn = async (h: Harness, eventId: string) => {
    const res = await h.adminGet(`/api/v1/turns/${eventId}`);
    expect(res.statusCode).toBe(200);
    return res.json<TurnView>();
  };
  const history = async (h: Harness, chat = 'c1') => {
    const res = await h.inject({
      method: 'GET',
      url: `/api/v1/sessions/${enc(`gateway:api:${chat}`)}/history`,
      headers: apiHeaders,
    });
    expect(res.statusCode).toBe(200);
    return res.json<{ items: HistoryEntry[] }>().items;
  };
  const resolveTurn = (h: Harness, eventId: string, how: 'approve' | 'deny', headers = adminHeaders) =>
    h.inject({ method: 'POST', url: `/api/v1/turns/${eventId}/${how}`, headers });
  const settled = async (h: Harness, eventId: string) => {
    const record = await h.internals.messages.waitFor(eventId, 5_000);
    expect(record).not.toBeNull();
    return record!;
  };

  describe('happy', () => {
    it('runs a tool round trip: tool_calls with results in the Message, history keeps the call and the result', async () => {
      const lookup = recordingTool('lookup', (args) => ({ found: `value of ${String(args.value)}` }));
      const h = await rig.open({ tools: [lookup] });
      rig.fake.enqueue(
        {
          tool_calls: [{ id: 'call_1', name: 'lookup', arguments: { value: 'x' } }],
          usage: { prompt_tokens: 100, completion_tokens: 10 },
        },
        { content: 'x is found', usage: { prompt_tokens: 200, completion_tokens: 20 } },
      );
      const result = await ask(h, 'look up x');
      expect(result.status).toBe('completed');
      expect(result.response).toBe('x is found');
      expect(lookup.calls).toEqual([{ value: 'x' }]);
      expect(result.message.tool_calls).toEqual([
        { id: 'call_1', name: 'lookup', arguments: '{"value":"x"}', result: { found: 'value of x' } },
      ]);
      expect(result.message.cost).toMatchObject({ input_tokens: 300, output_tokens: 30 });

      const calls = chatRequests(rig.fake);
      expect(calls).toHaveLength(2);
      expect(calls[0]!.tools?.map((t) => t.function.name)).toEqual(expect.arrayContaining(['lookup', 'ask_user']));
      const second = calls[1]!.messages ?? [];
      expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect(second[1]!.tool_calls?.[0]).toMatchObject({ id: 'call_1', function: { name: 'lookup' } });
      expect(second[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
      expect(JSON.parse(second[2]!.content as string)).toEqual({ found: 'value of x' });

      const entries = await history(h);
      expect(entries.map((e) => e.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(entries[1]!.tool_calls).toEqual([{ id: 'call_1', name: 'lookup', arguments: '{"value":"x"}' }]);
      expect(entries[2]).toMatchObject({ tool_call_id: 'call_1', name: 'lookup' });
      expect(entries[3]!.content).toBe('x is found');
      expect((await turn(h, result.event_id)).current_tool).toBeNull();
    });

    it('max_tool_iterations: a model that keeps calling tools ends incomplete (HTTP 200)', async () => {
      const loop = recordingTool('again');
      const h = await rig.open({ tools: [loop], config: { agent: { max_tool_iterations: 1 } } });
      rig.fake.always({ tool_calls: [{ name: 'again', arguments: {} }] });
      const result = await ask(h, 'loop forever');
      expect(result.status).toBe('incomplete');
      expect(result.message.status).toBe('incomplete');
      expect(loop.calls).toHaveLength(1);
      expect(chatRequests(rig.fake)).toHaveLength(2);
      const record = await turn(h, result.event_id);
      expect(record).toMatchObject({ status: 'incomplete', termination_reason: 'max_tool_iterations' });

      // The session stays usable: the next turn's context is valid for the model.
      rig.fake.always({ content: 'back to normal' });
      const next = await ask(h, 'hello');
      expect(next.status).toBe('completed');
      const roles = chatRequests(rig.fake)
        .at(-1)!
        .messages!.map((m) => m.role);
      expect(roles.at(-1)).toBe('user');
    });

    it('approval: waiting_approval answers 200; approve runs the tool and the turn completes', async () => {
      const risky = recordingTool('risky', () => 'did it');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue(
        { tool_calls: [{ id: 'call_r', name: 'risky', arguments: { value: 'go' } }] },
        { content: 'all done' },
      );
      const result = await ask(h, 'do the risky thing');
      expect(result.status).toBe('waiting_approval');
      expect(result.message.status).toBe('waiting_approval');
      expect(risky.calls).toHaveLength(0);
      expect(await turn(h, result.event_id)).toMatchObject({
        status: 'waiting_approval',
        current_tool: 'risky',
        finished_at: null,
      });

      const approved = await resolveTurn(h, result.event_id, 'approve');
      expect(approved.statusCode).toBe(200);
      expect(approved.json<TurnView>()).toMatchObject({ event_id: result.event_id, status: 'running' });
      const done = await settled(h, result.event_id);
      expect(done.status).toBe('completed');
      expect(done.response).toBe('all done');
      expect(risky.calls).toEqual([{ value: 'go' }]);
      const toolMessage = chatRequests(rig.fake)[1]!.messages!.find((m) => m.role === 'tool');
      expect(toolMessage).toMatchObject({ tool_call_id: 'call_r', content: 'did it' });
      expect(await turn(h, result.event_id)).toMatchObject({ status: 'completed', termination_reason: 'completed' });

      // The turn's event stream spans the pause: numbered on from where it stopped.
      const events = await h.inject({
        method: 'GET',
        url: `/api/v1/turns/${result.event_id}/events`,
        headers: apiHeaders,
      });
      const list = parseSse(events.body);
      expect(list.map((e) => e.id)).toEqual(list.map((_, i) => String(i + 1)));
      expect(list.map((e) => [e.event, (e.data as { status?: string }).status])).toEqual([
        ['status', 'running'],
        ['tool_call', undefined],
        ['status', 'waiting_approval'],
        ['status', 'running'],
        ['tool_result', undefined],
        ['delta', undefined],
        ['delta', undefined],
        ['delta', undefined],
        ['done', 'completed'],
      ]);
    });

    it('approval: deny does not run the tool, tells the model, and the turn runs to its end', async () => {
      const risky = recordingTool('risky');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ id: 'call_d', name: 'risky', arguments: {} }] }, { content: 'ok, I will not' });
      const result = await ask(h, 'do it');
      expect(result.status).toBe('waiting_approval');
      const denied = await resolveTurn(h, result.event_id, 'deny');
      expect(denied.statusCode).toBe(200);
      const done = await settled(h, result.event_id);
      expect(done.status).toBe('completed');
      expect(done.response).toBe('ok, I will not');
      expect(risky.calls).toHaveLength(0);
      const toolMessage = chatRequests(rig.fake)[1]!.messages!.find((m) => m.role === 'tool');
      expect(toolMessage?.tool_call_id).toBe('call_d');
      expect(contentText(toolMessage?.content)).toContain('denied');
    });

    it('a turn waiting for approval holds back the session’s later turns until it is resolved', async () => {
      const risky = recordingTool('risky');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ id: 'call_h', name: 'risky', arguments: {} }] }, { content: 'first reply' });
      const first = await ask(h, 'first');
      expect(first.status).toBe('waiting_approval');
      const second = (await h.message(msg('second', 'c1'))).json<{ event_id: string }>().event_id;
      const other = await ask(h, 'other session', 'c2');
      expect(other.status).toBe('completed');
      expect((await turn(h, second)).status).toBe('accepted');

      expect((await resolveTurn(h, first.event_id, 'approve')).statusCode).toBe(200);
      const secondDone = await settled(h, second);
      expect(secondDone.status).toBe('completed');
      expect((await turn(h, first.event_id)).status).toBe('completed');
      const contents = (await history(h)).map((e) => e.content);
      expect(contents.indexOf('first reply')).toBeLessThan(contents.indexOf('second'));
    });

    it('clarification: ask_user pauses with the question; the next message answers and both turns complete', async () => {
      const h = await rig.open();
      rig.fake.enqueue(
        { tool_calls: [{ id: 'call_q', name: 'ask_user', arguments: { question: 'Which city?' } }] },
        { content: 'Weather in Paris: sunny' },
      );
      const first = await ask(h, 'what is the weather?');
      expect(first.status).toBe('waiting_clarification');
      expect(first.response).toBe('Which city?');
      expect(await turn(h, first.event_id)).toMatchObject({
        status: 'waiting_clarification',
        response: 'Which city?',
      });

      const answer = await ask(h, 'Paris');
      expect(answer.event_id).not.toBe(first.event_id);
      expect(answer.status).toBe('completed');
      expect(answer.response).toBe('Weather in Paris: sunny');
      const calls = chatRequests(rig.fake);
      expect(calls).toHaveLength(2);
      const toolMessage = calls[1]!.messages!.find((m) => m.role === 'tool');
      expect(toolMessage).toMatchObject({ tool_call_id: 'call_q', content: 'Paris' });
      expect(await turn(h, first.event_id)).toMatchObject({
        status: 'completed',
        response: 'Weather in Paris: sunny',
      });
      expect(await turn(h, answer.event_id)).toMatchObject({ status: 'completed' });
    });

    it('budget: once daily_usd is spent the next turn ends incomplete without calling the provider', async () => {
      const h = await rig.open({ config: { budget: { daily_usd: 0.000001 } } });
      const first = await ask(h, 'spend');
      expect(first.status).toBe('completed');
      expect(first.message.cost.total_usd).toBeGreaterThan(0.000001);
      const second = await ask(h, 'spend more');
      expect(second.status).toBe('incomplete');
      expect(second.message.content).toBe('');
      expect(typeof second.message.id).toBe('string');
      expect(await turn(h, second.event_id)).toMatchObject({
        status: 'incomplete',
        termination_reason: 'budget_exceeded',
      });
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('budget is checked before every model call, also inside a tool loop', async () => {
      const step = recordingTool('step');
      const h = await rig.open({ tools: [step], config: { budget: { daily_usd: 0.000001 } } });
      rig.fake.enqueue({
        tool_calls: [{ name: 'step', arguments: {} }],
        usage: { prompt_tokens: 100, completion_tokens: 10 },
      });
      const result = await ask(h, 'go');
      expect(result.status).toBe('incomplete');
      expect(step.calls).toHaveLength(1);
      expect(chatRequests(rig.fake)).toHaveLength(1);
      expect(await turn(h, result.event_id)).toMatchObject({ termination_reason: 'budget_exceeded' });
      expect(result.message.tool_calls).toHaveLength(1);
    });

    it('/new starts a new context epoch; /status answers without a model call', async () => {
      const h = await rig.open();
      await ask(h, 'my name is Zebulon');
      const fresh = await ask(h, '/new');
      expect(fresh.status).toBe('completed');
      expect(fresh.response).toMatch(/new conversation/i);
      const status = await ask(h, '/status');
      expect(status.status).toBe('completed');
      expect(status.response).toContain('gateway:api:c1');
      expect(chatRequests(rig.fake)).toHaveLength(1);

      const after = await ask(h, 'what is my name?');
      const calls = chatRequests(rig.fake);
      expect(calls).toHaveLength(2);
      expect(allContents(calls[1]!).join('\n')).not.toContain('Zebulon');
      expect(calls[1]!.messages!.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['what is my name?']);
      expect((await turn(h, after.event_id)).context_epoch).toBe(1);
      const visible = (await history(h)).map((e) => e.content);
      expect(visible.join('\n')).not.toContain('Zebulon');
    });

    it("a session's turns run one at a time in arrival order", async () => {
      const h = await rig.open();
      const replyTo: FakeReply = (body) => ({ content: `reply to ${contentText(body.messages?.at(-1)?.content)}` });
      // The first answer waits until all three are accepted: turns run side by side would call the model meanwhile.
      const allAccepted = deferred();
      rig.fake.enqueue({ after: allAccepted.promise, then: replyTo });
      rig.fake.always(replyTo);
      const ids: string[] = [];
      for (const text of ['one', 'two', 'three']) {
        const res = await h.message(msg(text, 'order'));
        expect(res.statusCode).toBe(202);
        ids.push(res.json<{ event_id: string }>().event_id);
      }
      allAccepted.resolve();
      for (const id of ids) expect((await settled(h, id)).status).toBe('completed');
      const entries = await history(h, 'order');
      expect(entries.map((e) => e.content)).toEqual([
        'one',
        'reply to one',
        'two',
        'reply to two',
        'three',
        'reply to three',
      ]);
      const records = await Promise.all(ids.map((id) => turn(h, id)));
      for (let i = 1; i < records.length; i++) {
        expect(records[i]!.started_at! >= records[i - 1]!.finished_at!).toBe(true);
      }
      // Each model call saw the earlier turns complete.
      const calls = chatRequests(rig.fake);
      expect(calls.map((c) => c.messages?.length)).toEqual([1, 3, 5]);
    });

    it('different sessions run concurrently', async () => {
      const gate = deferred();
      const entered = deferred();
      const block = recordingTool('block', async () => {
        entered.resolve();
        await gate.promise;
        return 'released';
      });
      const h = await rig.open({ tools: [block] });
      rig.fake.enqueue({ tool_calls: [{ name: 'block', arguments: {} }] });
      const blocked = (await h.message(msg('blocked turn', 'sess-a'))).json<{ event_id: string }>().event_id;
      await entered.promise;
      // While session A is stuck in its tool, session B runs to the end.
      const other = await ask(h, 'free turn', 'sess-b');
      expect(other.status).toBe('completed');
      expect((await turn(h, blocked)).status).toBe('running');
      gate.resolve();
      expect((await settled(h, blocked)).status).toBe('completed');
    });
  });

  describe('errors', () => {
    it('approving or denying a turn that is not waiting → 400', async () => {
      const h = await rig.open();
      const done = await ask(h, 'plain');
      for (const how of ['approve', 'deny'] as const) {
        const res = await resolveTurn(h, done.event_id, how);
        expect(res.statusCode).toBe(400);
        expect(res.json<{ error: { code: string } }>().error.code).toBe('BAD_REQUEST');
      }
    });

    it('approving a turn that waits for a clarification → 400; it stays waiting', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ tool_calls: [{ name: 'ask_user', arguments: { question: 'Which?' } }] });
      const result = await ask(h, 'hm');
      expect(result.status).toBe('waiting_clarification');
      const res = await resolveTurn(h, result.event_id, 'approve');
      expect(res.statusCode).toBe(400);
      expect((await turn(h, result.event_id)).status).toBe('waiting_clarification');
    });

    it('an approval that lands while a later turn of the session finds itself blocked still resumes the turn', async () => {
      const risky = recordingTool('risky');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: {} }] }, { content: 'first done' });
      const first = await ask(h, 'first');
      expect(first.status).toBe('waiting_approval');
      // Force the interleaving: the approval is handled after the later turn saw the blocker,
      // before the queue learnt that it was blocked.
      const runner = h.internals.messages.runner;
      const original = runner.run.bind(runner);
      let approved: Promise<{ statusCode: number }> | undefined;
      runner.run = async (sessionKey, job) => {
        const result = await original(sessionKey, job);
        if (result === 'blocked' && !approved) {
          approved = resolveTurn(h, first.event_id, 'approve');
          await approved;
        }
        return result;
      };
      const second = (await h.message(msg('second', 'c1'))).json<{ event_id: string }>().event_id;
      await vi.waitFor(() => expect(approved).toBeDefined());
      expect((await approved!).statusCode).toBe(200);
      expect((await settled(h, first.event_id)).status).toBe('completed');
      expect((await settled(h, second)).status).toBe('completed');
      expect(risky.calls).toHaveLength(1);
    });

    it('approving twice → 400 the second time, and the tool runs once', async () => {
      const risky = recordingTool('risky');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: {} }] }, { content: 'done' });
      const result = await ask(h, 'go');
      const [a, b] = await Promise.all([
        resolveTurn(h, result.event_id, 'approve'),
        resolveTurn(h, result.event_id, 'approve'),
      ]);
      expect([a.statusCode, b.statusCode].sort()).toEqual([200, 400]);
      await settled(h, result.event_id);
      await h.internals.messages.idle(5_000);
      expect(risky.calls).toHaveLength(1);
    });

    it('a tool that throws reports the error to the model and the turn goes on', async () => {
      const broken = recordingTool('broken', () => {
        throw new Error('tool exploded');
      });
      const h = await rig.open({ tools: [broken] });
      rig.fake.enqueue({ tool_calls: [{ id: 'call_b', name: 'broken', arguments: {} }] }, { content: 'recovered' });
      const result = await ask(h, 'try');
      expect(result.status).toBe('completed');
      expect(result.message.tool_calls[0]!.result).toEqual({ error: 'tool exploded' });
      const toolMessage = chatRequests(rig.fake)[1]!.messages!.find((m) => m.role === 'tool');
      expect(contentText(toolMessage?.content)).toContain('tool exploded');
    });

    it('an unknown tool name is reported to the model, not run', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ tool_calls: [{ id: 'call_u', name: 'no_such_tool', arguments: {} }] }, { content: 'fine' });
      const result = await ask(h, 'try');
      expect(result.status).toBe('completed');
      expect(result.message.tool_calls[0]!.result).toEqual({ error: 'unknown tool no_such_tool' });
    });

    it('a provider failure in the middle of a tool loop fails the turn with 502', async () => {
      const step = recordingTool('step');
      const h = await rig.open({ tools: [step] });
      rig.fake.enqueue({ tool_calls: [{ name: 'step', arguments: {} }] }, { status: 503 });
      const res = await h.message(msg('go', 'c1', { wait: true }));
      expect(res.statusCode).toBe(502);
      const eventId = res.json<{ error: { details: { event_id: string } } }>().error.details.event_id;
      expect(await turn(h, eventId)).toMatchObject({ status: 'failed', termination_reason: 'provider_error' });
    });
  });

  describe('security', () => {
    it('approve and deny need an admin token', async () => {
      const risky = recordingTool('risky');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: {} }] }, { content: 'done' });
      const result = await ask(h, 'go');
      expect((await resolveTurn(h, result.event_id, 'approve', apiHeaders)).statusCode).toBe(403);
      expect((await resolveTurn(h, result.event_id, 'deny', apiHeaders)).statusCode).toBe(403);
      expect((await resolveTurn(h, result.event_id, 'approve', {} as typeof adminHeaders)).statusCode).toBe(401);
      expect(risky.calls).toHaveLength(0);
      expect((await turn(h, result.event_id)).status).toBe('waiting_approval');
    });

    it('a tool needing approval is never run by the model alone, even when called repeatedly', async () => {
      const risky = recordingTool('risky');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({
        tool_calls: [
          { id: 'a', name: 'risky', arguments: {} },
          { id: 'b', name: 'risky', arguments: {} },
        ],
      });
      const result = await ask(h, 'go');
      expect(result.status).toBe('waiting_approval');
      expect(risky.calls).toHaveLength(0);
      rig.fake.enqueue({ content: 'finished' });
      expect((await resolveTurn(h, result.event_id, 'approve')).statusCode).toBe(200);
      // The second call needs its own approval.
      const paused = await settled(h, result.event_id);
      expect(paused.status).toBe('waiting_approval');
      expect(risky.calls).toHaveLength(1);
      expect((await resolveTurn(h, result.event_id, 'deny')).statusCode).toBe(200);
      expect((await settled(h, result.event_id)).status).toBe('completed');
      expect(risky.calls).toHaveLength(1);
    });

    it('a pending question is answered only from its own session', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ tool_calls: [{ name: 'ask_user', arguments: { question: 'Name?' } }] });
      const first = await ask(h, 'hi', 'owner');
      expect(first.status).toBe('waiting_clarification');
      const stranger = await ask(h, 'Mallory', 'stranger');
      expect(stranger.status).toBe('completed');
      expect(stranger.response).toBe('fake: Mallory');
      expect((await turn(h, first.event_id)).status).toBe('waiting_clarification');
      const answer = await ask(h, 'Bob', 'owner');
      expect(answer.status).toBe('completed');
      expect((await turn(h, first.event_id)).status).toBe('completed');
    });
  });
});
