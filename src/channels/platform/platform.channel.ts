import type { AuthMode, Config } from '../../config/config.schema.js';
import { ApiError } from '../../http/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { PairingService } from '../../pairing/index.js';
import type { Store } from '../../store/index.js';
import { sessionKeyFor, type Inbound, type MessagePath } from '../../turns/index.js';
import type { ChannelRegistry } from '../channel-registry.js';
import type { Channel, ChannelStats } from '../channel.js';
import { deliveredReplies, type DeliveredReplies } from './platform.delivered.js';
import { PLATFORM_SOURCE, PlatformReplies } from './platform.replies.js';
import { backoffMs, pairingText, refusalText, triage } from './platform.rules.js';
import { PlatformAuthError, type PlatformEvent, type PlatformTransport } from './platform.transport.js';
import { realWait, type Wait } from './reply-stream.js';

/** Notices (refusals, pairing answers) remembered by delivery id, so a redelivery does not repeat one. */
const NOTICES_REMEMBERED = 1024;

/** What every platform channel is built from (wired by `gateway.ts` through the platform's own factory). */
export interface PlatformChannelOptions {
  transport: PlatformTransport;
  /** `channels.<platform>.groups`: group chats start turns (mentions and replies only). */
  groups: boolean;
  /** `gateway.auth.mode`: what an unknown user is told. */
  authMode: AuthMode;
  /** The message path's door. */
  messages: Pick<MessagePath, 'submit' | 'follow' | 'turn' | 'tap'>;
  /** `/pair <code>`: the pairing service with its lockout. */
  pairing: Pick<PairingService, 'verify'>;
  stats: ChannelStats;
  clock: Clock;
  logger: Logger;
  /** Backoff and throttling waits; tests advance them. */
  wait?: Wait;
  /** Where posted replies are recorded; each start then delivers the ones a dead process still owed. */
  delivered?: DeliveredReplies;
}

/**
 * What every platform's `add…Channel` is built from (each adds its own
 * options): the running configuration, the message path's door, pairing,
 * the registry its stats come from, the clock and logger.
 */
export interface PlatformDeps {
  /** The running configuration: `channels.<platform>` and `gateway.auth.mode`. */
  config: Config;
  messages: PlatformChannelOptions['messages'];
  pairing: PlatformChannelOptions['pairing'];
  registry: ChannelRegistry;
  /** The gateway's database: the record of posted replies (`platform_replies`). */
  store: Pick<Store, 'db'>;
  clock: Clock;
  logger: Logger;
  wait?: Wait;
}

/** A platform channel: a `Channel` plus what tests and the channel's own routes look at. */
export interface PlatformChannel extends Channel {
  /** Replies streaming now. */
  replies(): number;
  /** Reconnect attempts that failed in a row (0 while connected). */
  failures(): number;
}

/** The token principal of a platform's messages: the idempotency scope is the platform plus the chat's session. */
function platformPrincipal(platform: string): Inbound['principal'] {
  return { role: 'anonymous', id: `channel:${platform}`, fingerprint: null, scope: `platform:${platform}` };
}

/** A message without secrets for logs and `error` (transports already keep tokens out of theirs). */
function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Builds the channel of one chat platform around its transport (DECISIONS
 * §16). `start()` connects (rejecting with the reason if the first attempt
 * fails, while it keeps trying with backoff) and runs the inbound loop;
 * a lost connection is reported (`error`, health `degraded`) and retried
 * with backoff, 1 s doubling to 60 s, until `stop()`. Each message is triaged
 * (groups, `/pair`), then submitted with the platform's delivery id as its
 * idempotency key, scoped to the platform and chat: the handler resolves
 * only once it is durably accepted or replayed, so the platform commits its
 * position only then. Replies stream through `PlatformReplies`.
 */
