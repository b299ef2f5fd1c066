import type { EventBus, Topic } from '../../events/index.js';
import { errors } from '../../http/errors.js';
import type { Principal } from '../../http/route.js';
import type { RateDecision } from '../../security/rate-limit.js';
import { rateKeyOf } from '../../security/tokens.js';
import { isolatedPrincipal, principalKeyPart } from '../../sessions/index.js';
import { sessionKeyFor, type FollowOptions, type TurnStep, type Submitted } from '../../turns/index.js';
import {
  WebSocketAuth,
  type AuthDeps,
  type Authenticated,
  type ChatIdentity,
  type Handshake,
  type Role,
} from './websocket.auth.js';
import {
  CLOSE_CODES,
  followStepFrame,
  frameErrorOf,
  parseClientFrame,
  resolveTopics,
  type ClientFrame,
  type FrameErrorBody,
  type FrameRef,
  type MessageFrame,
  type ServerFrame,
} from './websocket.frames.js';

export type { ChatIdentity, Handshake, WebSocketAuditEntry } from './websocket.auth.js';

/** Bounds of one connection (DECISIONS §8: slow consumers cannot grow memory). */
export interface WebSocketLimits {
  /** Time a client has to authenticate before it is closed with 4401 (default 10 s). */
  authTimeoutMs: number;
  /** Outbound bytes queued for one client beyond which it is closed with 1013 (default 1 MiB). */
  maxBufferedBytes: number;
  /** Turns one connection follows at once; more → RATE_LIMITED error frame (default 16). */
  maxTurnsPerConnection: number;
  /** Inbound frames queued for handling before reading from the socket pauses (default 32). */
  maxQueuedFrames: number;
  /** Live events held per followed turn while its stored events are replayed (default 10 000). */
  maxBufferedEvents: number;
  /** How long a turn is followed before a TIMEOUT error frame (the turn goes on). */
  followTimeoutMs: number;
  /** Open connections (authenticated or not) beyond which upgrades are refused with 503 (default 10 000). */
  maxConnections: number;
  /** Grace for clients to answer the close handshake on `stop()` before they are cut off (default 2 s). */
  closeGraceMs: number;
  /**
   * Protocol-level ping interval (default 30 s): a client that has not answered the previous ping is
   * cut off, so dead peers do not hold a connection forever. Takes effect at the next `start()`.
   */
  heartbeatMs: number;
}

/** The defaults of `WebSocketLimits`. */
export const DEFAULT_WEBSOCKET_LIMITS: WebSocketLimits = {
  authTimeoutMs: 10_000,
  maxBufferedBytes: 1024 * 1024,
  maxTurnsPerConnection: 16,
  maxQueuedFrames: 32,
  maxBufferedEvents: 10_000,
  followTimeoutMs: 600_000,
  maxConnections: 10_000,
  closeGraceMs: 2_000,
  heartbeatMs: 30_000,
};

/** `WebSocket.OPEN` (ws and the browser API agree). */
const OPEN = 1;
/** Inbound frames beyond `maxQueuedFrames` times this are refused outright (reading is paused long before). */
const HARD_QUEUE_FACTOR = 4;
/** Event ids a connection remembers as its own (api tokens may interrupt only those). */
const MAX_OWNED = 1024;

/** The part of a `ws` WebSocket a connection uses (a fake in unit tests). */
export interface FrameSocket {
  readonly readyState: number;
  /** Bytes queued for sending and not yet handed to the kernel. */
  readonly bufferedAmount: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  /** Stops reading from the socket (TCP backpressure on the client). */
  pause(): void;
  resume(): void;
}

/** A message a connection hands to the message path: the channel adds the socket's address and the key's scope. */
export interface WebSocketSubmit {
  principal: Principal;
  sessionKey: string;
  text: string;
  identity: ChatIdentity;
  /** The frame's `idempotency_key`, unvalidated (the message path applies the key rules). */
  idempotencyKey: string | undefined;
  /** The frame's `agent` (DECISIONS §17). */
  agent?: string;
  /** The frame's `traceparent` (DECISIONS §21). */
  traceparent?: string;
}

/** Live-feed topics of what every principal shares (DECISIONS §18): the rest is per principal. */
const SHARED_TOPICS: ReadonlySet<Topic> = new Set<Topic>(['skills', 'knowledge', 'channels']);

