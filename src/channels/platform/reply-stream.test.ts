import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock.js';
import { PlatformRateLimitedError } from './platform.transport.js';
import { MAX_REPLY_MESSAGES, ReplyStream, splitMessage, type ReplyTarget, type Wait } from './reply-stream.js';

/** A target recording calls; `failNext` makes the next call throw. */
function recordingTarget() {
  const calls: Array<{ op: 'send' | 'edit'; messageId: string; text: string; at: number }> = [];
  const failures: Error[] = [];
  let next = 1;
  let clock: ManualClock | null = null;
  const target: ReplyTarget = {
    send: async (_chat, text) => {
      const failure = failures.shift();
      if (failure) throw failure;
      const messageId = String(next++);
      calls.push({ op: 'send', messageId, text, at: clock?.now() ?? 0 });
      return { messageId };
    },
    edit: async (_chat, messageId, text) => {
      const failure = failures.shift();
      if (failure) throw failure;
      calls.push({ op: 'edit', messageId, text, at: clock?.now() ?? 0 });
    },
  };
  return { target, calls, failures, useClock: (c: ManualClock) => (clock = c) };
}

/** A wait that advances the manual clock instead of sleeping, and records each wait. */
function clockWait(clock: ManualClock, waits: number[]): Wait {
  return async (ms) => {
    waits.push(ms);
    clock.advance(ms);
  };
}

describe('splitMessage', () => {
  it('keeps a short text whole', () => {
    expect(splitMessage('hello', 4096)).toEqual(['hello']);
  });

  it('splits at 4096 characters, preferring a line break', () => {
    const text = `${'a'.repeat(4000)}\n${'b'.repeat(500)}`;
    const pieces = splitMessage(text, 4096);
    expect(pieces).toEqual(['a'.repeat(4000), 'b'.repeat(500)]);
    expect(pieces.every((p) => p.length <= 4096)).toBe(true);
  });

  it('cuts hard when there is no break, and bounds the number of messages', () => {
    const pieces = splitMessage('x'.repeat(4096 * 30), 4096);
    expect(pieces).toHaveLength(MAX_REPLY_MESSAGES);
    expect(pieces.every((p) => p.length <= 4096)).toBe(true);
    expect(pieces.at(-1)).toContain('reply cut');
  });
});

describe('ReplyStream', () => {
  it('sends once, then edits that one message, spaced by the interval', async () => {
    const clock = new ManualClock(0);
    const waits: number[] = [];
    const rec = recordingTarget();
    rec.useClock(clock);
    const stream = new ReplyStream({
      target: rec.target,
      chatId: '1',
      maxMessageLength: 4096,
      minIntervalMs: 1000,
      now: () => clock.now(),
      wait: clockWait(clock, waits),
    });
    stream.append('Hel');
    stream.append('lo');
    stream.append(' world');
    await stream.finish('Hello world!');
    expect(rec.calls.filter((c) => c.op === 'send')).toHaveLength(1);
    expect(rec.calls.at(-1)).toMatchObject({ messageId: '1', text: 'Hello world!' });
    const times = rec.calls.map((c) => c.at);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000);
  });

  it('honours a 429 retry_after, then sends the message', async () => {
    const clock = new ManualClock(0);
    const waits: number[] = [];
    const rec = recordingTarget();
    rec.failures.push(new PlatformRateLimitedError(7000));
    const stream = new ReplyStream({
      target: rec.target,
      chatId: '1',
      maxMessageLength: 4096,
      minIntervalMs: 1000,
      now: () => clock.now(),
      wait: clockWait(clock, waits),
    });
    await stream.finish('done');
    expect(waits).toContain(7000);
    expect(rec.calls).toEqual([expect.objectContaining({ op: 'send', text: 'done' })]);
  });

  it('gives up after repeated 429s and rejects', async () => {
    const clock = new ManualClock(0);
    const rec = recordingTarget();
    for (let i = 0; i < 10; i++) rec.failures.push(new PlatformRateLimitedError(1000));
    const stream = new ReplyStream({
      target: rec.target,
      chatId: '1',
      maxMessageLength: 4096,
      minIntervalMs: 0,
      now: () => clock.now(),
      wait: clockWait(clock, []),
    });
    await expect(stream.finish('x')).rejects.toThrow(PlatformRateLimitedError);
  });

  it('continues a long reply in new messages of at most the platform length', async () => {
    const clock = new ManualClock(0);
    const rec = recordingTarget();
    const stream = new ReplyStream({
      target: rec.target,
      chatId: '1',
      maxMessageLength: 100,
      minIntervalMs: 1000,
      now: () => clock.now(),
      wait: clockWait(clock, []),
    });
    await stream.finish('y'.repeat(250));
    expect(rec.calls.map((c) => [c.op, c.text.length])).toEqual([
      ['send', 100],
      ['send', 100],
      ['send', 50],
    ]);
    expect(stream.messages).toBe(3);
  });

  it('answers an empty reply with a short text instead of nothing', async () => {
    const clock = new ManualClock(0);
    const rec = recordingTarget();
    const stream = new ReplyStream({
      target: rec.target,
      chatId: '1',
      maxMessageLength: 100,
      minIntervalMs: 0,
      now: () => clock.now(),
      wait: clockWait(clock, []),
    });
    await stream.finish('');
    expect(rec.calls).toEqual([expect.objectContaining({ op: 'send', text: '(no reply)' })]);
  });
});

describe('ReplyStream failures', () => {
  it('a send that fails while streaming surfaces through finish, not as an unhandled rejection', async () => {
    const clock = new ManualClock(0);
    const rec = recordingTarget();
    rec.failures.push(new Error('chat not found'));
    const stream = new ReplyStream({
      target: rec.target,
      chatId: '1',
      maxMessageLength: 100,
      minIntervalMs: 0,
      now: () => clock.now(),
      wait: clockWait(clock, []),
    });
    stream.append('partial');
    await new Promise((resolve) => setImmediate(resolve));
    await expect(stream.finish('whole')).rejects.toThrow('chat not found');
  });
});
