import type { BusEvent, Topic } from '../../events/index.js';
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
  type AuthPort,
  type ChatIdentity,
  type Handshake,
  type Peer,
  type Role,
} from './websocket.auth.js';
import { topicBit, topicsOf, type FeedMember, type TopicMask, type WebSocketFeed } from './websocket.feed.js';
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

export type { ChatIdentity, Handshake, Peer, WebSocketAuditEntry } from './websocket.auth.js';

/** Bounds of one connection (DECISIONS §8: slow consumers cannot grow memory). */
export interface WebSocketLimits {
  /** Time a client has to authenticate before it is closed with 4401 (default 10 s). */
  authTimeoutMs: number;
  /**
   * Outbound bytes queued for one client beyond which it is closed with 1013 (default 1 MiB,
   * `limits.streams.max_buffered_bytes`). A frame sent while nothing is queued always goes out.
   */
  maxBufferedBytes: number;
  /** Turns one connection follows at once; more → RATE_LIMITED error frame (default 16). */
  maxTurnsPerConnection: number;
  /** Inbound frames queued for handling before reading from the socket pauses (default 32). */
  maxQueuedFrames: number;
  /** Live events held per followed turn while its stored events are replayed (default 10 000). */
  maxBufferedEvents: number;
  /** How long a turn is followed before a TIMEOUT error frame (the turn goes on). */
  followTimeoutMs: number;
  /**
   * Open connections (authenticated or not) beyond which upgrades are refused with 503 (default 20 000,
   * `limits.streams.websocket_max_connections`).
   */
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
  maxConnections: 20_000,
  closeGraceMs: 2_000,
  heartbeatMs: 30_000,
};

/** `WebSocket.OPEN` (ws and the browser API agree). */
const OPEN = 1;
/** `send` options: every frame is a text frame, a pre-encoded Buffer too. */
const TEXT = { binary: false } as const;
/**
 * A followed turn's next frame waits until the frames before it have left the
 * process once this many bytes (or half the cap, if less) are unsent: a reply
 * is read from the store at the pace of its client, not pushed past the cap.
 */
const PACE_BYTES = 64 * 1024;
/** Inbound frames beyond `maxQueuedFrames` times this are refused outright (reading is paused long before). */
const HARD_QUEUE_FACTOR = 4;
/**
 * `retry_after_seconds` of the per-connection limits (turns in flight, frames queued): their room comes back
 * when a turn or a frame ends, which no clock foretells, so the client is told the least REST ever says.
 */
const CONNECTION_RETRY_AFTER_SECONDS = 1;
/** Event ids a connection remembers as its own (api tokens may interrupt only those). */
const MAX_OWNED = 1024;

/** The part of a `ws` WebSocket a connection uses (a fake in unit tests). */
export interface FrameSocket {
  readonly readyState: number;
  /** Bytes queued for sending and not yet handed to the kernel. */
  readonly bufferedAmount: number;
  /**
   * Sends one text frame (a Buffer holds its UTF-8 bytes and may be shared by many sockets); `done` is
   * called once the frame has left the process (or could not).
   */
  send(data: string | Buffer, options: typeof TEXT, done?: (err?: Error) => void): void;
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

/**
 * Everything a connection needs, narrowed to what it uses; one object the
 * channel shares among all its connections (what differs per connection is
 * its `Peer`).
 */
export interface ConnectionDeps extends AuthDeps {
  limits: WebSocketLimits;
  /** Counts one message against the token's `write` group. */
  rateLimit(fingerprint: string): RateDecision;
  /** The message path's `submit` (the reply is always followed to its end, so the submission waits). */
  submit(input: WebSocketSubmit, peer: Peer): Promise<Submitted>;
  /** The message path's `follow`. */
  follow(eventId: string, options: FollowOptions): AsyncIterable<TurnStep>;
  /** The message path's `interrupt(eventId, 'interrupted')`: false when the turn is not running here. */
  interrupt(eventId: string): boolean;
  /** The live feed's topics. */
  feed: Pick<WebSocketFeed, 'add' | 'remove'>;
  /** Counts one accepted chat message for the channel's stats. */
  noteMessage(): void;
  /** Told once when the client has authenticated (counts as a client from then on). */
  onAuthenticated(connection: WebSocketConnection): void;
  /** Told once when the connection is over, whoever closed it. */
  onClosed(connection: WebSocketConnection): void;
}

type State = 'pending' | 'open' | 'closed';

/** One followed turn. */
interface Follow {
  stop: AbortController;
  /** Live events heard for it and not yet sent (while it replays or waits for its client), in bytes. */
  held: number;
}

/**
 * One WebSocket client (DECISIONS §8): authentication (header, `?token=`,
 * or a first `auth` frame within the deadline), the chat identity, message
 * frames through intake with their idempotency keys, turn streaming
 * (subscribe → flush → replay → follow, so no event is missed), interrupts,
 * live-feed subscriptions and ping.
 *
 * Bounded: inbound frames are handled one at a time in arrival order and
 * reading pauses when they queue up; every outbound frame (replies, the live
 * feed, errors) closes the client with 1013 once its send buffer passes
 * `maxBufferedBytes`; turns followed at once are capped; every follow and
 * live-feed topic ends the moment the connection does.
 *
 * Small when idle (a few hundred bytes beside the socket): the services are
 * shared, collections are made on first use, topics are bits.
 */
export class WebSocketConnection implements AuthPort, FeedMember {
  private state: State = 'pending';
  private session: Authenticated | null = null;
  private readonly auth: WebSocketAuth;
  /** The frame being handled and those queued behind it; null when none is. */
  private chain: Promise<void> | null = null;
  private queued = 0;
  private paused = false;
  /** Turns followed now: the controller that stops following each, and the bytes its live events hold. */
  private follows: Map<string, Follow> | null = null;
  private owned: Set<string> | null = null;
  private topics: TopicMask = 0;
  /** Whether the client answered the last protocol ping (the channel's heartbeat). */
  answeredPing = true;

