import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventBus } from '../../events/index.js';
import { errors } from '../../http/errors.js';
import type { Principal } from '../../http/route.js';
import { resolveKey } from '../../idempotency/index.js';
import { createLogger } from '../../logs/index.js';
import {
  followTurn,
  type FollowDeps,
  type FollowOptions,
  type Submitted,
  type TurnEvent,
  type TurnRecord,
  readySteps,
} from '../../turns/index.js';
import {
  DEFAULT_WEBSOCKET_LIMITS,
  WebSocketConnection,
  type ConnectionDeps,
  type FrameSocket,
  type Handshake,
  type WebSocketAuditEntry,
  type WebSocketSubmit,
} from './websocket.connection.js';
import { WebSocketFeed } from './websocket.feed.js';

type Frame = Record<string, unknown> & { type: string };

/** A socket that records what the connection does with it. */
class FakeSocket implements FrameSocket {
  readyState = 1;
  bufferedAmount = 0;
  paused = false;
  /** Every byte sent stays unsent (a client that does not read). */
  accumulate = false;
  /** Write callbacks are kept, not called (nothing leaves the process). */
  holdWrites = false;
  readonly heldWrites: Array<() => void> = [];
  readonly frames: Frame[] = [];
  closeCode: number | null = null;
  private readonly waiting: Array<{ test: (frames: Frame[]) => boolean; resolve: () => void }> = [];
  private closeResolve: ((code: number) => void) | null = null;
  readonly closed = new Promise<number>((resolve) => {
    this.closeResolve = resolve;
  });

