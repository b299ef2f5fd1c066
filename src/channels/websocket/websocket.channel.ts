import websocketPlugin from '@fastify/websocket';
import type { FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RawData, WebSocket } from 'ws';
import type { Config } from '../../config/config.schema.js';
import type { EventBus } from '../../events/index.js';
import { errors } from '../../http/errors.js';
import type { Guard, GuardRequest } from '../../http/guard.js';
import type { HttpApp } from '../../http/server.js';
import { API_ALIAS_PREFIX } from '../../http/server.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { AuditLog } from '../../security/audit.js';
import { createWindowCounter, type RateLimiter } from '../../security/rate-limit.js';
import { extractToken } from '../../security/tokens.js';
import type { IdentityCheck } from '../../security/identity.js';
import type { MessagePath } from '../../turns/index.js';
import type { Channel, ChannelStats } from '../channel.js';
import {
  DEFAULT_WEBSOCKET_LIMITS,
  WebSocketConnection,
  type ConnectionDeps,
  type Handshake,
  type Peer,
  type WebSocketLimits,
} from './websocket.connection.js';
import { WebSocketFeed } from './websocket.feed.js';
import { CLOSE_CODES } from './websocket.frames.js';

export { DEFAULT_WEBSOCKET_LIMITS, type WebSocketLimits } from './websocket.connection.js';

/** What the channel is built from (wired by `gateway.ts`). */
export interface WebSocketChannelOptions {
  config: Config;
  guard: Guard;
  rateLimiter: RateLimiter;
  audit: AuditLog;
  /** The message path's door: messages, following their turns, interrupts. */
  messages: Pick<MessagePath, 'submit' | 'follow' | 'interrupt'>;
  bus: EventBus;
  /** The auth-mode identity check at authentication (each message is checked again by the message path). */
  checkIdentity: IdentityCheck;
  stats: ChannelStats;
  clock: Clock;
  logger: Logger;
  /** Overrides of the connection bounds (tests, embedding); see `WebSocketLimits`. */
  limits?: Partial<WebSocketLimits>;
}

/** The WebSocket channel at `{api_prefix}/ws` and `/ws` (DECISIONS §8). */
export interface WebSocketChannel extends Channel {
  /** Registers `@fastify/websocket` and the WebSocket route on the API server (before it is ready). */
  register(app: HttpApp): Promise<void>;
  /** Open, authenticated connections. */
  clientCount(): number;
  /** The bounds in force. */
  limits(): Readonly<WebSocketLimits>;
  /**
   * Changes bounds at run time (tests, embedding): new connections use them,
   * open ones from their next check on (buffer cap, turn cap, …).
   */
  tune(limits: Partial<WebSocketLimits>): void;
}

/** Failed-auth audit lines per source IP per minute (the rest are dropped, like the HTTP guard does). */
const FAILURE_AUDITS_PER_MINUTE = 20;

function guardRequestOf(request: FastifyRequest): GuardRequest {
  const q = request.url.indexOf('?');
  return {
    method: request.method,
    path: q === -1 ? request.url : request.url.slice(0, q),
    headers: request.headers,
    remoteAddress: request.socket.remoteAddress,
  };
}