  constructor(
    private readonly socket: FrameSocket,
    handshake: Handshake,
    private readonly deps: ConnectionDeps,
    /** Where the client connects from. */
    readonly peer: Peer,
  ) {
    this.auth = new WebSocketAuth(this, handshake, deps);
  }

  /** True once authenticated and until closed. */
  get authenticated(): boolean {
    return this.state === 'open';
  }

  /** True once authentication succeeded, also after the connection closed. */
  get wasAuthenticated(): boolean {
    return this.session !== null;
  }

  /** True once the connection is over. */
  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Turns this connection follows right now. */
  get followedTurns(): number {
    return this.follows?.size ?? 0;
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
      const { unexpected: _unexpected, ...error } = frameErrorOf(
        errors.rateLimited(CONNECTION_RETRY_AFTER_SECONDS, {
          reason: 'too many frames queued on this connection',
          limit: limit * HARD_QUEUE_FACTOR,
        }),
      );
      this.sendError(undefined, { ...error, message: 'too many frames queued; slow down' });
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

  /** Sends one frame unless the socket is no longer open (see `sendData` for the buffer cap). */
  send(frame: ServerFrame): void {
    if (this.state === 'closed' || this.socket.readyState !== OPEN) return;
    this.sendData(JSON.stringify(frame));
  }

  /** One live-feed event of a topic this connection is subscribed to (`WebSocketFeed`). */
  feedEvent(event: BusEvent, frame: () => Buffer): void {
    if (this.state !== 'open' || !this.feedVisible(event)) return;
    this.sendData(frame());
  }

  /** Authentication succeeded (told by this connection's `WebSocketAuth` only). */
  established(session: Authenticated, first: boolean): void {
    this.session = session;
    this.state = 'open';
    if (first) this.deps.onAuthenticated(this);
  }

  /**
   * Every frame goes out here. A client whose unsent bytes — its socket's
   * buffer and the live events held for the turns it follows — pass
   * `maxBufferedBytes` while earlier frames were still unsent does not read
   * fast enough: it is closed with 1013 (and resumes on a new connection), so
   * its frames stop queuing in server memory; at most the cap plus one frame
   * is held for it. A frame sent while nothing was queued always goes out,
   * so one large frame does not cut off a client that keeps up. `done`: see
   * `FrameSocket.send`.
   */
  private sendData(data: string | Buffer, done?: () => void): void {
    if (this.state === 'closed' || this.socket.readyState !== OPEN) {
      done?.();
      return;
    }
    const before = this.socket.bufferedAmount;
    this.socket.send(data, TEXT, done);
    if (before > 0) this.checkUnsent();
  }

  /** Closes the client with 1013 when its unsent bytes pass the cap (`sendData`). */
  private checkUnsent(): void {
    const buffered = this.socket.bufferedAmount;
    let held = 0;
    for (const follow of this.follows?.values() ?? []) held += follow.held;
    if (buffered + held <= this.deps.limits.maxBufferedBytes) return;
    this.deps.logger.warn(
      { buffered, held, limit: this.deps.limits.maxBufferedBytes },
      'websocket client too slow: closing',
    );
    this.close(CLOSE_CODES.TRY_AGAIN_LATER, 'client too slow: outbound buffer full');
  }

  /**
   * Sends one frame of a followed turn; when much is unsent already, resolves
   * only once this frame has left the process (or the follow stops), so the
   * follow reads its next event at the client's pace.
   */
  private async sendPaced(frame: ServerFrame, stop: AbortSignal): Promise<void> {
    const pace = Math.min(PACE_BYTES, Math.floor(this.deps.limits.maxBufferedBytes / 2));
    if (this.socket.bufferedAmount <= pace) {
      this.send(frame);
      return;
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stop.removeEventListener('abort', done);
        resolve();
      };
      stop.addEventListener('abort', done, { once: true });
      this.sendData(JSON.stringify(frame), done);
    });
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Frame queue

