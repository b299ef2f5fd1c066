/**
 * Readers that don't read (ADR 0043, `limits.streams.max_buffered_bytes`):
 * many real SSE clients that send their request and never read, following
 * a turn that streams a long reply, or the logs follow under a flood. Each
 * is cut once its unsent bytes pass the bound, its follower is let go at
 * once, the server goes on answering everyone else, and a client that comes
 * back with `Last-Event-ID` gets the rest exactly once, in order.
 *
 * The gateway listens on a Unix socket: its kernel buffers (about 200 KB a
 * connection) fill far sooner than loopback TCP's (about 4 MB, and a TCP
 * receiver that never reads makes the kernel compact its queue on every
 * segment), so stalled clients reach the bound with little traffic.
 */
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { sseCounts } from '../../src/http/sse.js';
import type { LogEntry, LogPipeline } from '../../src/logs/index.js';
import { useCleanups } from '../helpers/cleanups.js';
import { deferred } from '../helpers/deferred.js';
import { adminHeaders, API_TOKEN, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { quietLogPipeline } from '../helpers/log-pipeline.js';
import { openSse, type SocketTarget } from '../helpers/sse-client.js';
import { completeEvents, deltaText } from '../helpers/sse.js';
import { msg, recordingTool } from '../routes/builders.js';
import { stalledClient, type StalledClient } from './stalled-client.js';

/** The bound under test: small, so the stalled clients pass it soon after their kernel buffers fill. */
const MAX_BUFFERED = 64 * 1024;
/** Model calls the long reply is streamed in, 40 000 characters each. */
const PIECES = 10;
const STALLED = 200;
/**
 * How long a reader waits for what it expects: a long stream on a loaded machine is slow, so only the test's
 * own timeout bounds it.
 */
const READ_WAIT = Infinity;

/** Text of `n` characters in pieces that tell where they are (so a duplicated or lost delta shows). */
const longText = (tag: string, n: number): string => {
  let out = '';
  for (let i = 0; out.length < n; i++) out += `${tag}${i}:${'x'.repeat(90)};`;
  return out.slice(0, n);
};

async function listenUnix(h: Harness): Promise<SocketTarget> {
  const path = join(h.config.data_dir, 'gw.sock');
  await h.gateway.app.listen({ path });
  return { path };
}

/** A tool that tells when it is entered (`entered`) and holds until the test opens `gate`. */
function holdingTool(name: string) {
  const entered = deferred();
  const gate = deferred();
  const tool = recordingTool(name, async () => {
    entered.resolve();
    await gate.promise;
    return 'held';
  });
  return { tool, entered, gate };
}

/** `n` stalled clients of `path`, opened one after the other, each destroyed at cleanup. */
async function stalledClients(
  cleanup: (cleanup: () => unknown) => void,
  n: number,
  target: SocketTarget,
  path: string,
  headers: Record<string, string>,
): Promise<StalledClient[]> {
  const stalled: StalledClient[] = [];
  for (let i = 0; i < n; i++) {
    const client = await stalledClient(target, path, headers);
    cleanup(() => client.socket.destroy());
    stalled.push(client);
  }
  return stalled;
}

describe('SSE: turn followers that never read', () => {
  const rig = useHarness({
    fake: true,
    autoOpen: false,
    config: {
      logs: { level: 'warning' },
      limits: { streams: { max_buffered_bytes: MAX_BUFFERED } },
      agent: { max_tool_iterations: 20 },
    },
  });
  const cleanup = useCleanups();

  it(`${STALLED} stalled followers of a long reply are cut; the rest goes on; a resumed one gets the rest once`, async () => {
    const { tool: hold1, entered: firstEntered, gate: first } = holdingTool('hold_one');
    const { tool: hold2, entered: secondEntered, gate: second } = holdingTool('hold_two');
    const step = recordingTool('step');
    const h = await rig.open({ tools: [hold1, hold2, step] });
    // The long reply comes in several model calls (a step tool between them), so what reaches the reader in one
    // go stays below the bound; the stalled clients, who take nothing, pass it.
    const pieces = Array.from({ length: PIECES }, (_, i) => longText(`a${i}-`, 40_000));
    const long1 = pieces.join('');
    const long2 = longText('b', 20_000);
    rig.fake.enqueue(
      { tool_calls: [{ name: 'hold_one', arguments: {} }] },
      ...pieces.map((content, i) => ({
        content,
        chunks: 40,
        tool_calls: [{ name: i === PIECES - 1 ? 'hold_two' : 'step', arguments: {} }],
      })),
      { content: long2, chunks: 20 },
    );
    const target = await listenUnix(h);
    const ack = await h.message(msg('talk at length', 'slow'));
    expect(ack.statusCode).toBe(202);
    const eventId = ack.json<{ event_id: string }>().event_id;
    await firstEntered.promise;

    const path = `/api/v1/turns/${eventId}/events`;
    const messages = h.internals.messages;
    const reader = await openSse(target, path, { headers: apiHeaders });
    cleanup(() => reader.close());
    expect(reader.status).toBe(200);
    // What one follower holds in the turn's event hub (its subscription and its watch of the ledger).
    await vi.waitFor(() => expect(messages.listenerCount()).toBeGreaterThan(0));
    const perFollower = messages.listenerCount();
    const stalled = await stalledClients(cleanup, STALLED, target, path, apiHeaders);
    await vi.waitFor(() => expect(messages.listenerCount()).toBe(perFollower * (STALLED + 1)), { timeout: 10_000 });
    expect(sseCounts(h.gateway.app)).toEqual({ open: STALLED + 1, endedSlow: 0 });

    // The long reply streams live to all of them; the turn then waits in its second tool.
    first.resolve();
    await secondEntered.promise;
    await reader.until(
      (e) => e.some((x) => x.event === 'tool_call' && (x.data as { name: string }).name === 'hold_two'),
      READ_WAIT,
      'the second tool call',
    );
    expect(deltaText(reader.events())).toBe(long1);

    // Every stalled client was cut past the bound and its follower let go; the reader still follows.
    await vi.waitFor(() => expect(sseCounts(h.gateway.app)).toEqual({ open: 1, endedSlow: STALLED }), {
      timeout: 10_000,
    });
    expect(messages.listenerCount()).toBe(perFollower);
    const warnings = h.logs.filter((line) => line.includes('SSE stream ended'));
    expect(warnings).toHaveLength(STALLED);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 'warning', max_buffered_bytes: MAX_BUFFERED });
    expect(warnings.some((line) => line.includes(apiHeaders['x-api-token']))).toBe(false);
    // The server answers others meanwhile.
    const turn = await h.adminGet(`/api/v1/turns/${eventId}`);
    expect(turn.json()).toMatchObject({ status: 'running', current_tool: 'hold_two' });

    // One stalled client reads at last: a prefix of the stream, ended before the reply's end.
    const { statusLine, body } = await stalled[0]!.readAll();
    expect(statusLine).toMatch(/^HTTP\/1\.1 200/);
    const seen = completeEvents(body);
    expect(seen.length).toBeGreaterThan(0);
    const seenText = deltaText(seen);
    expect(seenText.length).toBeLessThan(long1.length);
    expect(long1.startsWith(seenText)).toBe(true);
    const lastId = seen.at(-1)!.id!;

    // It resumes after the last event it got whole, and the turn goes on to its end.
    const resumed = await openSse(target, path, { headers: { ...apiHeaders, 'last-event-id': lastId } });
    cleanup(() => resumed.close());
    expect(resumed.status).toBe(200);
    second.resolve();
    await resumed.until((e) => e.at(-1)?.event === 'done', READ_WAIT, 'the end of the turn');
    await resumed.ended;
    const rest = resumed.events();
    const ids = [...seen, ...rest].map((e) => Number(e.id));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1)); // every event once, in order
    expect(seenText + deltaText(rest)).toBe(long1 + long2);
    expect(rest.at(-1)!.data).toMatchObject({ status: 'completed' });

    await reader.until((e) => e.at(-1)?.event === 'done', READ_WAIT, 'the reader to see the end');
    expect(reader.events().map((e) => Number(e.id))).toEqual(ids);
    await vi.waitFor(() => expect(sseCounts(h.gateway.app).open).toBe(0));
    expect(messages.listenerCount()).toBe(0);
  }, 60_000);

  it('a reader taking a long finished turn at its own pace gets all of it: the replay waits for the socket', async () => {
    const h = await rig.open();
    const text = longText('r', 1_000_000);
    rig.fake.enqueue({ content: text, chunks: 1000 });
    const done = await h.message(msg('a long one', 'pace', { wait: true, timeout_seconds: 60 }));
    expect(done.json()).toMatchObject({ status: 'completed' });
    const eventId = done.json<{ event_id: string }>().event_id;
    const target = await listenUnix(h);

    // A megabyte of stored events is far past the bound; written all at once, the reader would be cut.
    const reader = await openSse(target, `/api/v1/turns/${eventId}/events`, { headers: apiHeaders });
    cleanup(() => reader.close());
    const events = await reader.until((e) => e.at(-1)?.event === 'done', READ_WAIT, 'the whole turn');
    expect(deltaText(events)).toBe(text);
    expect(events.map((e) => Number(e.id))).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    expect(sseCounts(h.gateway.app).endedSlow).toBe(0);
  });

  it.each([
    ['/v1/chat/completions', { model: 'gatehouse', messages: [{ role: 'user', content: 'go' }], stream: true }],
    ['/v1/responses', { model: 'gatehouse', input: 'go', stream: true }],
  ])('a stalled %s stream is cut and its follower let go; the turn goes on', async (path, body) => {
    const { tool: hold, entered, gate } = holdingTool('hold_one');
    const h = await rig.open({ tools: [hold] });
    const text = longText('o', 400_000);
    rig.fake.enqueue(
      { content: text, chunks: 400, tool_calls: [{ name: 'hold_one', arguments: {} }] },
      { content: 'after', chunks: 1 },
    );
    const target = await listenUnix(h);
    const client = await stalledClient(target, path, { authorization: `Bearer ${API_TOKEN}` }, body);
    cleanup(() => client.socket.destroy());
    await entered.promise;
    await vi.waitFor(() => expect(sseCounts(h.gateway.app)).toEqual({ open: 0, endedSlow: 1 }));
    expect(h.internals.messages.listenerCount()).toBe(0);

    const { statusLine, head } = await client.readAll();
    expect(statusLine).toMatch(/^HTTP\/1\.1 200/);
    const eventId = /x-gatehouse-event-id: (\S+)/i.exec(head)![1]!;
    gate.resolve();
    await vi.waitFor(async () => {
      expect((await h.adminGet(`/api/v1/turns/${eventId}`)).json()).toMatchObject({ status: 'completed' });
    });
  });
});