/** Everything one connection needs, narrowed to what it uses (the channel wires the real services). */
export interface ConnectionDeps extends Omit<AuthDeps, 'authTimeoutMs'> {
  limits: WebSocketLimits;
  /** Counts one message against the token's `write` group. */
  rateLimit(fingerprint: string): RateDecision;
  /** The message path's `submit` (the reply is always followed to its end, so the submission waits). */
  submit(input: WebSocketSubmit): Promise<Submitted>;
  /** The message path's `follow`. */
  follow(eventId: string, options: FollowOptions): AsyncIterable<TurnStep>;
  /** The message path's `interrupt(eventId, 'interrupted')`: false when the turn is not running here. */
  interrupt(eventId: string): boolean;
  bus: Pick<EventBus, 'subscribe'>;
  /** Counts one accepted chat message for the channel's stats. */
  noteMessage(): void;
  /** Told once when the client has authenticated (counts as a client from then on). */
  onAuthenticated(connection: WebSocketConnection): void;
  /** Told once when the connection is over, whoever closed it. */
  onClosed(connection: WebSocketConnection): void;
}

type State = 'pending' | 'open' | 'closed';

/**
 * One WebSocket client (DECISIONS §8): authentication (header, `?token=`,
 * or a first `auth` frame within the deadline), the chat identity, message
 * frames through intake with their idempotency keys, turn streaming
 * (subscribe → flush → replay → follow, so no event is missed), interrupts,
 * live-feed subscriptions and ping.
 *
 * Bounded: inbound frames are handled one at a time in arrival order and
 * reading pauses when they queue up; outbound frames close the client with
 * 1013 once its send buffer passes `maxBufferedBytes`; turns followed at once
 * are capped; every hub and bus subscription ends when the connection does.
 */
export class WebSocketConnection {
  private state: State = 'pending';
  private session: Authenticated | null = null;
  private readonly auth: WebSocketAuth;
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;
  private paused = false;
  /** Turns followed now, each with the controller that stops following it. */
  private readonly follows = new Map<string, AbortController>();
  private readonly owned = new Set<string>();
  private readonly topics = new Set<Topic>();
  private busUnsubscribe: (() => void) | null = null;

  constructor(
    private readonly socket: FrameSocket,
    handshake: Handshake,
    private readonly deps: ConnectionDeps,
  ) {
    this.auth = new WebSocketAuth(
      {
        send: (frame) => this.send(frame),
        close: (code, reason) => this.close(code, reason),
        isClosed: () => this.state === 'closed',
        enqueue: (task) => this.enqueue(task),
        established: (session, first) => {
          this.session = session;
          this.state = 'open';
          if (first) this.deps.onAuthenticated(this);
        },
      },
      handshake,
      { ...deps, authTimeoutMs: deps.limits.authTimeoutMs },
    );
  }

  /** True once authenticated and until closed. */
  get authenticated(): boolean {
    return this.state === 'open';
  }

  /** True once the connection is over. */
  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Turns this connection follows right now. */
  get followedTurns(): number {
    return this.follows.size;
  }

  /**
   * Starts the connection: authenticates at once from the handshake (minimal
   * profile, header token, `?token=`), else waits for an `auth` frame until
   * the deadline.
   */
  start(): void {
    this.auth.start();
  }

  /** Handles one inbound text frame (queued behind the frames before it). */
  receive(text: string): void {
    if (this.state === 'closed') return;
    const limit = this.deps.limits.maxQueuedFrames;
    if (this.queued >= limit * HARD_QUEUE_FACTOR) {
      this.send({ type: 'error', error: { code: 'RATE_LIMITED', message: 'too many frames queued; slow down' } });
      return;
    }
    this.enqueue(() => this.handleFrame(text));
  }

  /** A binary frame: the protocol is JSON text only. */
  receiveBinary(): void {
    if (this.state === 'closed') return;
    this.send({ type: 'error', error: { code: 'BAD_REQUEST', message: 'frames must be JSON text' } });
  }

