import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from '../../../test/helpers/fake-slack.js';
import { createLogger } from '../../logs/index.js';
import { PlatformAuthError, PlatformRateLimitedError, type PlatformEvent } from '../platform/platform.transport.js';
import { createSlackTransport } from './slack.transport.js';

/** The transport alone against the fake Slack over real HTTP, through `@slack/web-api`. */

let fake: FakeSlack | null = null;
const lines: string[] = [];
const logger = createLogger({ level: 'debug', stdout: { write: (line) => void lines.push(line) } });

afterEach(async () => {
  await fake?.close();
  fake = null;
  lines.length = 0;
});

async function connected(botToken?: string) {
  fake = await startFakeSlack();
  const transport = createSlackTransport({
    botToken: botToken ?? fake.botToken,
    appToken: null,
    apiUrl: fake.url,
    logger,
  });
  const abort = new AbortController();
  await transport.connect(abort.signal);
  return { fake, transport, abort };
}

describe('slack transport', () => {
  it('posts in the thread of the chat id and edits the same message', async () => {
    const { fake, transport } = await connected();
    const posted = await transport.send('D1/1700000000.000100', 'a < b & c');
    expect(fake.posted[0]).toMatchObject({ channel: 'D1', threadTs: '1700000000.000100', text: 'a &lt; b &amp; c' });
    await transport.edit('D1/1700000000.000100', posted.messageId, 'done');
    expect(fake.posted[0]!.versions).toEqual(['a &lt; b &amp; c', 'done']);
    expect(fake.callsOf('chat.update')[0]!.params).toMatchObject({ channel: 'D1', ts: posted.messageId });
  });

  it('a 429 becomes PlatformRateLimitedError with Retry-After; a 5xx is retried; errors carry no secret', async () => {
    const { fake, transport } = await connected();
    fake.fail('chat.postMessage', { status: 429, retryAfter: 3 });
    const limited = await transport.send('D1/1.0', 'x').catch((err: unknown) => err);
    expect(limited).toBeInstanceOf(PlatformRateLimitedError);
    expect((limited as PlatformRateLimitedError).retryAfterMs).toBe(3000);
    fake.fail('chat.postMessage', { status: 503 });
    await transport.send('D1/1.0', 'after one 503');
    expect(fake.callsOf('chat.postMessage').map((c) => c.status)).toEqual([429, 503, 200]);
    fake.fail('chat.update', { status: 500 }, 3);
    const failed = (await transport.edit('D1/1.0', fake.posted[0]!.ts, 'y').catch((err: unknown) => err)) as Error;
    expect(failed.message).toBe('slack chat.update: HTTP 500');
    expect(lines.join('\n')).not.toContain(fake.botToken);
  });

  it('a refused bot token is a PlatformAuthError (no reconnecting until the config changes)', async () => {
    fake = await startFakeSlack();
    const transport = createSlackTransport({ botToken: 'xoxb-wrong', appToken: null, apiUrl: fake.url, logger });
    const err = await transport.connect(new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformAuthError);
    expect((err as Error).message).not.toContain('xoxb-wrong');
  });

  it('hands an event on once: a retry racing it joins it, a later one is acknowledged without a second hand-over', async () => {
    const { fake, transport, abort } = await connected();
    const seen: PlatformEvent[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const receiving = transport.receive(async (event) => {
      seen.push(event);
      await gate;
    }, abort.signal);
    const deliver = transport.eventsReceiver()!;
    const envelope = fake.envelope({ user: 'U1', text: 'hi' });
    const first = deliver(envelope);
    const racing = deliver(envelope);
    release();
    await Promise.all([first, racing]);
    await deliver(envelope);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ userId: 'U1', chatKind: 'direct', text: 'hi' });
    // A handler that fails leaves the event to be delivered again.
    const failing = fake.envelope({ user: 'U2', text: 'later' });
    abort.abort();
    await receiving;
    expect(transport.eventsReceiver()).toBeNull();
    const again = new AbortController();
    const second = transport.receive(() => Promise.reject(new Error('store down')), again.signal);
    await expect(transport.eventsReceiver()!(failing)).rejects.toThrow('store down');
    again.abort();
    await second;
  });
});