describe('SSE: logs followers that never read', () => {
  let pipeline: LogPipeline;
  const rig = useHarness({
    autoOpen: false,
    config: {
      logs: { level: 'debug', buffer_entries: 20_000 },
      limits: { streams: { max_buffered_bytes: MAX_BUFFERED } },
    },
    logs: (config) => (pipeline = quietLogPipeline(config)),
  });
  const cleanup = useCleanups();

  it('a flood of log lines cuts the stalled followers, lets their subscriptions go and resumes one exactly', async () => {
    const h = await rig.open();
    const target = await listenUnix(h);
    const path = '/api/v1/logs?follow=true&source=flood';
    const listeners = pipeline.buffer.stats().listeners;
    const reader = await openSse(target, path, { headers: adminHeaders });
    cleanup(() => reader.close());
    expect(reader.status).toBe(200);
    const stalled = await stalledClients(cleanup, 10, target, path, adminHeaders);
    await vi.waitFor(() => expect(pipeline.buffer.stats().listeners).toBe(listeners + 11));

    const log = pipeline.logger.child({ source: 'flood' });
    const total = 3_000;
    const filler = 'y'.repeat(600);
    for (let i = 0; i < total; i++) {
      log.info(`line-${i} ${filler}`);
      if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve)); // the reader reads meanwhile
    }
    await vi.waitFor(
      () => {
        const info = { got: reader.events().length, counts: sseCounts(h.gateway.app), stats: pipeline.buffer.stats() };
        expect(info.got, JSON.stringify(info)).toBe(total);
      },
      { timeout: 8_000 },
    );
    expect(sseCounts(h.gateway.app)).toEqual({ open: 1, endedSlow: 10 });
    expect(pipeline.buffer.stats().listeners).toBe(listeners + 1);

    const { body } = await stalled[0]!.readAll();
    const seen = completeEvents(body);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.length).toBeLessThan(total);
    const resumed = await openSse(target, path, { headers: { ...adminHeaders, 'last-event-id': seen.at(-1)!.id! } });
    cleanup(() => resumed.close());
    const rest = await resumed.until((e) => seen.length + e.length === total, READ_WAIT, 'the rest of the flood');
    const lines = [...seen, ...rest].map((e) => (e.data as LogEntry).message.split(' ')[0]);
    expect(lines).toEqual(Array.from({ length: total }, (_, i) => `line-${i}`));
  });
});