  send(data: string | Buffer, _options?: unknown, done?: () => void): void {
    if (this.readyState !== 1) throw new Error('send on a socket that is not open');
    this.frames.push(JSON.parse(data.toString('utf8')) as Frame);
    if (this.accumulate) this.bufferedAmount += Buffer.byteLength(data);
    if (done && this.holdWrites) this.heldWrites.push(done);
    else done?.();
    for (const waiter of [...this.waiting]) {
      if (waiter.test(this.frames)) {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }
  close(code?: number): void {
    this.readyState = 2;
    this.closeCode = code ?? 1000;
    this.closeResolve?.(this.closeCode);
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }

  /** Resolves once `count` frames have been sent. */
  async frameCount(count: number): Promise<Frame[]> {
    if (this.frames.length < count) {
      await new Promise<void>((resolve) => this.waiting.push({ test: (f) => f.length >= count, resolve }));
    }
    return this.frames.slice(0, count);
  }

  /** Resolves with the first frame of `type`. */
  async frameOfType(type: string): Promise<Frame> {
    const find = () => this.frames.find((f) => f.type === type);
    if (!find()) await new Promise<void>((resolve) => this.waiting.push({ test: () => !!find(), resolve }));
    return find()!;
  }
}

type TurnEventListener = (event: TurnEvent) => void;

/** An in-memory turn event hub: stored events for replay, live listeners, a hook inside `flush`. */
class FakeHub {
  readonly stored: TurnEvent[] = [];
  private readonly listeners = new Map<string, Set<TurnEventListener>>();
  onFlush: () => void = () => undefined;

  subscribe(eventId: string, listener: TurnEventListener): () => void {
    const set = this.listeners.get(eventId) ?? new Set();
    this.listeners.set(eventId, set);
    set.add(listener);
    return () => set.delete(listener);
  }
  async flush(): Promise<void> {
    this.onFlush();
  }
  async replay(eventId: string, afterSeq: number): Promise<TurnEvent[]> {
    return this.stored.filter((e) => e.eventId === eventId && e.seq > afterSeq);
  }
  publish(event: TurnEvent): void {
    for (const listener of this.listeners.get(event.eventId) ?? []) listener(event);
  }
  count(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }
}

const PEER = { ip: '127.0.0.1', loopbackTrusted: true, path: '/api/v1/ws' };
const API: Principal = { role: 'api', id: 'default', fingerprint: 'tok_aaaaaaaa', scope: 'scope-api' };
const ADMIN: Principal = { role: 'admin', id: 'default', fingerprint: 'tok_bbbbbbbb', scope: 'scope-admin' };

function turnRecord(partial: Partial<TurnRecord>): TurnRecord {
  return {
    seq: 1,
    eventId: 'evt_1',
    sessionKey: 'gateway:ws:c',
    status: 'completed',
    currentTool: null,
    response: null,
    terminationReason: null,
    contextEpoch: 0,
    acceptedAt: '2026-11-21T10:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    updatedAt: '2026-11-21T10:00:00.000Z',
    payload: {},
    result: null,
    pending: null,
    owner: null,
    ...partial,
  };
}

/** How the ledger answers a follow's wait (the message path's waiters): the turn's outcome, or null. */
type FakeWait = FollowDeps['waiters']['wait'];

interface Harness {
  socket: FakeSocket;
  connection: WebSocketConnection;
  hub: FakeHub;
  bus: EventBus;
  audits: WebSocketAuditEntry[];
  submits: WebSocketSubmit[];
  interrupts: string[];
  /** The signal of every wait on the ledger, in order. */
  signals: AbortSignal[];
  /** Every turn followed, with the options the connection follows it with. */
  follows: Array<{ eventId: string; options: FollowOptions }>;
  deps: ConnectionDeps;
}

const connections: WebSocketConnection[] = [];
afterEach(() => {
  for (const connection of connections.splice(0)) connection.close(1000, 'test over');
});

function open(
  options: {
    handshake?: Partial<Handshake>;
    deps?: Partial<ConnectionDeps>;
    limits?: Partial<typeof DEFAULT_WEBSOCKET_LIMITS>;
    /** The ledger's answer to a follow's wait; default: none until the follow stops (then null). */
    wait?: FakeWait;
    /** The sequence number of a turn's last stored event. */
    lastSeq?: number;
  } = {},
): Harness {
  const socket = new FakeSocket();
  const hub = new FakeHub();
  const bus = new EventBus();
  const audits: WebSocketAuditEntry[] = [];
  const submits: WebSocketSubmit[] = [];
  const interrupts: string[] = [];
  const signals: AbortSignal[] = [];
  const follows: Harness['follows'] = [];
  const wait: FakeWait =
    options.wait ??
    ((_eventId, _timeoutMs, signal) => {
      if (signal) signals.push(signal);
      return new Promise<TurnRecord | null>((resolve) => signal?.addEventListener('abort', () => resolve(null)));
    });
  // The message path's `follow`: the real `followTurn` over the fake hub and ledger.
  const followDeps: FollowDeps = { hub, waiters: { wait }, lastSeq: async () => options.lastSeq ?? 0 };
  let next = 0;
  const deps: ConnectionDeps = {
    profile: 'standard',
    limits: { ...DEFAULT_WEBSOCKET_LIMITS, ...options.limits },
    resolveToken: (token, via) => {
      if (token === 'api') return API;
      if (token === 'admin') return via === 'query' ? { ...ADMIN, role: 'api' } : ADMIN;
      return null;
    },
    audit: (entry) => void audits.push(entry),
    checkIdentity: async () => undefined,
    rateLimit: () => ({ allowed: true, limit: 30, remaining: 29, resetSeconds: 60 }),
    submit: async (input): Promise<Submitted> => {
      submits.push(input);
      resolveKey({ field: input.idempotencyKey }); // the key rules, applied by the message path (400)
      next++;
      return { eventId: `evt_${next}`, sessionKey: input.sessionKey, replay: false, answer: 'result' };
    },
    follow: (eventId, followOptions) => {
      follows.push({ eventId, options: followOptions });
      return readySteps(followTurn(followDeps, eventId, followOptions), followOptions.endOnPause);
    },
    interrupt: (eventId) => {
      interrupts.push(eventId);
      return true;
    },
    feed: new WebSocketFeed(bus),
    noteMessage: () => undefined,
    logger: createLogger({ level: 'error', stdout: { write: () => undefined } }),
    onAuthenticated: () => undefined,
    onClosed: () => undefined,
    ...options.deps,
  };
  const handshake: Handshake = {
    headerToken: null,
    queryToken: null,
    identity: { platform: undefined, user_id: undefined, chat_id: undefined },
    ...options.handshake,
  };
  const connection = new WebSocketConnection(socket, handshake, deps, PEER);
  connections.push(connection);
  connection.start();
  return { socket, connection, hub, bus, audits, submits, interrupts, signals, follows, deps };
}

const send = (h: Harness, frame: unknown): void => h.connection.receive(JSON.stringify(frame));

describe('WebSocketConnection: authentication', () => {
  it('a header token authenticates at once with its role; audited as auth_success', async () => {
    const onAuthenticated = vi.fn();
    const h = open({ handshake: { headerToken: 'admin' }, deps: { onAuthenticated } });
    expect(await h.socket.frameCount(1)).toEqual([{ type: 'auth_ok', role: 'admin' }]);
    expect(h.connection.authenticated).toBe(true);
    expect(onAuthenticated).toHaveBeenCalledOnce();
    expect(h.audits).toEqual([
      { event: 'auth_success', user: 'tok_bbbbbbbb', principal: 'default', reason: 'websocket_header' },
    ]);
  });

  it('?token= resolves with via "query" (api rights at most)', async () => {
    const h = open({ handshake: { queryToken: 'admin' } });
    expect(await h.socket.frameCount(1)).toEqual([{ type: 'auth_ok', role: 'api' }]);
  });

  it('an auth frame authenticates; a second one is BAD_REQUEST', async () => {
    const h = open();
    send(h, { type: 'auth', token: 'api' });
    send(h, { type: 'auth', token: 'api', ref: 2 });
    const frames = await h.socket.frameCount(2);
    expect(frames[0]).toEqual({ type: 'auth_ok', role: 'api' });
    expect(frames[1]).toMatchObject({ type: 'error', ref: 2, error: { code: 'BAD_REQUEST' } });
  });

  it('an unknown token: UNAUTHORIZED, close 4401, audited with the fingerprint only', async () => {
    const h = open();
    send(h, { type: 'auth', token: 'guess' });
    expect(await h.socket.closed).toBe(4401);
    expect(h.socket.frames).toEqual([{ type: 'error', error: { code: 'UNAUTHORIZED', message: 'invalid token' } }]);
    expect(h.audits).toHaveLength(1);
    expect(h.audits[0]).toMatchObject({ event: 'auth_failure', reason: 'invalid_token' });
    expect(h.audits[0]!.user).toMatch(/^tok_[0-9a-f]{8}$/);
    expect(JSON.stringify(h.audits)).not.toContain('guess');
  });

  it('the deadline closes an unauthenticated client with 4401', async () => {
    const h = open({ limits: { authTimeoutMs: 5 } });
    expect(await h.socket.closed).toBe(4401);
    expect(h.socket.frames[0]).toMatchObject({ type: 'error', error: { code: 'UNAUTHORIZED' } });
    expect(h.audits).toEqual([{ event: 'auth_failure', user: '', reason: 'auth_timeout' }]);
  });

  it('the identity defaults to platform ws, user = token fingerprint, chat = user', async () => {
    const checkIdentity = vi.fn(async () => undefined);
    const h = open({ handshake: { headerToken: 'api' }, deps: { checkIdentity } });
    await h.socket.frameCount(1);
    expect(checkIdentity).toHaveBeenCalledWith(
      { platform: 'ws', user_id: 'tok_aaaaaaaa', chat_id: 'tok_aaaaaaaa' },
      PEER,
    );
  });

  it('auth frame identity fields win over the query string', async () => {
    const checkIdentity = vi.fn(async () => undefined);
    const h = open({
      handshake: { identity: { platform: 'web', user_id: 'q-user', chat_id: undefined } },
      deps: { checkIdentity },
    });
    send(h, { type: 'auth', token: 'api', user_id: 'f-user', chat_id: 'room' });
    await h.socket.frameCount(1);
    expect(checkIdentity).toHaveBeenCalledWith({ platform: 'web', user_id: 'f-user', chat_id: 'room' }, PEER);
  });

  it('an identity refused by the auth mode: FORBIDDEN and close 4403', async () => {
    const h = open({
      handshake: { headerToken: 'api' },
      deps: { checkIdentity: () => Promise.reject(errors.forbidden('user ws:x is not authorised')) },
    });
    expect(await h.socket.closed).toBe(4403);
    expect(h.socket.frames).toEqual([
      { type: 'error', error: { code: 'FORBIDDEN', message: 'user ws:x is not authorised' } },
    ]);
    expect(h.connection.authenticated).toBe(false);
  });

  it('an invalid identity from the query string: BAD_REQUEST and close 4400', async () => {
    const h = open({
      handshake: {
        headerToken: 'api',
        identity: { platform: 'p'.repeat(101), user_id: undefined, chat_id: undefined },
      },
    });
    expect(await h.socket.closed).toBe(4400);
    expect(h.socket.frames[0]).toMatchObject({ type: 'error', error: { code: 'BAD_REQUEST' } });
  });

  it('profile minimal: auth_ok admin without a token', async () => {
    const h = open({ deps: { profile: 'minimal' } });
    expect(await h.socket.frameCount(1)).toEqual([{ type: 'auth_ok', role: 'admin' }]);
    expect(h.audits).toEqual([]);
  });
});

describe('WebSocketConnection: turns', () => {
  it('sends stored and live events once each, in seq order, without a gap', async () => {
    const h = open({ handshake: { headerToken: 'api' } });
    await h.socket.frameCount(1);
    const ev = (seq: number, type: TurnEvent['type'], data: Record<string, unknown>): TurnEvent => ({
      eventId: 'evt_1',
      seq,
      type,
      data,
    });
    h.hub.stored.push(ev(1, 'status', { status: 'running' }), ev(2, 'delta', { content: 'a' }));
    // Published while the connection replays: held, then released after the stored ones (seq 2 only once).
    h.hub.onFlush = () => {
      h.hub.publish(ev(2, 'delta', { content: 'a' }));
      h.hub.publish(ev(3, 'delta', { content: 'b' }));
    };
    send(h, { type: 'message', text: 'hi', ref: 'r' });
    await h.socket.frameCount(4);
    h.hub.publish(ev(4, 'done', { status: 'completed', message: { content: 'ab' } }));
    const frames = await h.socket.frameCount(5);
    expect(frames.slice(1)).toEqual([
      { type: 'accepted', ref: 'r', event_id: 'evt_1', session_key: 'gateway:ws:tok_aaaaaaaa' },
      { type: 'delta', event_id: 'evt_1', seq: 2, content: 'a' },
      { type: 'delta', event_id: 'evt_1', seq: 3, content: 'b' },
      { type: 'final', event_id: 'evt_1', seq: 4, status: 'completed', message: { content: 'ab' } },
    ]);
    // The follow ends with the final frame: its hub subscription and its slot go as the iteration unwinds.
    await vi.waitFor(() => expect(h.hub.count()).toBe(0));
    await vi.waitFor(() => expect(h.connection.followedTurns).toBe(0));
    expect(h.submits[0]).toEqual({
      principal: API,
      sessionKey: 'gateway:ws:tok_aaaaaaaa',
      text: 'hi',
      identity: { platform: 'ws', user_id: 'tok_aaaaaaaa', chat_id: 'tok_aaaaaaaa' },
      idempotencyKey: undefined,
    });
    // The reply to one message: from the first event, ended by a pause, bounded by the follow timeout.
    expect(h.follows).toEqual([
      {
        eventId: 'evt_1',
        options: expect.objectContaining({
          fromSeq: 0,
          endOnPause: true,
          timeoutMs: DEFAULT_WEBSOCKET_LIMITS.followTimeoutMs,
          maxBufferedEvents: DEFAULT_WEBSOCKET_LIMITS.maxBufferedEvents,
        }),
      },
    ]);
  });

  it('a replayed pause does not end the reply; the ledger does', async () => {
    const wait = vi.fn(async () =>
      turnRecord({ eventId: 'evt_1', status: 'completed', result: { message: { content: 'later' } } }),
    );
    const h = open({ handshake: { headerToken: 'api' }, wait, lastSeq: 1 });
    await h.socket.frameCount(1);
    h.hub.stored.push({ eventId: 'evt_1', seq: 1, type: 'status', data: { status: 'waiting_approval' } });
    send(h, { type: 'message', text: 'hi' });
    const frames = await h.socket.frameCount(3);
    expect(frames[2]).toEqual({
      type: 'final',
      event_id: 'evt_1',
      status: 'completed',
      message: { content: 'later' },
    });
    expect(wait).toHaveBeenCalledWith(
      'evt_1',
      DEFAULT_WEBSOCKET_LIMITS.followTimeoutMs,
      expect.any(AbortSignal),
      'outcome',
    );
  });

  it('a failed turn in the ledger is an UPSTREAM_ERROR error frame with ref and event_id', async () => {
    const wait = async () =>
      turnRecord({ status: 'failed', result: { error: { code: 'UPSTREAM_ERROR', message: 'model provider failed' } } });
    const h = open({ handshake: { headerToken: 'api' }, wait });
    await h.socket.frameCount(1);
    send(h, { type: 'message', text: 'hi', ref: 5 });
    const frames = await h.socket.frameCount(3);
    expect(frames[2]).toEqual({
      type: 'error',
      ref: 5,
      event_id: 'evt_1',
      error: { code: 'UPSTREAM_ERROR', message: 'model provider failed' },
    });
  });

  it('hands the frame key over as is; a key the message path refuses is a BAD_REQUEST frame, nothing followed', async () => {
    const h = open({ handshake: { headerToken: 'api' } });
    await h.socket.frameCount(1);
    send(h, { type: 'message', text: 'hi', ref: 'bad', idempotency_key: '   ' });
    const frames = await h.socket.frameCount(2);
    expect(frames[1]).toMatchObject({
      type: 'error',
      ref: 'bad',
      error: { code: 'BAD_REQUEST', message: 'idempotency_key: idempotency key must not be empty' },
    });
    expect(h.submits.map((s) => s.idempotencyKey)).toEqual(['   ']);
    expect(h.follows).toEqual([]);
    expect(h.connection.followedTurns).toBe(0);

    send(h, { type: 'message', text: 'hi', ref: 'good', idempotency_key: 'k1' });
    expect(await h.socket.frameOfType('accepted')).toMatchObject({ ref: 'good', event_id: 'evt_1' });
    expect(h.submits[1]).toMatchObject({ idempotencyKey: 'k1' });
  });

  it('caps the turns followed at once (RATE_LIMITED) and counts messages in the write group', async () => {
    const rateLimit = vi.fn(() => ({ allowed: true, limit: 30, remaining: 29, resetSeconds: 60 }));
    const h = open({ handshake: { headerToken: 'api' }, limits: { maxTurnsPerConnection: 1 }, deps: { rateLimit } });
    await h.socket.frameCount(1);
    send(h, { type: 'message', text: 'one' });
    send(h, { type: 'message', text: 'two', ref: 'x' });
    const frames = await h.socket.frameCount(3);
    // As REST's 429 (DECISIONS §3): when to try again, at least 1 s.
    expect(frames[2]).toEqual({
      type: 'error',
      ref: 'x',
      error: {
        code: 'RATE_LIMITED',
        message: 'too many requests',
        details: { reason: 'too many turns in flight on this connection', limit: 1, retry_after_seconds: 1 },
      },
    });
    expect(rateLimit).toHaveBeenCalledWith('tok_aaaaaaaa');
    expect(h.submits).toHaveLength(1);
  });

  it('refuses a message over the write limit with RATE_LIMITED', async () => {
    const h = open({
      handshake: { headerToken: 'api' },
      deps: { rateLimit: () => ({ allowed: false, limit: 30, remaining: 0, resetSeconds: 12 }) },
    });
    await h.socket.frameCount(1);
    send(h, { type: 'message', text: 'one' });
    const frames = await h.socket.frameCount(2);
    expect(frames[1]).toMatchObject({
      type: 'error',
      error: { code: 'RATE_LIMITED', details: { group: 'write', retry_after_seconds: 12 } },
    });
    expect(h.submits).toHaveLength(0);
  });

  it('api tokens interrupt only their own turns; admin any', async () => {
    const api = open({ handshake: { headerToken: 'api' } });
    await api.socket.frameCount(1);
    send(api, { type: 'interrupt', event_id: 'evt_other' });
    expect((await api.socket.frameCount(2))[1]).toMatchObject({
      type: 'error',
      event_id: 'evt_other',
      error: { code: 'NOT_FOUND' },
    });
    expect(api.interrupts).toEqual([]);
    send(api, { type: 'message', text: 'mine' });
    await api.socket.frameOfType('accepted');
    send(api, { type: 'interrupt', event_id: 'evt_1' });
    await vi.waitFor(() => expect(api.interrupts).toEqual(['evt_1']));

    const admin = open({ handshake: { headerToken: 'admin' }, deps: { interrupt: () => false } });
    await admin.socket.frameCount(1);
    send(admin, { type: 'interrupt', event_id: 'evt_gone' });
    expect((await admin.socket.frameCount(2))[1]).toMatchObject({ error: { code: 'NOT_FOUND' } });
  });
});

describe('WebSocketConnection: resuming a reply', () => {
  const ev = (seq: number, type: TurnEvent['type'], data: Record<string, unknown>): TurnEvent => ({
    eventId: 'evt_1',
    seq,
    type,
    data,
  });
  const stored = [
    ev(1, 'status', { status: 'running' }),
    ev(2, 'delta', { content: 'a' }),
    ev(3, 'delta', { content: 'b' }),
    ev(4, 'done', { status: 'completed', message: { content: 'ab' } }),
  ];

  it('a retried message with after_seq gets only the frames after it, each with its seq', async () => {
    const h = open({
      handshake: { headerToken: 'api' },
      deps: {
        submit: async (input) => ({ eventId: 'evt_1', sessionKey: input.sessionKey, replay: true, answer: 'result' }),
      },
    });
    await h.socket.frameCount(1);
    h.hub.stored.push(...stored);
    send(h, { type: 'message', text: 'hi', idempotency_key: 'k1', after_seq: 2 });
    const frames = await h.socket.frameCount(4);
    expect(frames.slice(2)).toEqual([
      { type: 'delta', event_id: 'evt_1', seq: 3, content: 'b' },
      { type: 'final', event_id: 'evt_1', seq: 4, status: 'completed', message: { content: 'ab' } },
    ]);
    expect(h.follows[0]?.options.fromSeq).toBe(2);
  });

  it('after_seq on a message that starts a new turn is ignored', async () => {
    const h = open({ handshake: { headerToken: 'api' } });
    await h.socket.frameCount(1);
    h.hub.stored.push(...stored);
    send(h, { type: 'message', text: 'hi', after_seq: 3 });
    await h.socket.frameOfType('final');
    expect(h.follows[0]?.options.fromSeq).toBe(0);
    expect(h.socket.frames.filter((f) => f.type === 'delta').map((f) => f.seq)).toEqual([2, 3]);
  });
});

describe('WebSocketConnection: bounds and cleanup', () => {
  it('closes with 1013 once the outbound buffer passes the cap, and sends nothing after', async () => {
    const h = open({ handshake: { headerToken: 'api' }, limits: { maxBufferedBytes: 100 } });
    await h.socket.frameCount(1);
    send(h, { type: 'subscribe', topics: ['turns'] });
    await h.socket.frameOfType('subscribed');
    h.socket.bufferedAmount = 101;
    h.bus.publish('turns', 'delta', { event_id: 'evt_x', content: 'x' });
    expect(await h.socket.closed).toBe(1013);
    const count = h.socket.frames.length;
    h.bus.publish('turns', 'delta', { event_id: 'evt_x', content: 'y' });
    expect(h.socket.frames).toHaveLength(count);
    expect(h.bus.hasListeners('turns')).toBe(false);
  });

  it('one frame larger than the cap reaches a client with nothing unsent; the next one past the cap closes (1013)', async () => {
    const h = open({ handshake: { headerToken: 'api' }, limits: { maxBufferedBytes: 100 } });
    await h.socket.frameCount(1);
    send(h, { type: 'subscribe', topics: ['memory'] });
    await h.socket.frameOfType('subscribed');
    h.socket.accumulate = true;
    h.bus.publish('memory', 'created', { content: 'x'.repeat(500) });
    expect(h.socket.frames.at(-1)).toMatchObject({ type: 'event', data: { content: 'x'.repeat(500) } });
    expect(h.connection.isClosed).toBe(false);
    h.bus.publish('memory', 'created', { content: 'y' });
    expect(await h.socket.closed).toBe(1013);
  });

  it("a followed reply waits for its client's writes; live events held meanwhile count toward the cap (1013)", async () => {
    const h = open({ handshake: { headerToken: 'api' }, limits: { maxBufferedBytes: 1000 } });
    await h.socket.frameCount(1);
    const ev = (seq: number, content: string): TurnEvent => ({
      eventId: 'evt_1',
      seq,
      type: 'delta',
      data: { content },
    });
    h.socket.bufferedAmount = 600; // over the pace (half the cap): each frame of the reply waits for its write
    h.socket.holdWrites = true;
    send(h, { type: 'message', text: 'hi' });
    await h.socket.frameOfType('accepted');
    h.hub.publish(ev(1, 'a'));
    await h.socket.frameOfType('delta');
    h.hub.publish(ev(2, 'b'));
    // Held while the first delta's write is pending: nothing more is sent.
    await Promise.resolve();
    expect(h.socket.frames.filter((f) => f.type === 'delta')).toHaveLength(1);
    expect(h.connection.isClosed).toBe(false);
    // The write completes: the held event goes out.
    h.socket.heldWrites.shift()!();
    await vi.waitFor(() => expect(h.socket.frames.filter((f) => f.type === 'delta')).toHaveLength(2));
    // Held again, now past the cap with the socket's unsent bytes: closed, the turn let go.
    h.hub.publish(ev(3, 'c'.repeat(500)));
    expect(await h.socket.closed).toBe(1013);
    expect(h.hub.count()).toBe(0);
    expect(h.connection.followedTurns).toBe(0);
  });

  it('pauses reading while frames queue up and resumes when they drain', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const h = open({
      handshake: { headerToken: 'api' },
      limits: { maxQueuedFrames: 2 },
      deps: {
        submit: async (input) => {
          await gate;
          return { eventId: `evt_${input.text}`, sessionKey: input.sessionKey, replay: false, answer: 'result' };
        },
      },
    });
    await h.socket.frameCount(1);
    send(h, { type: 'message', text: 'a' });
    send(h, { type: 'ping' });
    expect(h.socket.paused).toBe(true);
    release();
    await h.socket.frameOfType('pong');
    await vi.waitFor(() => expect(h.socket.paused).toBe(false));
    // Frames are handled in arrival order: the accepted frame precedes the pong.
    expect(h.socket.frames.map((f) => f.type)).toEqual(['auth_ok', 'accepted', 'pong']);
  });

  it('refuses frames past the hard queue bound with RATE_LIMITED and a retry hint', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const h = open({
      handshake: { headerToken: 'api' },
      limits: { maxQueuedFrames: 1 },
      deps: {
        submit: async (input) => {
          await gate;
          return { eventId: `evt_${input.text}`, sessionKey: input.sessionKey, replay: false, answer: 'result' };
        },
      },
    });
    await h.socket.frameCount(1);
    // One frame held in the handler, then the queue fills to 4 × maxQueuedFrames: the next one is refused.
    for (let i = 0; i < 4; i++) send(h, { type: 'message', text: `m${i}` });
    send(h, { type: 'ping' });
    expect(h.socket.frames[1]).toEqual({
      type: 'error',
      error: {
        code: 'RATE_LIMITED',
        message: 'too many frames queued; slow down',
        details: { reason: 'too many frames queued on this connection', limit: 4, retry_after_seconds: 1 },
      },
    });
    release();
    await h.socket.frameOfType('accepted');
  });

  it('closing ends every hub, waiter and bus subscription', async () => {
    const onClosed = vi.fn();
    const h = open({ handshake: { headerToken: 'admin' }, deps: { onClosed } });
    await h.socket.frameCount(1);
    send(h, { type: 'subscribe', topics: ['turns', 'logs'] });
    send(h, { type: 'message', text: 'a' });
    await vi.waitFor(() => expect(h.signals).toHaveLength(1));
    expect(h.hub.count()).toBe(1);
    h.connection.socketClosed();
    expect(h.signals[0]!.aborted).toBe(true);
    expect(h.connection.followedTurns).toBe(0);
    // The aborted follow unwinds on its next step and drops its hub subscription.
    await vi.waitFor(() => expect(h.hub.count()).toBe(0));
    expect(h.bus.hasListeners('turns')).toBe(false);
    expect(h.bus.hasListeners('logs')).toBe(false);
    expect(onClosed).toHaveBeenCalledOnce();
    h.connection.socketClosed();
    expect(onClosed).toHaveBeenCalledOnce();
  });

  it('refuses binary frames and keeps the connection', async () => {
    const h = open({ handshake: { headerToken: 'api' } });
    await h.socket.frameCount(1);
    h.connection.receiveBinary();
    expect(h.socket.frames[1]).toMatchObject({ type: 'error', error: { code: 'BAD_REQUEST' } });
    expect(h.socket.closeCode).toBeNull();
  });

  it('answers a message frame nested 10 000 deep with a BAD_REQUEST error frame, submits nothing, stays open', async () => {
    const h = open({ handshake: { headerToken: 'api' } });
    await h.socket.frameCount(1);
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    h.connection.receive(`{"type":"message","text":"hi","session_key":${deep}}`);
    await h.socket.frameCount(2);
    expect(h.socket.frames[1]).toMatchObject({
      type: 'error',
      error: { code: 'BAD_REQUEST', message: 'JSON is nested deeper than 64 levels', details: { max_depth: 64 } },
    });
    expect(h.submits).toHaveLength(0);
    expect(h.socket.closeCode).toBeNull();
  });
});