  /** Runs `task` after the frames before it (reading pauses while too many queue up). */
  enqueue(task: () => Promise<void>): void {
    this.queued++;
    if (!this.paused && this.queued >= this.deps.limits.maxQueuedFrames) {
      this.paused = true;
      this.socket.pause();
    }
    this.chain = (this.chain ?? Promise.resolve())
      .then(async () => {
        if (this.state !== 'closed') await task();
      })
      .catch((err: unknown) => {
        this.deps.logger.error({ err }, 'websocket frame handling failed');
        this.sendError(undefined, { code: 'INTERNAL_ERROR', message: 'internal error' });
      })
      .finally(() => {
        this.queued--;
        // Idle: the settled chain is not kept.
        if (this.queued === 0) this.chain = null;
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
    if (this.followedTurns >= this.deps.limits.maxTurnsPerConnection) {
      throw errors.rateLimited(CONNECTION_RETRY_AFTER_SECONDS, {
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
    const submitted = await this.deps.submit(
      {
        principal,
        sessionKey,
        text: frame.text,
        identity,
        idempotencyKey: frame.idempotency_key,
        ...(frame.agent !== undefined ? { agent: frame.agent } : {}),
        ...(frame.traceparent !== undefined ? { traceparent: frame.traceparent } : {}),
      },
      this.peer,
    );
    if (!submitted.replay) this.deps.noteMessage();
    this.own(submitted.eventId);
    if (this.state === 'closed') return;
    this.send({
      type: 'accepted',
      ...(frame.ref !== undefined ? { ref: frame.ref } : {}),
      event_id: submitted.eventId,
      session_key: submitted.sessionKey,
    });
    // A retry resumes the reply after the last frame the client saw (`after_seq`); a new turn starts at 0.
    this.follow(submitted.eventId, frame.ref, submitted.replay ? (frame.after_seq ?? 0) : 0);
  }

  private own(eventId: string): void {
    const owned = (this.owned ??= new Set());
    owned.delete(eventId);
    owned.add(eventId);
    while (owned.size > MAX_OWNED) owned.delete(owned.values().next().value!);
  }

  /**
   * Streams a turn's frames after `fromSeq` to this client through the
   * message path's `follow` (replay, then live; the ledger ends it when no
   * final event does); a turn already followed is not followed twice.
   */
  private follow(eventId: string, ref: FrameRef | undefined, fromSeq: number): void {
    if (this.follows?.has(eventId) || this.state === 'closed') return;
    const stop = new AbortController();
    const follow: Follow = { stop, held: 0 };
    const follows = (this.follows ??= new Map());
    follows.set(eventId, follow);
    void (async () => {
      try {
        for await (const step of this.deps.follow(eventId, {
          fromSeq,
          endOnPause: true,
          timeoutMs: this.deps.limits.followTimeoutMs,
          signal: stop.signal,
          maxBufferedEvents: this.deps.limits.maxBufferedEvents,
          // Live events held while the reply waits for its client count as unsent bytes of the client.
          onHeld: (bytes) => {
            const grew = bytes > follow.held;
            follow.held = bytes;
            if (grew && this.state !== 'closed' && this.socket.bufferedAmount > 0) this.checkUnsent();
          },
        })) {
          if (stop.signal.aborted) return;
          const out = followStepFrame(step, eventId, ref);
          if (out.kind !== 'skip') await this.sendPaced(out.frame, stop.signal);
          if (out.kind === 'end' || stop.signal.aborted) return;
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
        if (this.follows?.get(eventId) === follow) this.follows.delete(eventId);
      }
    })();
  }

  /** Interrupts a running turn: any turn for admin, turns accepted on this connection for api tokens. */
  private interrupt(eventId: string, ref: FrameRef | undefined): void {
    const allowed = this.session?.role === 'admin' || this.owned?.has(eventId) === true;
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
    const added = topics.filter((topic) => (this.topics & topicBit(topic)) === 0);
    try {
      this.deps.feed.add(this, added);
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message }, 'websocket live-feed subscription refused');
      throw errors.unavailable('too many live-feed subscriptions; retry later');
    }
    for (const topic of added) this.topics |= topicBit(topic);
    this.send({ type: 'subscribed', topics });
  }

  private unsubscribe(names: readonly string[]): void {
    const { topics, unknown } = resolveTopics(names);
    if (unknown.length > 0) throw errors.badRequest(`unknown topics: ${unknown.join(', ')}`, { unknown });
    this.deps.feed.remove(this, topics);
    for (const topic of topics) this.topics &= ~topicBit(topic);
    this.send({ type: 'unsubscribed', topics });
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
    if (event.topic === 'turns') return this.owned?.has(String(event.data.event_id)) === true;
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
    if (this.topics !== 0) this.deps.feed.remove(this, topicsOf(this.topics));
    this.topics = 0;
    const follows = this.follows;
    this.follows = null;
    for (const { stop } of follows?.values() ?? []) stop.abort();
    this.deps.onClosed(this);
  }
}