describe('SSE: a reader that takes nothing while its source waits', () => {
  const rig = useHarness({
    fake: true,
    autoOpen: false,
    ssePingMs: 20,
    // A bound the stalled client never reaches: what lets it go is having taken nothing for several pings.
    config: { limits: { streams: { max_buffered_bytes: 8 * 1024 * 1024 } } },
  });
  const cleanup = useCleanups();

  it('is cut after a few ping intervals without progress (SSE_STALLED_PINGS), and its follower let go', async () => {
    const { tool: hold, entered, gate } = holdingTool('hold_one');
    const h = await rig.open({ tools: [hold] });
    rig.fake.enqueue(
      { tool_calls: [{ name: 'hold_one', arguments: {} }] },
      { content: longText('s', 600_000), chunks: 600 },
    );
    const target = await listenUnix(h);
    const ack = await h.message(msg('go', 'stall'));
    const eventId = ack.json<{ event_id: string }>().event_id;
    await entered.promise;
    const client = await stalledClient(target, `/api/v1/turns/${eventId}/events`, apiHeaders);
    cleanup(() => client.socket.destroy());
    await vi.waitFor(() => expect(h.internals.messages.listenerCount()).toBeGreaterThan(0));
    gate.resolve();
    await vi.waitFor(() => expect(sseCounts(h.gateway.app)).toEqual({ open: 0, endedSlow: 1 }), { timeout: 5_000 });
    expect(h.internals.messages.listenerCount()).toBe(0);
  });
});
