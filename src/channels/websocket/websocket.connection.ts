import type { SecurityProfile } from '../../config/config.schema.js';
import type { EventBus, Topic } from '../../events/event-bus.js';
import { errors, type ErrorCode } from '../../http/errors.js';
import type { Principal } from '../../http/route.js';
import { validateKey } from '../../idempotency/idempotency.service.js';
import type { Logger } from '../../logs/logger.js';
import type { RateDecision } from '../../security/rate-limit.js';
import { fingerprintToken } from '../../security/tokens.js';
import type { SubmitResult } from '../../turns/intake.js';
import { sessionKeyFor } from '../../turns/message-submit.js';
import type { TurnEvent, TurnEventHub } from '../../turns/turn-events.js';
import type { InboundPayload } from '../../turns/turn-runner.js';
import { turnError, turnOutcomeMessage } from '../../turns/turns.presenter.js';
import type { TurnRecord } from '../../turns/turns.repo.js';
import {
  CLOSE_CODES,
  frameErrorOf,
  identityFields,
  parseClientFrame,
  resolveTopics,
  turnEventStep,
  type AuthFrame,
  type ClientFrame,
  type FrameErrorBody,
  type FrameRef,
  type MessageFrame,
  type ServerFrame,
} from './websocket.frames.js';

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

/** What the upgrade request carried. */
export interface Handshake {
  /** Token from `token_header` or `Authorization: Bearer` (full role). */
  headerToken: string | null;
  /** Token from `?token=` (api rights at most). */
  queryToken: string | null;
  /** Identity from the query string (`platform`, `user_id`, `chat_id`), unvalidated. */
  identity: Record<'platform' | 'user_id' | 'chat_id', string | undefined>;
}

/** Who the connection speaks for once authenticated. */
export interface ChatIdentity {
  platform: string;
  user_id: string;
  chat_id: string;
}

/** A message a connection hands to intake: the channel adapts it to `submitMessage`. */
export interface WebSocketSubmit {
  principal: Principal;
  sessionKey: string;
  payload: InboundPayload;
  idempotencyKey: string | undefined;
}

/** An auth audit record as the connection reports it; the channel adds ip, mode and path. */
export interface WebSocketAuditEntry {
  event: 'auth_success' | 'auth_failure';
  user: string;
  reason?: string;
}

/** Everything one connection needs, narrowed to what it uses (the channel wires the real services). */
export interface ConnectionDeps {
  profile: SecurityProfile;
  limits: WebSocketLimits;
  /** `guard.principalForToken`: null when the token is missing or unknown. */
  resolveToken(token: string | null, via: 'header' | 'query' | 'frame'): Principal | null;
  audit(entry: WebSocketAuditEntry): void;
  /** The auth-mode identity check (loopback exemption applied by the channel); throws ApiError 403. */
  checkIdentity(identity: ChatIdentity): Promise<void>;
  /** Counts one message against the token's `write` group. */
  rateLimit(fingerprint: string): RateDecision;
  submit(input: WebSocketSubmit): Promise<SubmitResult>;
  hub: Pick<TurnEventHub, 'subscribe' | 'flush' | 'replay'>;
  /** `waiters.wait`: the turn once it has an outcome, null on timeout or abort. */
  waitOutcome(eventId: string, timeoutMs: number, signal: AbortSignal): Promise<TurnRecord | null>;
  /** `runner.interrupt(eventId, 'interrupted')`: false when the turn is not running here. */
  interrupt(eventId: string): boolean;
  bus: Pick<EventBus, 'subscribe'>;
  /** Counts one accepted chat message for the channel's stats. */
  noteMessage(): void;
  logger: Logger;
  /** Told once when the client has authenticated (counts as a client from then on). */
  onAuthenticated(connection: WebSocketConnection): void;
  /** Told once when the connection is over, whoever closed it. */
  onClosed(connection: WebSocketConnection): void;
}

