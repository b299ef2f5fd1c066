import type { IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';
import { packageVersion } from '../../lib/version.js';
import { CliError, EXIT } from '../io.js';
import {
  authFrame,
  FATAL_CLOSE_CODES,
  parseServerFrame,
  type ChatIdentity,
  type FrameError,
  type ServerFrame,
  type TokenRole,
} from './chat.frames.js';

/** Timing of the connection; the defaults suit a terminal. */
export interface SocketTiming {
  /** First reconnection delay; each failed attempt doubles it (default 250 ms). */
  initialBackoffMs: number;
  /** Longest reconnection delay (default 8 s). */
  maxBackoffMs: number;
  /** Bound on the WebSocket handshake and on the `auth_ok` after it (default 10 s). */
  connectTimeoutMs: number;
  /** Protocol ping interval; a ping unanswered by the next one drops the connection (default 20 s). */
  heartbeatMs: number;
}

/** The timing of a terminal chat. */
export const DEFAULT_SOCKET_TIMING: SocketTiming = {
  initialBackoffMs: 250,
  maxBackoffMs: 8_000,
  connectTimeoutMs: 10_000,
  heartbeatMs: 20_000,
};

/** What the socket tells its owner. */
export interface SocketEvents {
  /** A frame of the authenticated connection. */
  frame(frame: ServerFrame): void;
  /** The connection dropped; a reconnection follows in `delayMs`. Told once per outage. */
  lost(reason: string, delayMs: number): void;
  /** Authenticated again after an outage. */
  restored(role: TokenRole): void;
  /** Reconnecting cannot help (the token or the identity was refused): the chat must end. */
  fatal(error: CliError): void;
}

/** Why one connection attempt failed; `fatal` when trying again cannot help. */
class DialError extends CliError {
  constructor(
    message: string,
    readonly fatal: boolean,
  ) {
    super(message, EXIT.failure);
    this.name = 'DialError';
  }
}

/** Most bytes of an HTTP answer to the upgrade read for its error envelope. */
const MAX_ERROR_BODY = 16 * 1024;

/**
 * The chat's WebSocket (DECISIONS §8) at `url` (`ws[s]://host{api_prefix}/ws`): authenticates with a first
 * `{type: "auth", token}` frame, then hands frames to its owner. When the connection drops it reconnects with
 * exponential backoff (with jitter) until it is closed, except after a refusal reconnecting cannot fix. A protocol
 * ping that goes unanswered counts as a drop, so a dead peer is noticed.
 */
export class ChatSocket {
  private socket: WebSocket | null = null;
  private authenticated = false;
  private closedByUser = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private awaitingPong = false;

  /** `url`: the WebSocket's; `shownUrl`: the gateway's, as messages name it. */
  constructor(
    private readonly url: string,
    private readonly shownUrl: string,
    private readonly token: string | null,
    private readonly identity: ChatIdentity,
    private readonly events: SocketEvents,
    private readonly timing: SocketTiming = DEFAULT_SOCKET_TIMING,
  ) {}

  /** True while authenticated (frames sent now reach the gateway, unless the connection is dying unnoticed). */
  get isOpen(): boolean {
    return this.authenticated && this.socket?.readyState === WebSocket.OPEN;
  }

  /** The first connection: resolves with the token's role, or rejects with a CliError saying why it failed. */
  async connect(): Promise<TokenRole> {
    const role = await this.dial();
    return role;
  }

  /** Sends a frame; false when not connected (the owner sends it again once `restored`). */
  send(text: string): boolean {
    if (!this.isOpen) return false;
    this.socket!.send(text);
    return true;
  }

  /** Closes for good (normal closure); no reconnection. */
  close(): void {
    this.closedByUser = true;
    clearTimeout(this.retryTimer);
    this.stopHeartbeat();
    const socket = this.socket;
    this.socket = null;
    this.authenticated = false;
    if (socket && socket.readyState === WebSocket.OPEN) socket.close(1000, 'bye');
    else socket?.terminate();
  }

  /** One connection attempt: handshake, auth frame, `auth_ok`. */
  private dial(): Promise<TokenRole> {
    return new Promise<TokenRole>((resolve, reject) => {
      const socket = new WebSocket(this.url, {
        handshakeTimeout: this.timing.connectTimeoutMs,
        headers: { 'user-agent': `gatehouse-cli/${packageVersion()}` },
        maxPayload: 16 * 1024 * 1024,
      });
      this.socket = socket;
      let settled = false;
      let refusal: FrameError | null = null;
      let networkError: Error | null = null;
      const deadline = setTimeout(() => {
        networkError = new Error('no answer to the handshake');
        socket.terminate();
      }, this.timing.connectTimeoutMs);
      const fail = (error: DialError) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        reject(error);
      };

      socket.on('unexpected-response', (_request, response: IncomingMessage) => {
        void readEnvelope(response).then((message) => {
          const status = response.statusCode ?? 0;
          // 401/403/404: the token, the Origin/Host rules or the URL are wrong; anything else may pass (draining: 503).
          const fatal = status === 401 || status === 403 || status === 404;
          const hint =
            status === 404
              ? ` (is ${this.url} the gateway's WebSocket? check --url and its API prefix)`
              : status === 401
                ? ' (pass --token or set GATEHOUSE_TOKEN)'
                : '';
          fail(new DialError(`the gateway refused the WebSocket upgrade: HTTP ${status} ${message}${hint}`, fatal));
          socket.terminate(); // aborts the request (ws's own handling of an unexpected answer)
        });
      });
      socket.on('open', () => {
        socket.send(authFrame(this.token, this.identity));
      });
      socket.on('message', (data: Buffer, isBinary: boolean) => {
        if (isBinary) return;
        this.awaitingPong = false;
        const frame = parseServerFrame(data.toString('utf8'));
        if (!frame) return;
        if (!this.authenticated) {
          if (frame.type === 'auth_ok') {
            this.authenticated = true;
            clearTimeout(deadline);
            this.failures = 0;
            this.startHeartbeat(socket);
            if (!settled) {
              settled = true;
              resolve(frame.role);
            }
          } else if (frame.type === 'error') {
            refusal = frame.error;
          }
          return;
        }
        // A second auth_ok (the minimal profile authenticates from the handshake, then acknowledges the frame).
        if (frame.type === 'auth_ok') return;
        this.events.frame(frame);
      });
      socket.on('pong', () => {
        this.awaitingPong = false;
      });
      socket.on('ping', () => {
        this.awaitingPong = false;
      });
      socket.on('error', (err: Error) => {
        networkError = err;
      });
      socket.on('close', (code: number, reasonBuffer: Buffer) => {
        clearTimeout(deadline);
        const reason = reasonBuffer.toString('utf8');
        if (this.socket !== socket) return;
        const wasOpen = this.authenticated;
        this.authenticated = false;
        this.stopHeartbeat();
        const fatalText = FATAL_CLOSE_CODES.get(code);
        const refusalText = refusal ? `${refusal.code}: ${refusal.message}` : reason;
        const error = fatalText
          ? new DialError(`${fatalText} (${refusalText || `close ${code}`})${hintFor(code, this.token)}`, true)
          : new DialError(describeDrop(code, reason, networkError, this.shownUrl), false);
        if (!settled) {
          fail(error);
          return;
        }
        if (wasOpen && !this.closedByUser) this.dropped(error);
      });
    });
  }

  /** The authenticated connection dropped: tell the owner, then reconnect with backoff. */
  private dropped(error: DialError): void {
    if (error.fatal) {
      this.events.fatal(error);
      return;
    }
    const delay = this.nextDelay();
    this.events.lost(error.message, delay);
    this.scheduleRetry(delay);
  }

  private scheduleRetry(delay: number): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      if (this.closedByUser) return;
      this.dial().then(
        (role) => {
          if (!this.closedByUser) this.events.restored(role);
        },
        (err: unknown) => {
          if (this.closedByUser) return;
          if (err instanceof DialError && err.fatal) {
            this.events.fatal(err);
            return;
          }
          this.scheduleRetry(this.nextDelay());
        },
      );
    }, delay);
  }

  /** 250 ms, 500 ms, 1 s, … up to the cap, each ±20 %, so many clients do not come back in step. */
  private nextDelay(): number {
    const base = Math.min(this.timing.maxBackoffMs, this.timing.initialBackoffMs * 2 ** this.failures);
    this.failures = Math.min(this.failures + 1, 30);
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  private startHeartbeat(socket: WebSocket): void {
    this.stopHeartbeat();
    this.awaitingPong = false;
    this.heartbeat = setInterval(() => {
      if (this.awaitingPong) {
        socket.terminate(); // no answer since the last ping: the peer is gone
        return;
      }
      this.awaitingPong = true;
      try {
        socket.ping();
      } catch {
        socket.terminate();
      }
    }, this.timing.heartbeatMs);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}

/** A hint for a refusal close code. */
function hintFor(code: number, token: string | null): string {
  if (code === 4401)
    return token === null ? '; pass --token or set GATEHOUSE_TOKEN' : '; check --token or GATEHOUSE_TOKEN';
  if (code === 4403) return '; allow the user in gateway.auth (allowed_users) or pair it (gatehouse pair ws)';
  return '';
}

/** Why a connection ended, in words. */
function describeDrop(code: number, reason: string, error: Error | null, url: string): string {
  if (error) {
    const cause = (error as { code?: string }).code ?? error.message;
    return `cannot reach the gateway at ${url} (${cause}); is it running? (start it with: gatehouse serve, or pass --url)`;
  }
  if (code === 1001) return `the gateway went away${reason ? ` (${reason})` : ''}`;
  if (code === 1006) return 'the connection was cut';
  return `the connection closed (${code}${reason ? ` ${reason}` : ''})`;
}

/** `CODE: message [request <id>]` of an error envelope answering the upgrade, or the status text. */
async function readEnvelope(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ERROR_BODY) break;
      chunks.push(chunk);
    }
  } catch {
    /* the body is only a courtesy */
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string; request_id?: string } };
    const error = body.error;
    if (error && typeof error === 'object') {
      const requestId = error.request_id ?? response.headers['x-request-id'];
      return `${error.code ?? 'ERROR'}: ${error.message ?? ''}${requestId ? ` [request ${String(requestId)}]` : ''}`;
    }
  } catch {
    /* not the envelope */
  }
  return response.statusMessage ?? '';
}
