/**
 * Huge payloads are bounded (ADR 0043): a tool result over `limits.payloads.max_tool_result_bytes` is cut with a
 * note before it is stored, streamed or sent; the model's context is a token budget read newest first, never
 * the whole history; many turns with large results at once stay within a memory bound.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { chatRequests, contentText, type FakeChatBody, type FakeReply } from '../helpers/fake-openai.js';
import { apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { msg, recordingTool } from '../routes/builders.js';
import { insertMessages, MiB, withMemoryPeaks } from './fixtures.js';

/** A full garbage collection (the flag set at run time; a fresh context picks up `gc`). */
function fullGc(): void {
  setFlagsFromString('--expose_gc');
  (runInNewContext('gc') as () => void)();
}
const enc = encodeURIComponent;

interface Waited {
  status: string;
  event_id: string;
  session_key: string;
  message: { tool_calls: Array<{ id: string; name: string; result?: unknown }> };
}

/** Calls the tool `big` when the last message is the user's; answers `done` once a tool result came back. */
const toolThenDone: FakeReply = (body) => {
  const last = body.messages?.at(-1);
  if (last?.role === 'tool') return { content: 'done' };
  return { tool_calls: [{ name: 'big', arguments: {} }] };
};

const bytesOf = (body: FakeChatBody) =>
  (body.messages ?? []).reduce((sum, m) => sum + Buffer.byteLength(contentText(m.content)), 0);

const ask = async (h: Harness, text: string, chat = 'c1') => {
  const res = await h.message(msg(text, chat, { wait: true, timeout_seconds: 120 }));
  expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
  return res.json<Waited>();
};

const history = async (h: Harness, chat = 'c1', limit = 100) => {
  const res = await h.inject({
    method: 'GET',
    url: `/api/v1/sessions/${enc(`gateway:api:${chat}`)}/history?limit=${limit}`,
    headers: apiHeaders,
  });
  expect(res.statusCode).toBe(200);
  return res.json<{ items: Array<{ role: string; content: string | null }>; total: number }>();
};

describe('a 1 MB tool result', () => {
  const rig = useHarness({ fake: { always: toolThenDone }, autoOpen: false });

  it('is stored, streamed, reported and sent to the model cut at max_tool_result_bytes, with a note', async () => {
    const big = recordingTool('big', () => 'x'.repeat(MiB));
    const h = await rig.open({ tools: [big] });
    const result = await ask(h, 'fetch it');
    expect(result.status).toBe('completed');
    const cap = h.config.limits.payloads.max_tool_result_bytes;
    expect(cap).toBe(262_144);

    // Sent: the model's second call carries the result cut, the note telling it so.
    const sent = chatRequests(rig.fake)[1]!.messages!.find((m) => m.role === 'tool')!;
    const sentText = contentText(sent.content);
    expect(Buffer.byteLength(sentText)).toBeLessThanOrEqual(cap);
    expect(Buffer.byteLength(sentText)).toBeGreaterThan(cap - 1024);
    expect(sentText).toContain(`the tool's result was ${MiB} bytes`);
    expect(sentText).toContain('limits.payloads.max_tool_result_bytes');

    // Stored: the history's tool message is the same cut text.
    const stored = (await history(h)).items.find((m) => m.role === 'tool')!;
    expect(stored.content).toBe(sentText);
    // Reported: the Message's tool_calls and the turn's stored tool_result event.
    expect(result.message.tool_calls[0]!.result).toBe(sentText);
    const events = await h.inject({
      method: 'GET',
      url: `/api/v1/turns/${result.event_id}/events`,
      headers: { ...apiHeaders, accept: 'text/event-stream' },
    });
    // The result twice (its `tool_result` event and the final Message's tool_calls), cut both times.
    expect(events.body.length).toBeLessThan(cap * 3);
    expect(events.body).toContain(`the tool's result was ${MiB} bytes`);
  });

  it('is cut at a smaller configured cap', async () => {
    const big = recordingTool('big', () => ({ rows: 'é'.repeat(MiB / 2) }));
    const h = await rig.open({ tools: [big], config: { limits: { payloads: { max_tool_result_bytes: 10_000 } } } });
    await ask(h, 'fetch it');
    const stored = (await history(h)).items.find((m) => m.role === 'tool')!;
    expect(Buffer.byteLength(stored.content!)).toBeLessThanOrEqual(10_000);
    expect(stored.content!.startsWith('{"rows":"éé')).toBe(true);
    expect(stored.content).toContain(`the tool's result was ${MiB + 11} bytes`);
  });
});