type State = 'pending' | 'open' | 'closed';
type Role = 'admin' | 'api';

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
  private principal: Principal | null = null;
  private role: Role = 'api';
  private identity: ChatIdentity | null = null;
  private authTimer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;
  private paused = false;
  private readonly follows = new Map<string, TurnFollow>();
  private readonly owned = new Set<string>();
  private readonly topics = new Set<Topic>();
  private busUnsubscribe: (() => void) | null = null;

  constructor(
    private readonly socket: FrameSocket,
    private readonly handshake: Handshake,
    private readonly deps: ConnectionDeps,
  ) {}

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
    const { headerToken, queryToken } = this.handshake;
    if (this.deps.profile === 'minimal') {
      // Minimal: no token needed (DECISIONS §4); a valid token still names the principal (idempotency scope).
      const token = headerToken ?? queryToken;
      const known = token ? this.deps.resolveToken(token, 'header') : null;
      const principal: Principal = known ?? { role: 'anonymous', fingerprint: null, scope: 'anonymous' };
      this.enqueue(() => this.authenticate(principal, 'admin', this.handshake.identity));
      return;
    }
    if (headerToken !== null || queryToken !== null) {
      const via = headerToken !== null ? 'header' : 'query';
      const token = (headerToken ?? queryToken)!;
      this.enqueue(() => this.authenticateToken(token, via, this.handshake.identity));
      return;
    }
    this.authTimer = setTimeout(() => this.authDeadline(), this.deps.limits.authTimeoutMs);
    this.authTimer.unref();
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
      if (frame.type === 'auth') await this.authFrame(frame);
      else this.reject('UNAUTHORIZED', 'authenticate first: send {"type":"auth","token":…}', 'not_authenticated');
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
        await this.reauthenticate(frame);
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
  // Authentication

  private authDeadline(): void {
    if (this.state !== 'pending') return;
    this.deps.audit({ event: 'auth_failure', user: '', reason: 'auth_timeout' });
    this.reject('UNAUTHORIZED', 'authentication timed out', null);
  }

  private async authFrame(frame: AuthFrame): Promise<void> {
    const identity = {
      platform: frame.platform ?? this.handshake.identity.platform,
      user_id: frame.user_id ?? this.handshake.identity.user_id,
      chat_id: frame.chat_id ?? this.handshake.identity.chat_id,
    };
    if (this.deps.profile === 'minimal') {
      await this.authenticate(
        (frame.token ? this.deps.resolveToken(frame.token, 'frame') : null) ?? {
          role: 'anonymous',
          fingerprint: null,
          scope: 'anonymous',
        },
        'admin',
        identity,
      );
      return;
    }
    if (frame.token === undefined || frame.token === '') {
      this.reject('UNAUTHORIZED', 'missing token', 'missing_token');
      return;
    }
    await this.authenticateToken(frame.token, 'frame', identity);
  }

  /** An `auth` frame after authentication: the minimal profile re-acknowledges (and may change identity). */
  private async reauthenticate(frame: AuthFrame): Promise<void> {
    if (this.deps.profile !== 'minimal') throw errors.badRequest('already authenticated');
    const identity = {
      platform: frame.platform ?? this.identity?.platform,
      user_id: frame.user_id ?? this.identity?.user_id,
      chat_id: frame.chat_id ?? this.identity?.chat_id,
    };
    await this.authenticate(this.principal!, 'admin', identity);
  }

  private async authenticateToken(
    token: string,
    via: 'header' | 'query' | 'frame',
    identity: Handshake['identity'],
  ): Promise<void> {
    const principal = this.deps.resolveToken(token, via);
    if (!principal || principal.role === 'anonymous' || principal.fingerprint === null) {
      this.deps.audit({ event: 'auth_failure', user: fingerprintToken(token), reason: 'invalid_token' });
      this.reject('UNAUTHORIZED', 'invalid token', null);
      return;
    }
    await this.authenticate(principal, principal.role, identity, via);
  }

  /** Settles the identity, checks it by auth mode, then answers `auth_ok` (always the first frame after success). */
  private async authenticate(
    principal: Principal,
    role: Role,
    input: Handshake['identity'],
    via?: 'header' | 'query' | 'frame',
  ): Promise<void> {
    if (this.state === 'closed') return;
    const user = input.user_id ?? principal.fingerprint ?? 'anonymous';
    const candidate = { platform: input.platform ?? 'ws', user_id: user, chat_id: input.chat_id ?? user };
    const checked = identityFields.safeParse(candidate);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      const where = issue ? `${issue.path.map(String).join('.')}: ${issue.message}` : 'invalid identity';
      this.sendError(undefined, { code: 'BAD_REQUEST', message: `invalid identity: ${where}` });
      this.close(CLOSE_CODES.BAD_REQUEST, 'invalid identity');
      return;
    }
    try {
      await this.deps.checkIdentity(candidate);
    } catch (err) {
      const body = frameErrorOf(err);
      if (body.unexpected) this.deps.logger.error({ err }, 'websocket identity check failed');
      const { unexpected: _unexpected, ...error } = body;
      this.sendError(undefined, error);
      const forbidden = error.code === 'FORBIDDEN';
      this.close(forbidden ? CLOSE_CODES.FORBIDDEN : CLOSE_CODES.INTERNAL_ERROR, forbidden ? 'forbidden' : 'error');
      return;
    }
    if (this.isClosed) return; // closed while the identity was checked
    clearTimeout(this.authTimer);
    const first = this.state === 'pending';
    this.principal = principal;
    this.role = role;
    this.identity = candidate;
    this.state = 'open';
    if (first && via && principal.fingerprint) {
      this.deps.audit({ event: 'auth_success', user: principal.fingerprint, reason: `websocket_${via}` });
    }
    this.send({ type: 'auth_ok', role });
    if (first && this.state === 'open') this.deps.onAuthenticated(this);
  }

  /** Refuses authentication: an UNAUTHORIZED error frame, then close 4401. */
  private reject(code: ErrorCode, message: string, auditReason: string | null): void {
    if (auditReason) this.deps.audit({ event: 'auth_failure', user: '', reason: auditReason });
    this.sendError(undefined, { code, message });
    this.close(CLOSE_CODES.UNAUTHORIZED, message);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Chat

  private async message(frame: MessageFrame): Promise<void> {
    const principal = this.principal!;
    const identity = this.identity!;
    if (this.follows.size >= this.deps.limits.maxTurnsPerConnection) {
      throw errors.rateLimited(1, {
        reason: 'too many turns in flight on this connection',
        limit: this.deps.limits.maxTurnsPerConnection,
      });
    }
    if (this.deps.profile !== 'minimal' && principal.fingerprint !== null) {
      const decision = this.deps.rateLimit(principal.fingerprint);
      if (!decision.allowed) {
        throw errors.rateLimited(decision.resetSeconds, {
          group: 'write',
          limit: decision.limit,
          retry_after_seconds: decision.resetSeconds,
        });
      }
    }
    const sessionKey = frame.session_key ?? sessionKeyFor(identity.platform, identity.chat_id);
    if (!sessionKey.startsWith('gateway:') || sessionKey.length <= 'gateway:'.length) {
      throw errors.badRequest('session_key must start with "gateway:"');
    }
    const idempotencyKey =
      frame.idempotency_key !== undefined ? validateKey(frame.idempotency_key, 'idempotency_key') : undefined;
    const result = await this.deps.submit({
      principal,
      sessionKey,
      idempotencyKey,
      payload: {
        text: frame.text,
        platform: identity.platform,
        user_id: identity.user_id,
        chat_id: identity.chat_id,
        channel: identity.platform,
        source: 'websocket',
      },
    });
    if (!result.replay) this.deps.noteMessage();
    this.own(result.eventId);
    if (this.state === 'closed') return;
    this.send({
      type: 'accepted',
      ...(frame.ref !== undefined ? { ref: frame.ref } : {}),
      event_id: result.eventId,
      session_key: result.sessionKey,
    });
    this.follow(result.eventId, frame.ref);
  }

  private own(eventId: string): void {
    this.owned.delete(eventId);
    this.owned.add(eventId);
    while (this.owned.size > MAX_OWNED) this.owned.delete(this.owned.values().next().value!);
  }

  /** Streams a turn's frames to this client; a turn already followed is not followed twice. */
  private follow(eventId: string, ref: FrameRef | undefined): void {
    if (this.follows.has(eventId) || this.state === 'closed') return;
    const follow = new TurnFollow(eventId, ref, {
      hub: this.deps.hub,
      waitOutcome: (id, timeoutMs, signal) => this.deps.waitOutcome(id, timeoutMs, signal),
      limits: this.deps.limits,
      logger: this.deps.logger,
      send: (frame) => this.send(frame),
      ended: () => {
        if (this.follows.get(eventId) === follow) this.follows.delete(eventId);
      },
    });
    this.follows.set(eventId, follow);
    void follow.run();
  }

  /** Interrupts a running turn: any turn for admin, turns accepted on this connection for api tokens. */
  private interrupt(eventId: string, ref: FrameRef | undefined): void {
    const allowed = this.role === 'admin' || this.owned.has(eventId);
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
            this.send({ type: 'event', topic: event.topic, event: event.event, data: event.data });
          });
    previous?.();
  }

  // ---------------------------------------------------------------------------------------------------------------

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
    clearTimeout(this.authTimer);
    this.busUnsubscribe?.();
    this.busUnsubscribe = null;
    this.topics.clear();
    for (const follow of this.follows.values()) follow.cancel();
    this.follows.clear();
    this.deps.onClosed(this);
  }
}