export function createPlatformChannel(options: PlatformChannelOptions): PlatformChannel {
  const { transport, stats, clock } = options;
  const platform = transport.platform;
  const log = options.logger.child({ source: platform });
  const wait = options.wait ?? realWait;
  const replies = new PlatformReplies({
    platform,
    messages: options.messages,
    target: transport,
    maxMessageLength: transport.maxMessageLength,
    minIntervalMs: transport.minEditIntervalMs,
    now: () => clock.now(),
    wait,
    logger: log,
    ...(options.delivered ? { delivered: options.delivered } : {}),
  });
  // Watching starts at once: turns the message path recovers at start-up reach their chats.
  replies.open();
  const noticed = new Set<string>();

  let run: { abort: AbortController; loop: Promise<void> } | null = null;
  let connected = false;
  let failures = 0;
  let lifecycle: Promise<void> = Promise.resolve();
  const serially = (step: () => Promise<void>): Promise<void> => {
    const next = lifecycle.then(step);
    lifecycle = next.catch(() => undefined);
    return next;
  };

  /** Sends a short notice once per delivery (a redelivered update does not repeat it). */
  const notice = async (event: PlatformEvent, text: string): Promise<void> => {
    if (noticed.has(event.deliveryId)) return;
    noticed.add(event.deliveryId);
    if (noticed.size > NOTICES_REMEMBERED) noticed.delete(noticed.values().next().value!);
    await transport.send(event.chatId, text).catch((err: unknown) => {
      log.warn({ chat_id: event.chatId, err: reason(err) }, 'notice not delivered');
    });
  };

  const handle = async (event: PlatformEvent): Promise<void> => {
    const verdict = triage(event, { groups: options.groups });
    switch (verdict.kind) {
      case 'ignore':
        return;
      case 'pair_in_group':
        return notice(event, pairingText('in_group'));
      case 'pair': {
        if (options.authMode !== 'pairing') return notice(event, pairingText('not_pairing_mode'));
        if (!verdict.code) return notice(event, pairingText('missing_code'));
        // Failures count per identity; the "ip" of a platform user is the identity itself, so one user's
        // wrong codes never lock another's (the pairing service's 5-failure lockout, DECISIONS §4).
        const result = await options.pairing.verify({
          platform,
          userId: event.userId,
          code: verdict.code,
          ip: `${platform}:${event.userId}`,
        });
        return notice(event, pairingText(result));
      }
      case 'turn':
        break;
    }
    try {
      const submitted = await options.messages.submit({
        sessionKey: sessionKeyFor(platform, event.chatId),
        text: event.text,
        platform,
        userId: event.userId,
        chatId: event.chatId,
        channel: platform,
        source: PLATFORM_SOURCE,
        principal: platformPrincipal(platform),
        identity: { ip: platform, loopbackTrusted: false },
        idempotency: {
          scope: 'principal',
          fallback: { value: `${platform}:${event.deliveryId}`, where: `${platform} delivery id` },
        },
        wait: false,
      });
      if (submitted.replay) return; // a redelivery: the original's reply is (or was) delivered by its own turn
      stats.noteMessage();
      replies.deliver(submitted.eventId, event.chatId);
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) {
        if (event.chatKind === 'direct') await notice(event, refusalText(options.authMode, platform));
        return;
      }
      // Decided for good (400 key rules, 409 changed content): the delivery is passed over, not retried.
      if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
        log.warn({ chat_id: event.chatId, err: err.message, status: err.status }, 'message refused');
        return;
      }
      throw err; // not decided now (store down, queue full): the platform delivers it again
    }
  };

  const markConnected = (): void => {
    connected = true;
    failures = 0;
    const now = clock.now();
    stats.error = null;
    stats.connectedSince = now;
    stats.lastConnectedAt = now;
  };
  const markLost = (err: unknown): void => {
    connected = false;
    failures++;
    stats.connectedSince = null;
    stats.error = `connection lost: ${reason(err)}`;
  };

  /** The loop of one run: (connect → receive) until stopped, with backoff after every failure. */
  const loop = async (signal: AbortSignal, first: { resolve: () => void; reject: (err: unknown) => void }) => {
    let settled = false;
    while (!signal.aborted) {
      try {
        await transport.connect(signal);
        if (signal.aborted) break;
        markConnected();
        if (!settled) {
          settled = true;
          first.resolve();
        } else log.info({}, 'connection restored');
        await transport.receive(handle, signal);
        if (signal.aborted) break;
        throw new Error('the connection ended');
      } catch (err) {
        if (signal.aborted) break;
        markLost(err);
        if (!settled) {
          settled = true;
          first.reject(err);
        } else log.warn({ err: reason(err), failures }, 'connection lost; reconnecting');
        if (err instanceof PlatformAuthError) return; // a wrong token stays wrong: reconnect through the API
        await wait(backoffMs(failures), signal);
      }
    }
    connected = false;
    if (!settled) first.resolve();
  };

  const stopRun = async (): Promise<void> => {
    const current = run;
    if (!current) return;
    run = null;
    current.abort.abort();
    await current.loop;
    connected = false;
    await transport.disconnect().catch((err: unknown) => log.warn({ err: reason(err) }, 'disconnect failed'));
  };

  return {
    name: platform,
    start: () =>
      serially(async () => {
        await stopRun();
        replies.open();
        const abort = new AbortController();
        let first!: { resolve: () => void; reject: (err: unknown) => void };
        const firstAttempt = new Promise<void>((resolve, reject) => (first = { resolve, reject }));
        run = { abort, loop: loop(abort.signal, first) };
        await firstAttempt; // rejects with the first failure; the loop keeps trying
        log.info({}, `${platform} channel connected`);
        // Replies a dead process owed (its turns settled, their replies never posted) go out now, once.
        replies.catchUp().then(
          (owed) => owed > 0 && log.info({ owed }, 'delivering replies owed from before the start'),
          (err: unknown) => log.warn({ err: reason(err) }, 'owed replies not looked up'),
        );
      }),
    stop: () =>
      serially(async () => {
        await stopRun();
        await replies.close();
      }),
    connected: () => connected,
    replies: () => replies.size,
    failures: () => failures,
  };
}

/** `createPlatformChannel` from a platform's dependencies: its transport, stats from the registry. */
export function platformChannelOf(deps: PlatformDeps, transport: PlatformTransport, groups: boolean): PlatformChannel {
  return createPlatformChannel({
    transport,
    groups,
    authMode: deps.config.gateway.auth.mode,
    messages: deps.messages,
    pairing: deps.pairing,
    stats: deps.registry.statsFor(transport.platform),
    clock: deps.clock,
    logger: deps.logger,
    ...(deps.wait ? { wait: deps.wait } : {}),
    delivered: deliveredReplies(deps.store.db, transport.platform, () => new Date(deps.clock.now()).toISOString()),
  });
}