describe('a session with 100,000 stored messages', () => {
  const rig = useHarness({
    fake: { always: (body) => ({ content: `seen ${body.messages?.length ?? 0}` }) },
    autoOpen: false,
  });

  /** Inserts `count` messages into the session's current epoch, every 10,000th of them giant. */
  const fill = async (h: Harness, sessionKey: string, count: number) => {
    const db = h.internals.store.db;
    const session = await db
      .selectFrom('sessions')
      .select('context_epoch')
      .where('key', '=', sessionKey)
      .executeTakeFirstOrThrow();
    await insertMessages(db, {
      sessionKey,
      contextEpoch: session.context_epoch,
      count,
      idPrefix: 'msg_0000', // older than every id the gateway makes
      giantEvery: 10_000,
      giantBytes: 200_000,
      createdAt: '2026-11-01T00:00:00.000Z',
    });
  };

  it("sends the model only the budget's worth, newest first, the turn's own message last", async () => {
    const h = await rig.open({
      config: {
        limits: { payloads: { max_context_tokens: 4_000, max_message_tokens: 1_000, max_context_messages: 150 } },
      },
    });
    const first = await ask(h, 'hello');
    await fill(h, first.session_key, 100_000);
    // The newest stored message is a giant one: it is sent cut at the per-message cap.
    const db = h.internals.store.db;
    await db
      .updateTable('messages')
      .set({ content: 'n'.repeat(100_000) })
      .where('id', '=', 'msg_000000099999')
      .execute();
    await h.restart(); // rows written behind the gateway's back: its context cache knows nothing of them

    await ask(h, 'the newest question');
    const request = chatRequests(rig.fake).at(-1)!;
    const messages = request.messages!;
    expect(contentText(messages.at(-1)!.content)).toBe('the newest question');
    // 4,000 tokens of four bytes, plus each message's overhead: far from 100,000 messages.
    expect(bytesOf(request)).toBeLessThanOrEqual(4_000 * 4);
    expect(messages.length).toBeLessThanOrEqual(150);
    expect(messages.length).toBeGreaterThan(10);
    const cut = messages.find((m) => contentText(m.content).startsWith('nnn'))!;
    expect(Buffer.byteLength(contentText(cut.content))).toBeLessThanOrEqual(1_000 * 4);
    expect(contentText(cut.content)).toContain('this message is 100000 bytes');
    // What was sent is the newest history: the oldest message sent is recent.
    const texts = messages.map((m) => contentText(m.content));
    expect(texts).not.toContain('message 0');

    // The message count cap holds on its own too.
    const h2 = await rig.open({ config: { limits: { payloads: { max_context_messages: 20 } } } });
    const again = await ask(h2, 'hello');
    await fill(h2, again.session_key, 5_000);
    await h2.restart();
    await ask(h2, 'next');
    expect(chatRequests(rig.fake).at(-1)!.messages!.length).toBeLessThanOrEqual(20);
  });

  it('keeps a tool call with its results: a result whose call did not fit is never sent', async () => {
    const big = recordingTool('big', () => 'r'.repeat(3_000));
    const h = await rig.open({
      tools: [big],
      config: { limits: { payloads: { max_context_tokens: 1_000, max_message_tokens: 1_000 } } },
    });
    rig.fake.enqueue({
      tool_calls: [
        { id: 'c1', name: 'big', arguments: {} },
        { id: 'c2', name: 'big', arguments: {} },
      ],
    });
    rig.fake.enqueue({ content: 'first done' });
    await ask(h, 'one');
    await ask(h, 'two');
    for (const request of chatRequests(rig.fake)) {
      const messages = request.messages!;
      const calls = new Set(messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []));
      for (const m of messages.filter((m) => m.role === 'tool')) expect(calls.has(m.tool_call_id!)).toBe(true);
      expect(bytesOf(request)).toBeLessThanOrEqual(1_000 * 4);
    }
    // The step with two 3,000-byte results (over the 4,000-byte budget together) was sent whole, shrunk to fit.
    const withResults = chatRequests(rig.fake)[1]!.messages!;
    expect(withResults.filter((m) => m.role === 'tool')).toHaveLength(2);
  });
});

describe('100 turns at once, each with a 1 MB tool result', () => {
  const rig = useHarness({ fake: { always: toolThenDone }, autoOpen: false });

  it('all complete, each result held to the cap, and the heap stays bounded', async () => {
    const big = recordingTool('big', () => 'y'.repeat(MiB));
    const h = await rig.open({
      tools: [big],
      config: {
        agent: { max_concurrent_turns: 100, max_queued_turns: 1000 },
        // Shedding (limits.overload) is off here: all 100 are meant to run at once.
        limits: { overload: { memory_watermark_mb: null, max_event_loop_delay_ms: null, max_queue_wait_ms: 600_000 } },
        provider: { timeout_seconds: 120 },
      },
    });
    fullGc();
    const base = process.memoryUsage();
    const { result: results, peaks } = await withMemoryPeaks(base, () =>
      Promise.all(Array.from({ length: 100 }, (_, i) => ask(h, `go ${i}`, `chat${i}`))),
    );
    expect(results.map((r) => r.status)).toEqual(Array(100).fill('completed'));
    const cap = h.config.limits.payloads.max_tool_result_bytes;
    const db = h.internals.store.db;
    const longest = await db
      .selectFrom('messages')
      .select((eb) => eb.fn.max(eb.fn('length', ['content'])).as('n'))
      .where('role', '=', 'tool')
      .executeTakeFirstOrThrow();
    expect(Number(longest.n)).toBeLessThanOrEqual(cap);
    // What this test itself holds (the answers, the fake's record of every request) is let go first.
    results.length = 0;
    rig.fake.requests.length = 0;
    fullGc();
    const retained = process.memoryUsage().heapUsed - base.heapUsed;
    const figures = {
      heap_retained_mb: Math.round(retained / MiB),
      heap_base_mb: Math.round(base.heapUsed / MiB),
      heap_peak_mb: Math.round(peaks.heapUsed / MiB),
      rss_base_mb: Math.round(base.rss / MiB),
      rss_peak_mb: Math.round(peaks.rss / MiB),
    };
    console.info(`[payloads] 100 concurrent 1 MB tool results: ${JSON.stringify(figures)}`);
    // While they run, each tool's own 1 MB result is in memory (and, in this process, the fake provider's and the
    // client's copies of every request and answer): the peak is a figure. What stays once they are done —
    // context windows, idempotency records, anything holding a result — holds the capped 256 KB, not 1 MB.
    expect(peaks.heapUsed - base.heapUsed).toBeLessThan(600 * MiB);
    expect(retained).toBeLessThan(100 * MiB);
  }, 180_000);
});