  /** Closes from the server side (channel stop, protocol errors); ends every subscription. Idempotent. */
  close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.finish();
    try {
      this.socket.close(code, reason);
    } catch (err) {
      this.deps.logger.debug({ err: (err as Error).message }, 'websocket close failed');
    }
  }

  /** The socket closed (either side): ends every subscription. Idempotent. */
  socketClosed(): void {
    if (this.state === 'closed') return;
    this.finish();
  }

  /**
   * Sends one frame unless the socket is no longer open. A client whose
   * unsent bytes pass `maxBufferedBytes` does not read fast enough: it is
   * closed with 1013, so its frames stop queuing in server memory.
   */
  send(frame: ServerFrame): void {
    if (this.state === 'closed' || this.socket.readyState !== OPEN) return;
    this.socket.send(JSON.stringify(frame));
    if (this.socket.bufferedAmount > this.deps.limits.maxBufferedBytes) {
      this.deps.logger.warn(
        { buffered: this.socket.bufferedAmount, limit: this.deps.limits.maxBufferedBytes },
        'websocket client too slow: closing',
      );
      this.close(CLOSE_CODES.TRY_AGAIN_LATER, 'client too slow: outbound buffer full');
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Frame queue

  private enqueue(task: () => Promise<void>): void {
    this.queued++;
    if (!this.paused && this.queued >= this.deps.limits.maxQueuedFrames) {
      this.paused = true;
      this.socket.pause();
    }
    this.chain = this.chain
      .then(async () => {
        if (this.state !== 'closed') await task();
      })
      .catch((err: unknown) => {
        this.deps.logger.error({ err }, 'websocket frame handling failed');
        this.sendError(undefined, { code: 'INTERNAL_ERROR', message: 'internal error' });
      })
      .finally(() => {
        this.queued--;
        if (this.paused && this.queued <= Math.floor(this.deps.limits.maxQueuedFrames / 2)) {
          this.paused = false;
          if (this.state !== 'closed') this.socket.resume();
        }
      });
  }

  private async handleFrame(text: string): Promise<void> {
    const parsed = parseClientFrame(text);
    if (!parsed.ok) {
      this.sendError(parsed.ref, parsed.error);
      return;
    }
    const frame = parsed.frame;
    if (this.state === 'pending') {
      await this.auth.pendingFrame(frame);
      return;
    }
    try {
      await this.dispatch(frame);
    } catch (err) {
      const body = frameErrorOf(err);
      if (body.unexpected) this.deps.logger.error({ err, frame: frame.type }, 'websocket frame failed');
      const { unexpected: _unexpected, ...error } = body;
      this.sendError('ref' in frame ? frame.ref : undefined, error);
    }
  }

  private async dispatch(frame: ClientFrame): Promise<void> {
    switch (frame.type) {
      case 'auth':
        await this.auth.again(frame);
        return;
      case 'message':
        await this.message(frame);
        return;
      case 'interrupt':
        this.interrupt(frame.event_id, frame.ref);
        return;
      case 'subscribe':
        this.subscribe(frame.topics);
        return;
      case 'unsubscribe':
        this.unsubscribe(frame.topics);
        return;
      case 'ping':
        this.send({ type: 'pong' });
        return;
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Chat

  private async message(frame: MessageFrame): Promise<void> {
    const { principal, identity } = this.session!;
    if (this.follows.size >= this.deps.limits.maxTurnsPerConnection) {
      throw errors.rateLimited(1, {
        reason: 'too many turns in flight on this connection',
        limit: this.deps.limits.maxTurnsPerConnection,
      });
    }
    if (this.deps.profile !== 'minimal' && principal.fingerprint !== null) {
      const decision = this.deps.rateLimit(rateKeyOf(principal) ?? principal.fingerprint);
      if (!decision.allowed) {
        throw errors.rateLimited(decision.resetSeconds, {
          group: 'write',
          limit: decision.limit,
          retry_after_seconds: decision.resetSeconds,
        });
      }
    }
    const sessionKey = frame.session_key ?? sessionKeyFor(identity.platform, identity.chat_id, principal);
    if (!sessionKey.startsWith('gateway:') || sessionKey.length <= 'gateway:'.length) {
      throw errors.badRequest('session_key must start with "gateway:"');
    }
    const submitted = await this.deps.submit({
      principal,
      sessionKey,
      text: frame.text,
      identity,
      idempotencyKey: frame.idempotency_key,
      ...(frame.agent !== undefined ? { agent: frame.agent } : {}),
      ...(frame.traceparent !== undefined ? { traceparent: frame.traceparent } : {}),
    });
    if (!submitted.replay) this.deps.noteMessage();
    this.own(submitted.eventId);
    if (this.state === 'closed') return;
    this.send({
      type: 'accepted',
      ...(frame.ref !== undefined ? { ref: frame.ref } : {}),
      event_id: submitted.eventId,
      session_key: submitted.sessionKey,
    });
    this.follow(submitted.eventId, frame.ref);
  }

  private own(eventId: string): void {
    this.owned.delete(eventId);
    this.owned.add(eventId);
    while (this.owned.size > MAX_OWNED) this.owned.delete(this.owned.values().next().value!);
  }

  /**
   * Streams a turn's frames to this client through the message path's
   * `follow` (replay, then live; the ledger ends it when no final event
   * does); a turn already followed is not followed twice.
   */
  private follow(eventId: string, ref: FrameRef | undefined): void {
    if (this.follows.has(eventId) || this.state === 'closed') return;
    const stop = new AbortController();
    this.follows.set(eventId, stop);
    void (async () => {
      try {
        for await (const step of this.deps.follow(eventId, {
          fromSeq: 0,
          endOnPause: true,
          timeoutMs: this.deps.limits.followTimeoutMs,
          signal: stop.signal,
          maxBufferedEvents: this.deps.limits.maxBufferedEvents,
        })) {
          if (stop.signal.aborted) return;
          const out = followStepFrame(step, eventId, ref);
          if (out.kind !== 'skip') this.send(out.frame);
          if (out.kind === 'end') return;
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        const body = frameErrorOf(err);
        if (body.unexpected) this.deps.logger.warn({ err, event_id: eventId }, 'websocket turn follow failed');
        this.sendError(
          ref,
          body.unexpected
            ? { code: 'UNAVAILABLE', message: 'could not follow the turn' }
            : { code: body.code, message: body.message },
          eventId,
        );
      } finally {
        if (this.follows.get(eventId) === stop) this.follows.delete(eventId);
      }
    })();
  }

  /** Interrupts a running turn: any turn for admin, turns accepted on this connection for api tokens. */
  private interrupt(eventId: string, ref: FrameRef | undefined): void {
    const allowed = this.session?.role === 'admin' || this.owned.has(eventId);
    if (!allowed || !this.deps.interrupt(eventId)) {
      this.sendError(ref, { code: 'NOT_FOUND', message: 'no running turn with this event_id' }, eventId);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Live feed

  private subscribe(names: readonly string[]): void {
    const { topics, unknown } = resolveTopics(names);
    if (unknown.length > 0) {
      throw errors.badRequest(`unknown topics: ${unknown.join(', ')}`, { unknown });
    }
    if (topics.includes('logs') && this.role !== 'admin') {
      throw errors.forbidden('the logs topic needs the admin role');
    }
    const before = [...this.topics];
    for (const topic of topics) this.topics.add(topic);
    try {
      this.resubscribe();
    } catch (err) {
      this.topics.clear();
      for (const topic of before) this.topics.add(topic);
      this.deps.logger.warn({ err: (err as Error).message }, 'websocket live-feed subscription refused');
      throw errors.unavailable('too many live-feed subscriptions; retry later');
    }
    this.send({ type: 'subscribed', topics });
  }

  private unsubscribe(names: readonly string[]): void {
    const { topics, unknown } = resolveTopics(names);
    if (unknown.length > 0) throw errors.badRequest(`unknown topics: ${unknown.join(', ')}`, { unknown });
    for (const topic of topics) this.topics.delete(topic);
    this.resubscribe();
    this.send({ type: 'unsubscribed', topics });
  }

  /** One bus subscription for the current topic set (subscribe first, then drop the old one: no gap). */
  private resubscribe(): void {
    const previous = this.busUnsubscribe;
    this.busUnsubscribe =
      this.topics.size === 0
        ? null
        : this.deps.bus.subscribe([...this.topics], (event) => {
            if (!this.feedVisible(event)) return;
            this.send({ type: 'event', topic: event.topic, event: event.event, data: event.data });
          });
    previous?.();
  }

  // ---------------------------------------------------------------------------------------------------------------

  /**
   * Whether a live-feed event reaches this connection (DECISIONS §18). A
   * configured api principal's feed carries its own turns and sessions (the
   * turns it sent here, the sessions keyed with its id) and the shared
   * resources (skills, knowledge, channels); nothing of other principals'
   * work. Every other connection sees the whole feed, as before principals.
   */
  private feedVisible(event: { topic: Topic; data: Record<string, unknown> }): boolean {
    const principal = this.session?.principal;
    if (!principal || isolatedPrincipal(principal) === null) return true;
    if (event.topic === 'turns') return this.owned.has(String(event.data.event_id));
    if (event.topic === 'sessions') {
      const key = typeof event.data.id === 'string' ? event.data.id : event.data.session_key;
      return typeof key === 'string' && key.includes(`${principalKeyPart(principal)}:`);
    }
    return SHARED_TOPICS.has(event.topic);
  }

  private get role(): Role {
    return this.session?.role ?? 'api';
  }

  private sendError(ref: FrameRef | undefined, error: FrameErrorBody, eventId?: string): void {
    this.send({
      type: 'error',
      ...(ref !== undefined ? { ref } : {}),
      ...(eventId !== undefined ? { event_id: eventId } : {}),
      error,
    });
  }

  private finish(): void {
    this.state = 'closed';
    this.auth.cancel();
    this.busUnsubscribe?.();
    this.busUnsubscribe = null;
    this.topics.clear();
    for (const stop of this.follows.values()) stop.abort();
    this.follows.clear();
    this.deps.onClosed(this);
  }
}
