import type { SecurityProfile } from '../../config/config.schema.js';
import { errors, type ErrorCode } from '../../http/errors.js';
import type { Principal } from '../../http/route.js';
import type { Logger } from '../../lib/logger.js';
import { fingerprintToken } from '../../security/tokens.js';
import { CLOSE_CODES, frameErrorOf, identityFields, type AuthFrame, type ServerFrame } from './websocket.frames.js';

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

/** An auth audit record as the connection reports it; the channel adds ip, mode and path. */
export interface WebSocketAuditEntry {
  event: 'auth_success' | 'auth_failure';
  user: string;
  principal?: string;
  reason?: string;
}

/**
 * Where a connection comes from, as its audit lines and the auth mode's
 * identity check need it (kept per connection, so the services a connection
 * calls are shared by all of them).
 */
export interface Peer {
  /** The socket's remote address. */
  readonly ip: string;
  /** The loopback exemption of the auth mode applies. */
  readonly loopbackTrusted: boolean;
  /** The route the upgrade came in on. */
  readonly path: string;
}

/** The connection's role: what its token may do. */
export type Role = 'admin' | 'api';

/** An established connection: its principal, role and chat identity. */
export interface Authenticated {
  principal: Principal;
  role: Role;
  identity: ChatIdentity;
}

/** What authentication needs from the gateway (the channel wires the real services). */
export interface AuthDeps {
  profile: SecurityProfile;
  /** `authTimeoutMs`: time a client has to authenticate before it is closed with 4401. */
  limits: { readonly authTimeoutMs: number };
  /** `guard.principalForToken`: null when the token is missing or unknown. */
  resolveToken(token: string | null, via: 'header' | 'query' | 'frame'): Principal | null;
  audit(entry: WebSocketAuditEntry, peer: Peer): void;
  /** The auth-mode identity check (with the peer's loopback exemption); throws ApiError 403. */
  checkIdentity(identity: ChatIdentity, peer: Peer): Promise<void>;
  logger: Logger;
}

/** How authentication talks back to its connection (the connection itself). */
export interface AuthPort {
  readonly peer: Peer;
  readonly isClosed: boolean;
  send(frame: ServerFrame): void;
  close(code: number, reason: string): void;
  /** Runs `task` in the connection's frame order. */
  enqueue(task: () => Promise<void>): void;
  /** Authentication succeeded (`first`: the connection was pending until now). */
  established(session: Authenticated, first: boolean): void;
}

const ANONYMOUS: Principal = { role: 'anonymous', id: 'anonymous', fingerprint: null, scope: 'anonymous' };

/**
 * Authentication of one WebSocket connection (DECISIONS §8): the minimal
 * profile needs no token; otherwise a header token or `?token=` (api rights
 * at most) authenticates at once, else a first `auth` frame must come
 * before the deadline. A bad token → an UNAUTHORIZED error frame and close
 * 4401; invalid identity fields → 4400; an identity the auth mode refuses
 * → 4403. Success is always answered first with `auth_ok`.
 */
export class WebSocketAuth {
  private timer: NodeJS.Timeout | undefined;
  private current: Authenticated | null = null;
  /** What the upgrade carried; dropped once authenticated (nothing of it is needed any more). */
  private handshake: Handshake | null;

  constructor(
    private readonly port: AuthPort,
    handshake: Handshake,
    private readonly deps: AuthDeps,
  ) {
    this.handshake = handshake;
  }

  /** Authenticates from the handshake where it can, else starts the deadline for an `auth` frame. */
  start(): void {
    const { headerToken, queryToken, identity } = this.handshake!;
    if (this.deps.profile === 'minimal') {
      // Minimal: no token needed (DECISIONS §4); a valid token still names the principal (idempotency scope).
      const token = headerToken ?? queryToken;
      const principal = (token ? this.deps.resolveToken(token, 'header') : null) ?? ANONYMOUS;
      this.port.enqueue(() => this.establish(principal, 'admin', identity));
      return;
    }
    if (headerToken !== null || queryToken !== null) {
      const via = headerToken !== null ? 'header' : 'query';
      const token = (headerToken ?? queryToken)!;
      this.port.enqueue(() => this.withToken(token, via, identity));
      return;
    }
    this.timer = setTimeout(() => this.deadline(), this.deps.limits.authTimeoutMs);
    this.timer.unref();
  }

