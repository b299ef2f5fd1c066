/**
 * WebSocket clients that never read (issue: slow consumers cannot hold
 * memory): 200 real clients whose sockets are paused, on the live feed and
 * following a turn whose reply is long, against an in-process gateway on a
 * loopback port. Each is closed with 1013 once its unsent bytes pass
 * `limits.streams.max_buffered_bytes`, holding at most the cap and one frame;
 * everything it had on the server goes at once; a reading client is served
 * throughout; a closed client resumes the reply where it stopped.
 */
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { useCleanups } from '../helpers/cleanups.js';
import { API_TOKEN, useHarness } from '../helpers/harness.js';

const rig = useHarness({ fake: true, autoOpen: false });
const cleanup = useCleanups();

/** The cap under test (far below the 1 MiB default, so the configured value is what closes clients). */
const CAP = 64 * 1024;
/** One delta of the long reply. */
const CHUNK = 16 * 1024;
/**
 * The reply: enough that every paused client passes the kernel's socket
 * buffers (a few MB on loopback) and then the cap.
 */
const REPLY = Array.from({ length: 512 }, (_, i) => `${String(i).padStart(6, '0')}`.padEnd(CHUNK, '.')).join('');
const FEED_CLIENTS = 190;
const FOLLOWERS = 10;
const WAIT = { timeout: 60_000, interval: 50 };

type Frame = Record<string, unknown> & { type: string };

/** A real client: the frames it reads (while `keep`), its close code. */
class Client {
  readonly frames: Frame[] = [];
  readonly closed: Promise<number>;
  /** Whether frames are parsed and kept (off for clients whose frames the test does not look at). */
  keep = true;

  constructor(readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => {
      if (this.keep) this.frames.push(JSON.parse(data.toString('utf8')) as Frame);
    });
    this.closed = new Promise((resolve) => socket.once('close', (code: number) => resolve(code)));
  }

  send(frame: unknown): void {
    this.socket.send(JSON.stringify(frame));
  }

  async frame(type: string, test: (frame: Frame) => boolean = () => true): Promise<Frame> {
    const find = () => this.frames.find((f) => f.type === type && test(f));
    await vi.waitFor(() => expect(find(), `a ${type} frame`).toBeDefined(), WAIT);
    return find()!;
  }
}

/** An authenticated client (api token in the handshake); terminated after the test. */
async function connect(url: string): Promise<Client> {
  const socket = new WebSocket(`${url}/api/v1/ws`, { headers: { 'x-api-token': API_TOKEN } });
  const client = new Client(socket);
  cleanup(async () => {
    if (socket.readyState === WebSocket.CLOSED) return;
    socket.terminate();
    await client.closed;
  });
  await client.frame('auth_ok');
  return client;
}

const text = (frames: Frame[]): string =>
  frames
    .filter((f) => f.type === 'delta')
    .map((f) => String(f.content))
    .join('');

describe('websocket: clients that never read', () => {
  it(
    'are closed with 1013 past limits.streams.max_buffered_bytes, hold at most the cap, and resume after a seq',
    { timeout: 180_000 },
    async () => {
      const harness = await rig.open({
        config: {
          provider: { timeout_seconds: 120 },
          limits: {
            streams: { max_buffered_bytes: CAP },
            // The reply is longer than a reply may be by default (1 MiB): this gateway takes it whole.
            payloads: { max_reply_bytes: 2 * REPLY.length },
            overload: { memory_watermark_mb: null, max_event_loop_delay_ms: null },
          },
        },
      });
      const url = (await harness.gateway.listen()).replace(/^http/, 'ws');
      const { websocket, bus, messages } = harness.internals;
      expect(websocket.limits().maxBufferedBytes).toBe(CAP);
      // The deltas of the long reply, then the model stalls: the turn runs until it is interrupted.
      harness.fake.enqueue({ content: REPLY, chunks: REPLY.length / CHUNK, stall: true });

      // 190 clients on the live feed's `turns` topic, then paused: they read nothing from now on.
      const feed: Client[] = [];
      for (let i = 0; i < FEED_CLIENTS; i += 50) {
        const batch = await Promise.all(Array.from({ length: Math.min(50, FEED_CLIENTS - i) }, () => connect(url)));
        for (const client of batch) {
          client.send({ type: 'subscribe', topics: ['turns'] });
          await client.frame('subscribed');
          client.keep = false;
          client.socket.pause();
        }
        feed.push(...batch);
      }
      // A reading client sends the message; 10 paused ones follow the same turn (a retry with its key).
      const reader = await connect(url);
      const message = { type: 'message', text: 'a long story, please', idempotency_key: 'long-story' };
      reader.send(message);
      const accepted = await reader.frame('accepted');
      await reader.frame('delta');
      /** The turn's live listeners with the reader following it. */
      const readerOnly = messages.listenerCount();
      const followers = await Promise.all(Array.from({ length: FOLLOWERS }, () => connect(url)));
      for (const follower of followers) {
        follower.send(message);
        await follower.frame('accepted');
        follower.socket.pause();
        follower.keep = follower === followers[0];
      }
      const slow = [...feed, ...followers];
      const serverSockets = [...harness.gateway.app.websocketServer.clients];
      expect(serverSockets).toHaveLength(slow.length + 1);

      // The reader gets the whole reply while every paused client is closed.
      await vi.waitFor(() => expect(text(reader.frames)).toHaveLength(REPLY.length), WAIT);
      expect(text(reader.frames)).toBe(REPLY);
      await vi.waitFor(() => expect(websocket.clientCount()).toBe(1), WAIT);
      expect((await fetch(`${url.replace(/^ws/, 'http')}/api/v1/health`)).status).toBe(200);

      // Held per closed client: at most the cap plus the frame that crossed it; nothing queued after the close.
      const closing = serverSockets.filter((socket) => socket.readyState === WebSocket.CLOSING);
      expect(closing).toHaveLength(slow.length);
      const held = closing.map((socket) => socket.bufferedAmount);
      for (const bytes of held) expect(bytes).toBeLessThanOrEqual(CAP + 2 * CHUNK);
      // Released at once: no live-feed listener, and only the reader still follows the turn (it is still running).
      expect(bus.hasListeners('turns')).toBe(false);
      expect(messages.runningTurns()).toEqual([accepted.event_id]);
      expect(messages.listenerCount()).toBe(readerOnly);
      reader.send({ type: 'interrupt', event_id: accepted.event_id });
      expect(await reader.frame('final')).toMatchObject({ status: 'interrupted' });
      expect(closing.map((socket) => socket.bufferedAmount)).toEqual(held);

      // Reading again, each paused client gets what was queued for it, then close 1013.
      for (const client of slow) client.socket.resume();
      expect(new Set(await Promise.all(slow.map((client) => client.closed)))).toEqual(new Set([1013]));

      // A follower resumes on a new connection after the last seq it got: the rest of the reply, then final.
      const cut = followers[0]!;
      const seen = cut.frames.filter((f) => f.type === 'delta');
      expect(seen.length).toBeGreaterThan(0);
      const lastSeq = seen.at(-1)!.seq as number;
      const resumed = await connect(url);
      resumed.send({ ...message, after_seq: lastSeq });
      expect(await resumed.frame('accepted')).toMatchObject({ event_id: accepted.event_id });
      const end = await resumed.frame('final');
      expect(end).toMatchObject({ event_id: accepted.event_id, status: 'interrupted' });
      const rest = resumed.frames.filter((f) => f.type === 'delta');
      expect(rest.every((f) => (f.seq as number) > lastSeq)).toBe(true);
      expect(text(seen) + text(rest)).toBe(REPLY);
    },
  );
});