/** What a followed turn needs from its connection. */
interface FollowDeps {
  hub: Pick<TurnEventHub, 'subscribe' | 'flush' | 'replay'>;
  waitOutcome: ConnectionDeps['waitOutcome'];
  limits: WebSocketLimits;
  logger: Logger;
  send(frame: ServerFrame): void;
  ended(): void;
}

/**
 * Follows one turn for one client, the way `turn-stream.ts` does for SSE:
 * subscribe to the hub first (live events are held), flush pending writes,
 * replay the stored events, then release the held ones and follow live — so
 * no event falls in between and none is sent twice (by `seq`). When the
 * stored and live events do not end the reply (e.g. the turn ended in
 * another process, or is paused now), the ledger does, through the waiters.
 */
class TurnFollow {
  private lastSeq = 0;
  private live = false;
  private ended = false;
  private readonly held: TurnEvent[] = [];
  private unsubscribe: () => void = () => undefined;
  private readonly abort = new AbortController();

  constructor(
    private readonly eventId: string,
    private readonly ref: FrameRef | undefined,
    private readonly deps: FollowDeps,
  ) {}

  async run(): Promise<void> {
    const { hub } = this.deps;
    try {
      this.unsubscribe = hub.subscribe(this.eventId, (event) => {
        if (this.live) this.handle(event);
        else if (this.held.length < this.deps.limits.maxBufferedEvents) this.held.push(event);
      });
      await hub.flush();
      const stored = await hub.replay(this.eventId, 0);
      for (const event of stored) {
        if (this.ended) return;
        this.handle(event);
      }
      this.live = true;
      for (const event of this.held.splice(0)) {
        if (this.ended) return;
        this.handle(event);
      }
      if (this.ended) return;
      const turn = await this.deps.waitOutcome(this.eventId, this.deps.limits.followTimeoutMs, this.abort.signal);
      if (this.ended) return;
      if (!turn) {
        this.end({
          type: 'error',
          ...this.refField(),
          event_id: this.eventId,
          error: {
            code: 'TIMEOUT',
            message: 'stopped following the turn; it goes on — retry with the same idempotency key for the result',
          },
        });
        return;
      }
      this.end(this.finalFromLedger(turn));
    } catch (err) {
      if (this.ended) return;
      const body = frameErrorOf(err);
      if (body.unexpected) this.deps.logger.warn({ err, event_id: this.eventId }, 'websocket turn follow failed');
      this.end({
        type: 'error',
        ...this.refField(),
        event_id: this.eventId,
        error: body.unexpected
          ? { code: 'UNAVAILABLE', message: 'could not follow the turn' }
          : { code: body.code, message: body.message },
      });
    }
  }

  /** Stops following without sending anything (connection closed). */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    this.unsubscribe();
    this.abort.abort();
  }

  private handle(event: TurnEvent): void {
    if (this.ended || event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    const step = turnEventStep(event, { live: this.live, ...this.refField() });
    if (step.kind === 'frame') this.deps.send(step.frame);
    else if (step.kind === 'end') this.end(step.frame);
  }

  private finalFromLedger(turn: TurnRecord): ServerFrame {
    if (turn.status === 'failed') {
      const error = turnError(turn);
      return {
        type: 'error',
        ...this.refField(),
        event_id: turn.eventId,
        error: {
          code: error?.code === 'UPSTREAM_ERROR' ? 'UPSTREAM_ERROR' : 'INTERNAL_ERROR',
          message: error?.message ?? 'the turn failed',
        },
      };
    }
    return { type: 'final', event_id: turn.eventId, status: turn.status, message: turnOutcomeMessage(turn) };
  }

  private refField(): { ref?: FrameRef } {
    return this.ref !== undefined ? { ref: this.ref } : {};
  }

  private end(frame: ServerFrame): void {
    if (this.ended) return;
    this.cancel();
    this.deps.send(frame);
    this.deps.ended();
  }
}