function textOf(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

/**
 * Lets the upgrade's HTTP objects go once the WebSocket is open. The plugin
 * routes an upgrade through Fastify with a `ServerResponse` assigned to the
 * socket, and its 'error' listener on the WebSocket holds Fastify's request
 * and reply: kept for the connection's life, they were a third of what an
 * idle client cost. The listener is replaced by the channel's own (the same
 * for every socket) and the response detached from the socket.
 */
function releaseUpgrade(socket: WebSocket, request: FastifyRequest, onError: (this: WebSocket, error: Error) => void) {
  socket.removeAllListeners('error');
  socket.on('error', onError);
  const raw = request.raw.socket as Socket & { _httpMessage?: ServerResponse | null };
  raw._httpMessage?.detachSocket(raw);
}

/** A value of the query string; empty counts as absent. */
function queryValue(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  return value === null || value === '' ? undefined : value;
}

/**
 * Builds the WebSocket channel; `register(app)` adds `@fastify/websocket`
 * and the route to the API server (before it is ready), and the channel
 * accepts upgrades once started.
 *
 * Before an upgrade completes the browser rules apply (DECISIONS §4, §8): a
 * cross-site Origin — and, under profile `extended`, a Host outside the Host
 * rules — is answered 403 `cross-site request forbidden` in the API's error
 * envelope, with no upgrade. The Origin rule applies in the minimal profile
 * too: a WebSocket is not covered by CORS, so it is the only thing keeping a
 * page elsewhere from driving the gateway through the user's browser. A
 * stopped (disabled) channel answers 503. Frames are capped at
 * `gateway.max_body_bytes` (larger: close 1009).
 */
export function createWebSocketChannel(options: WebSocketChannelOptions): WebSocketChannel {
  const { config, guard, audit, bus, messages, stats } = options;
  const log = options.logger.child({ source: 'websocket' });
  const profile = config.security.profile;
  const replyTimeoutMs = Math.min(600, config.provider.timeout_seconds * (config.agent.max_tool_iterations + 1)) * 1000;
  const limits: WebSocketLimits = {
    ...DEFAULT_WEBSOCKET_LIMITS,
    followTimeoutMs: replyTimeoutMs,
    maxBufferedBytes: config.limits.streams.max_buffered_bytes,
    maxConnections: config.limits.streams.websocket_max_connections,
    ...options.limits,
  };
  const failureAudits = createWindowCounter({ clock: options.clock, maxKeys: 10_000 });

  let up = false;
  /** Every open connection (authenticated or not), by its socket. */
  const connections = new Map<WebSocket, WebSocketConnection>();
  let heartbeat: NodeJS.Timeout | undefined;
  /** Authenticated connections: `clientCount()`. */
  let authenticated = 0;
  const feed = new WebSocketFeed(bus);

  /** What every connection uses; a connection adds only its `Peer`. */
  const deps: ConnectionDeps = {
    profile,
    limits,
    resolveToken: (token, via) => guard.principalForToken(token, via),
    audit: (entry, peer) => {
      if (entry.event === 'auth_failure' && !failureAudits.hit(peer.ip, FAILURE_AUDITS_PER_MINUTE).allowed) return;
      audit.record({ ...entry, ip: peer.ip, mode: config.gateway.auth.mode, path: peer.path });
    },
    checkIdentity: (identity, peer) =>
      options.checkIdentity({
        platform: identity.platform,
        userId: identity.user_id,
        loopbackTrusted: peer.loopbackTrusted,
        ip: peer.ip,
      }),
    rateLimit: (fingerprint) => options.rateLimiter.hit(fingerprint, 'write'),
    submit: (input, peer) =>
      messages.submit({
        sessionKey: input.sessionKey,
        text: input.text,
        platform: input.identity.platform,
        userId: input.identity.user_id,
        chatId: input.identity.chat_id,
        channel: input.identity.platform,
        source: 'websocket',
        principal: input.principal,
        ...(input.agent !== undefined ? { agent: input.agent } : {}),
        identity: { ip: peer.ip, loopbackTrusted: peer.loopbackTrusted },
        idempotency: { scope: 'principal', field: input.idempotencyKey },
        ...(input.traceparent !== undefined ? { trace: { traceparent: input.traceparent } } : {}),
        // The client follows the turn to its end: a retry (over any transport) gets the final result too.
        wait: true,
      }),
    follow: (eventId, followOptions) => messages.follow(eventId, followOptions),
    interrupt: (eventId) => messages.interrupt(eventId, 'interrupted'),
    feed,
    noteMessage: () => stats.noteMessage(),
    logger: log,
    onAuthenticated: () => {
      authenticated++;
    },
    onClosed: (connection) => {
      if (connection.wasAuthenticated) authenticated--;
    },
  };

  const admit = async (request: FastifyRequest): Promise<void> => {
    if (!up) throw errors.unavailable('the websocket channel is disabled');
    const g = guardRequestOf(request);
    if (!guard.originAllowed(g)) throw errors.crossSite();
    if (profile === 'extended' && !guard.hostAllowed(g)) throw errors.crossSite();
    if (!request.ws) throw errors.badRequest('WebSocket upgrade required');
    if (connections.size >= limits.maxConnections) throw errors.unavailable('too many WebSocket connections');
  };

  // The socket's listeners are shared by every connection (`this` is the socket): none holds a closure.
  function onMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
    const connection = connections.get(this);
    if (!connection) return;
    if (isBinary) connection.receiveBinary();
    else connection.receive(textOf(data));
  }
  function onPong(this: WebSocket): void {
    const connection = connections.get(this);
    if (connection) connection.answeredPing = true;
  }
  function onClose(this: WebSocket): void {
    connections.get(this)?.socketClosed();
    connections.delete(this);
  }
  function onError(this: WebSocket, error: Error): void {
    // Protocol errors (oversized or invalid frames) are closed by `ws` itself with the right code.
    log.warn({ err: error.message }, 'websocket error');
    if (this.readyState === this.OPEN) this.close(CLOSE_CODES.INTERNAL_ERROR, 'error');
  }

  const accept = (socket: WebSocket, request: FastifyRequest): void => {
    if (!up) {
      socket.close(CLOSE_CODES.GOING_AWAY, 'channel disabled');
      return;
    }
    const g = guardRequestOf(request);
    const params = new URL(request.url, 'http://gateway.invalid').searchParams;
    const handshake: Handshake = {
      headerToken: extractToken(request.headers, config.gateway.auth.token_header)?.token ?? null,
      queryToken: queryValue(params, 'token') ?? null,
      identity: {
        platform: queryValue(params, 'platform'),
        user_id: queryValue(params, 'user_id'),
        chat_id: queryValue(params, 'chat_id'),
      },
    };
    const peer: Peer = {
      ip: request.socket.remoteAddress ?? '',
      loopbackTrusted: guard.loopbackTrusted(g),
      path: request.routeOptions.url ?? g.path,
    };
    releaseUpgrade(socket, request, onError);
    const connection = new WebSocketConnection(socket, handshake, deps, peer);
    connections.set(socket, connection);
    socket.on('close', onClose);
    socket.on('pong', onPong);
    socket.on('message', onMessage);
    connection.start();
  };

  /** Cuts off clients that did not answer the previous ping (dead peers), pings the others: one sweep for all. */
  const beat = (): void => {
    for (const [socket, connection] of connections) {
      if (!connection.answeredPing) {
        socket.terminate();
        continue;
      }
      connection.answeredPing = false;
      try {
        socket.ping();
      } catch {
        socket.terminate();
      }
    }
  };

  return {
    name: 'websocket',
    async register(app) {
      await app.register(websocketPlugin, {
        // No compression: a deflate context per client costs far more memory than the JSON frames save.
        options: { maxPayload: config.gateway.max_body_bytes, perMessageDeflate: false },
        errorHandler(error, socket) {
          onError.call(socket, error);
        },
      });
      const paths = [...new Set([`${config.gateway.api_prefix}/ws`, `${API_ALIAS_PREFIX}/ws`, '/ws'])];
      for (const url of paths) {
        app.route({ method: 'GET', url, websocket: true, onRequest: admit, handler: accept });
      }
    },
    start: async () => {
      up = true;
      clearInterval(heartbeat);
      heartbeat = setInterval(beat, limits.heartbeatMs);
      heartbeat.unref();
    },
    stop: async () => {
      up = false;
      clearInterval(heartbeat);
      const open = [...connections.entries()];
      if (open.length === 0) return;
      const closed = open.map(
        ([socket]) =>
          new Promise<void>((resolve) => {
            if (socket.readyState === socket.CLOSED) resolve();
            else socket.once('close', () => resolve());
          }),
      );
      for (const [, connection] of open) connection.close(CLOSE_CODES.GOING_AWAY, 'channel stopped');
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, limits.closeGraceMs);
      });
      await Promise.race([Promise.all(closed), grace]);
      clearTimeout(timer);
      // Clients that did not answer the close handshake in time are cut off.
      for (const [socket] of open) if (socket.readyState !== socket.CLOSED) socket.terminate();
    },
    connected: () => up,
    clientCount: () => authenticated,
    limits: () => ({ ...limits }),
    tune: (changes) => {
      Object.assign(limits, changes);
    },
  };
}
