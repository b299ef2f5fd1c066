import type { Config } from '../config/config.schema.js';
import { Idempotency, type ScopeKind } from '../idempotency/index.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../logs/index.js';
import { emptyTotals } from '../runtime/index.js';
import type { ModelProvider } from '../runtime/index.js';
import type { ToolRegistry } from '../runtime/index.js';
import type { IdentityCheck } from '../security/identity.js';
import { heartbeat, liveOwners, registerInstance, removeInstance, type Store } from '../store/index.js';
import type { Inbound, Submitted } from './inbound.js';
import { Intake } from './intake.js';
import { TurnEventHub, type TurnEventTap } from './turn-events.js';
import { followTurn, type FollowOptions, type FollowStep } from './turn-follow.js';
import { TurnQueue } from './turn-queue.js';
import { lastTurnEventSeq } from './turn-events.repo.js';
import { messageView, TurnRunner, type ChatCommand } from './turn-runner.js';
import { TurnWaiters } from './turn-waiters.js';
import { getTurn, interruptTurns, listTurnsByStatus, type TurnRecord } from './turns.repo.js';
import { turnRoutes } from './turns.routes.js';
import type { RouteDef } from '../http/route.js';

/** Heartbeat of this process in the instance table (PostgreSQL scale-out). */
const HEARTBEAT_MS = 5_000;
/** An instance silent this long is dead: its running turns are interrupted, its accepted ones adopted. */
const STALE_MS = 20_000;

/**
 * The message path (spec: message flow; `docs/ARCHITECTURE.md`): intake →
 * per-session turn queue → agent loop → turn events → delivery. Entry points
 * use only `submit`, `follow`, `waitFor` and `interrupt`.
 */
export interface MessagePath {
  /** This process's instance id (ledger and task `owner`). */
  readonly owner: string;
  /**
   * Identity check, key rules, idempotency claim or replay, ledger
   * `accepted` (committed), then the turn queue. Answers what the entry
   * point must answer: acknowledge, or wait for the result (rules 5–6).
   */
  submit(inbound: Inbound): Promise<Submitted>;
  /** A turn's events, replayed then live, to its end (see `followTurn`). */
  follow(eventId: string, options: FollowOptions): AsyncGenerator<FollowStep>;
  /** The turn once it has an outcome (pauses included), or null after `timeoutMs` or an abort (it goes on). */
  waitFor(eventId: string, timeoutMs: number, signal?: AbortSignal): Promise<TurnRecord | null>;
  /** Ends a turn running in this process as `interrupted` with `reason`; false when it does not run here. */
  interrupt(eventId: string, reason: string): boolean;
  /** The ledger record of a turn, or null when there is none. */
  turn(eventId: string): Promise<TurnRecord | null>;
  /** Event ids of the turns running in this process. */
  runningTurns(): string[];
  /** Listens to every turn's events (the live feed's `turns` topic). */
  tap(listener: TurnEventTap): () => void;
  /** The ledger API (GET /turns…, approve/deny, the event stream). */
  routes(): RouteDef[];
  /** Applies live configuration: turns that start from now on use it. */
  reconfigure(settings: Parameters<TurnRunner['reconfigure']>[0]): void;
  /** Gauges for metrics, read at scrape time. */
  readonly gauges: {
    queued: () => number;
    running: () => number;
    waiters: () => number;
    idempotencyRecords: () => number;
  };
  /** Start-up: register, interrupt turns that were running in a dead process, queue accepted ones. */
  start(): Promise<{ interrupted: string[]; requeued: number }>;
  /** Shutdown: stop starting turns, give running ones `graceMs`, then interrupt them (`shutdown`). */
  shutdown(graceMs: number): Promise<void>;
  /** Waits until no turn is queued or running (tests), up to `timeoutMs`. */
  idle(timeoutMs: number): Promise<boolean>;
  /** The turn runner itself (tests that force an interleaving; entry points use the methods above). */
  readonly runner: TurnRunner;
  /** Live listeners of turn events (tests: nothing leaks). */
  listenerCount(): number;
}

export interface MessagePathOptions {
  config: Config;
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  provider: ModelProvider;
  tools: ToolRegistry;
  /** The user identity check by auth mode (DECISIONS §4). */
  checkIdentity: IdentityCheck;
  /** Extra system context per model call (e.g. active skills). */
  systemContext?: ReadonlyArray<() => Promise<string | null>>;
  /** Extra chat commands (`/approve`, `/deny`…). */
  commands?: Record<string, ChatCommand>;
  /** Idempotency LRU entries per kind of scope (the webhook's own size comes from its channel). */
  idempotencyCacheSizes?: Partial<Record<ScopeKind, number>>;
  /** Told of every newly accepted message (live feed `sessions`). */
  onAccepted?: (sessionKey: string, eventId: string) => void;
  /** Metrics hooks. */
  onOutcome?: (status: string, durationMs: number) => void;
  onReplay?: () => void;
  /** Overrides for tests. */
  idempotencyCeiling?: number;
  maxQueued?: number;
}