  /** Any frame before authentication: only `auth` is accepted. */
  async pendingFrame(frame: { type: string }): Promise<void> {
    if (frame.type !== 'auth') {
      this.reject('UNAUTHORIZED', 'authenticate first: send {"type":"auth","token":…}', 'not_authenticated');
      return;
    }
    const auth = frame as AuthFrame;
    const given = this.handshake?.identity;
    const identity = {
      platform: auth.platform ?? given?.platform,
      user_id: auth.user_id ?? given?.user_id,
      chat_id: auth.chat_id ?? given?.chat_id,
    };
    if (this.deps.profile === 'minimal') {
      await this.establish(
        (auth.token ? this.deps.resolveToken(auth.token, 'frame') : null) ?? ANONYMOUS,
        'admin',
        identity,
      );
      return;
    }
    if (auth.token === undefined || auth.token === '') {
      this.reject('UNAUTHORIZED', 'missing token', 'missing_token');
      return;
    }
    await this.withToken(auth.token, 'frame', identity);
  }

  /** An `auth` frame after authentication: the minimal profile re-acknowledges (and may change identity). */
  async again(frame: AuthFrame): Promise<void> {
    if (this.deps.profile !== 'minimal' || !this.current) throw errors.badRequest('already authenticated');
    const { principal, identity } = this.current;
    await this.establish(principal, 'admin', {
      platform: frame.platform ?? identity.platform,
      user_id: frame.user_id ?? identity.user_id,
      chat_id: frame.chat_id ?? identity.chat_id,
    });
  }

  /** Stops the deadline (the connection is over). */
  cancel(): void {
    clearTimeout(this.timer);
  }

  private deadline(): void {
    if (this.current || this.port.isClosed) return;
    this.deps.audit({ event: 'auth_failure', user: '', reason: 'auth_timeout' }, this.port.peer);
    this.reject('UNAUTHORIZED', 'authentication timed out', null);
  }

  private async withToken(token: string, via: 'header' | 'query' | 'frame', identity: Handshake['identity']) {
    const principal = this.deps.resolveToken(token, via);
    if (!principal || principal.role === 'anonymous' || principal.fingerprint === null) {
      this.deps.audit(
        { event: 'auth_failure', user: fingerprintToken(token), reason: 'invalid_token' },
        this.port.peer,
      );
      this.reject('UNAUTHORIZED', 'invalid token', null);
      return;
    }
    await this.establish(principal, principal.role, identity, via);
  }

  /** Settles the identity, checks it by auth mode, then answers `auth_ok` (always the first frame after success). */
  private async establish(
    principal: Principal,
    role: Role,
    input: Handshake['identity'],
    via?: 'header' | 'query' | 'frame',
  ): Promise<void> {
    if (this.port.isClosed) return;
    const user = input.user_id ?? principal.fingerprint ?? 'anonymous';
    const identity = { platform: input.platform ?? 'ws', user_id: user, chat_id: input.chat_id ?? user };
    const checked = identityFields.safeParse(identity);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      const where = issue ? `${issue.path.map(String).join('.')}: ${issue.message}` : 'invalid identity';
      this.port.send({ type: 'error', error: { code: 'BAD_REQUEST', message: `invalid identity: ${where}` } });
      this.port.close(CLOSE_CODES.BAD_REQUEST, 'invalid identity');
      return;
    }
    try {
      await this.deps.checkIdentity(identity, this.port.peer);
    } catch (err) {
      const { unexpected, ...error } = frameErrorOf(err);
      if (unexpected) this.deps.logger.error({ err }, 'websocket identity check failed');
      this.port.send({ type: 'error', error });
      const forbidden = error.code === 'FORBIDDEN';
      this.port.close(
        forbidden ? CLOSE_CODES.FORBIDDEN : CLOSE_CODES.INTERNAL_ERROR,
        forbidden ? 'forbidden' : 'error',
      );
      return;
    }
    if (this.port.isClosed) return; // closed while the identity was checked
    clearTimeout(this.timer);
    this.timer = undefined;
    this.handshake = null;
    const first = this.current === null;
    this.current = { principal, role, identity };
    if (first && via && principal.fingerprint) {
      this.deps.audit(
        { event: 'auth_success', user: principal.fingerprint, principal: principal.id, reason: `websocket_${via}` },
        this.port.peer,
      );
    }
    this.port.send({ type: 'auth_ok', role });
    this.port.established(this.current, first);
  }

  /** Refuses authentication: an error frame, then close 4401. */
  private reject(code: ErrorCode, message: string, auditReason: string | null): void {
    if (auditReason) this.deps.audit({ event: 'auth_failure', user: '', reason: auditReason }, this.port.peer);
    this.port.send({ type: 'error', error: { code, message } });
    this.port.close(CLOSE_CODES.UNAUTHORIZED, message);
  }
}