/** Builds the message path; nothing runs until `start()`. */
export function createMessagePath(options: MessagePathOptions): MessagePath {
  const { config, store, clock, ids, logger } = options;
  const log = logger.child({ source: 'turns' });
  const owner = ids.next('gw');
  const hub = new TurnEventHub({ store, clock, logger: log });
  const idempotency = new Idempotency({
    store,
    clock,
    ...(options.idempotencyCacheSizes ? { cacheSizes: options.idempotencyCacheSizes } : {}),
    ...(options.idempotencyCeiling !== undefined ? { ceiling: options.idempotencyCeiling } : {}),
    ...(options.onReplay ? { onReplay: options.onReplay } : {}),
    onError: (err) => log.warn({ err: (err as Error).message }, 'idempotency recount failed'),
  });
  const runner = new TurnRunner({
    store,
    hub,
    idempotency,
    clock,
    ids,
    logger: log,
    owner,
    ...(options.onOutcome ? { onOutcome: options.onOutcome } : {}),
    ...(options.commands ? { commands: options.commands } : {}),
    dailyBudgetUsd: config.budget.daily_usd,
    agent: {
      provider: options.provider,
      tools: options.tools,
      systemPrompt: config.agent.system_prompt,
      maxToolIterations: config.agent.max_tool_iterations,
      approvalRequired: new Set(config.agent.approval_required),
      pricing: config.provider.pricing,
      ...(options.systemContext ? { systemContext: options.systemContext } : {}),
    },
  });
  const queue = new TurnQueue({
    maxConcurrent: config.agent.max_concurrent_turns,
    maxQueued: options.maxQueued ?? 10_000,
    run: (sessionKey, job) => runner.run(sessionKey, job),
    onError: (err) => log.error({ err }, 'turn job failed'),
  });
  const intake = new Intake({
    store,
    clock,
    ids,
    queue,
    idempotency,
    checkIdentity: options.checkIdentity,
    owner,
    ...(options.onAccepted ? { onAccepted: options.onAccepted } : {}),
  });
  // Live events wake waiters at once. The poll is a safety net, and where other processes share the
  // database it also finds outcomes of turns they ran; with one process it can be slow.
  const waiters = new TurnWaiters({ store, hub, maxWaiters: 10_000, pollMs: store.shared ? 1000 : 5000 });
  const followDeps = { hub, waiters, lastSeq: (eventId: string) => lastTurnEventSeq(store.db, eventId) };
  const follow = (eventId: string, followOptions: FollowOptions) => followTurn(followDeps, eventId, followOptions);
  let heartbeatTimer: NodeJS.Timeout | undefined;
  /** Event ids already adopted by a recovery pass (bounded). */
  const adopted = new Set<string>();

  const now = () => isoTime(clock.now());

  const recover = async (): Promise<{ interrupted: string[]; requeued: number }> => {
    const live = await liveOwners(store, owner, isoTime(clock.now() - STALE_MS));
    const interrupted = await store.writer.run((trx) =>
      interruptTurns(trx, { statuses: ['running'], ownerNotIn: live, reason: 'process_restart', now: now() }),
    );
    for (const eventId of interrupted) {
      await hub.open(eventId);
      hub.publish(eventId, 'done', {
        status: 'interrupted',
        message: messageView(eventId, 'interrupted', null, null, emptyTotals()),
      });
      hub.release(eventId);
    }
    // Accepted turns of dead (or no) owners: run them here. The claim decides if two processes adopt one.
    const accepted = await listTurnsByStatus(store.db, ['accepted'], { limit: 100_000, ownerNotIn: live });
    let requeued = 0;
    for (const turn of accepted) {
      if (adopted.has(turn.eventId)) continue;
      if (adopted.size >= 100_000) adopted.clear();
      adopted.add(turn.eventId);
      if (queue.enqueue(turn.sessionKey, { kind: 'turn', eventId: turn.eventId }, { force: true })) requeued++;
    }
    return { interrupted, requeued };
  };

  return {
    owner,
    submit: (inbound) => intake.submit(inbound),
    follow,
    waitFor: (eventId, timeoutMs, signal) => waiters.wait(eventId, timeoutMs, signal),
    interrupt: (eventId, reason) => runner.interrupt(eventId, reason),
    turn: (eventId) => getTurn(store.db, eventId),
    runningTurns: () => runner.runningTurns(),
    tap: (listener) => hub.tap(listener),
    routes: () =>
      turnRoutes({
        store,
        clock,
        owner,
        queue,
        follow,
      }),
    reconfigure: (settings) => runner.reconfigure(settings),
    gauges: {
      queued: () => queue.size,
      running: () => queue.running,
      waiters: () => waiters.waiting,
      idempotencyRecords: () => idempotency.records,
    },
    idle: (timeoutMs) => queue.idle(timeoutMs),
    listenerCount: () => hub.listenerCount(),
    runner,
    async start() {
      await store.writer.run((trx) => registerInstance(trx, owner, now()));
      await idempotency.start();
      const result = await recover();
      if (result.interrupted.length || result.requeued) {
        log.info(
          { interrupted: result.interrupted.length, requeued: result.requeued },
          'recovered turns after restart',
        );
      }
      heartbeatTimer = setInterval(() => {
        store.writer.run((trx) => heartbeat(trx, owner, now())).catch(() => undefined);
        if (store.shared) {
          // Adopt work of instances that died while we run.
          recover().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'recovery sweep failed'));
        }
      }, HEARTBEAT_MS);
      heartbeatTimer.unref();
      return result;
    },
    async shutdown(graceMs) {
      clearInterval(heartbeatTimer);
      idempotency.close();
      queue.close();
      const idle = await queue.idle(graceMs);
      if (!idle) {
        runner.interruptAll('shutdown');
        await queue.idle(5_000);
      }
      await hub.flush();
      await store.writer.run((trx) => removeInstance(trx, owner)).catch(() => undefined);
    },
  };
}
