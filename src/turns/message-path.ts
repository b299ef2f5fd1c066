import type { Config } from '../config/config.schema.js';
import { Idempotency, type ScopeKind } from '../idempotency/index.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { emptyTotals } from '../runtime/index.js';
import type { ModelProvider } from '../runtime/index.js';
import type { ToolRegistry } from '../runtime/index.js';
import type { IdentityCheck } from '../security/identity.js';
import { heartbeat, liveOwners, registerInstance, removeInstance, type Store } from '../store/index.js';
import type { SessionOrigin } from '../sessions/index.js';
import type { Inbound, Submitted } from './inbound.js';
import { Intake, type LoadShedder } from './intake.js';
import type { ApiError } from '../http/errors.js';
import { TurnEventHub, type TurnEvent, type TurnEventTap } from './turn-events.js';
import { followTurn, type FollowOptions } from './turn-follow.js';
import { readySteps, type TurnStep } from './turn-steps.js';
import { TurnQueue } from './turn-queue.js';
import { TurnReconciler } from './turn-reconciler.js';
import { realTimers, type Timers } from './timers.js';
import { lastTurnEventSeq } from './turn-events.repo.js';
import { TurnTimings, type TurnMarks } from './turn-timings.js';
import type { EventOutbox } from './turn-outbox.js';
import type { TurnTracer } from './turn-trace.js';
import { payloadOptions, TurnRunner, type SessionAgent } from './turn-runner.js';
import type { ChatCommand } from './turn-commands.js';
import { turnPathFor } from './turn-path.js';
import { messageView } from './turns.presenter.js';
import { TurnWaiters } from './turn-waiters.js';
import { getTurn, interruptTurns, listTurnsByStatus, type TurnOwnerFilter, type TurnRecord } from './turns.repo.js';
import { turnRoutes } from './turns.routes.js';
import type { RouteDef } from '../http/route.js';

/**
 * Heartbeat and takeover of gateways sharing the database (ADR 0029): a
 * heartbeat every fifth of `takeoverMs`; an instance silent for four fifths
 * of it is dead, and the sweep that runs with each heartbeat adopts its
 * accepted turns and interrupts its running ones, so within `takeoverMs` of
 * its last heartbeat. A live instance misses four heartbeats before that.
 */
export function takeoverTimes(takeoverMs: number): { heartbeatMs: number; staleMs: number } {
  const heartbeatMs = Math.max(200, Math.floor(takeoverMs / 5));
  return { heartbeatMs, staleMs: Math.max(heartbeatMs * 2, takeoverMs - heartbeatMs) };
}

/** Pause before a lane whose session another process was claiming at that instant tries again. */
const SESSION_BUSY_RETRY_MS = 25;
/** Safety net for lanes waiting on a turn of their session that runs elsewhere (a lost wake-up). */
const SESSION_ELSEWHERE_POLL_MS = 1_000;

/**
 * The message path (spec: message flow; `docs/ARCHITECTURE.md`): intake →
 * per-session turn queue → agent loop → turn events → delivery. Entry points
 * use only `submit`, `follow`, `waitFor` and `interrupt`.
 */
export interface MessagePath {
  /** This process's instance id (ledger and task `owner`). */
  readonly owner: string;
  /** Event subscriptions' outbox (DECISIONS §20): tasks, cron and channels write their deliveries through it. */
  readonly outbox: EventOutbox | null;
  /**
   * Identity check, key rules, idempotency claim or replay, ledger
   * `accepted` (committed), then the turn queue. Answers what the entry
   * point must answer: acknowledge, or wait for the result (rules 5–6).
   */
  submit(inbound: Inbound): Promise<Submitted>;
  /**
   * A turn, replayed then live, to its end, as steps ready for a wire format
   * (`TurnStep`: output, a pause, the end with its one error mapping); see
   * `followTurn` for how replay and live are joined.
   */
  follow(eventId: string, options: FollowOptions): AsyncGenerator<TurnStep>;
  /**
   * The turn once it has an outcome (pauses included; with `until:
   * 'terminal'` only once it has ended), or null after `timeoutMs` or an
   * abort (it goes on; its acceptance is durable by then).
   */
  waitFor(
    eventId: string,
    timeoutMs: number,
    signal?: AbortSignal,
    until?: 'outcome' | 'terminal',
  ): Promise<TurnRecord | null>;
  /** The moments of a turn marked so far (`Server-Timing` of the answer), forgotten once read. */
  timings(eventId: string): TurnMarks | undefined;
  /**
   * Ends a running turn as `interrupted` with `reason`: here when it runs here (true); otherwise, where several
   * processes share the database, asks the others over the bus (true when the request went out). False when
   * it runs nowhere this process can reach.
   */
  interrupt(eventId: string, reason: string): boolean;
  /** `interrupt` for a request from another process: only a turn running here (ADR 0029). */
  interruptHere(eventId: string, reason: string): boolean;
  /** The ledger record of a turn, or null when there is none. */
  turn(eventId: string): Promise<TurnRecord | null>;
  /**
   * The refusal (503, Retry-After) new work gets while the process is over a limit of `limits.overload`
   * (memory watermark, event-loop delay), or null: for entry points to refuse before reading a body.
   */
  overloaded(): ApiError | null;
  /** Event ids of the turns running in this process. */
  runningTurns(): string[];
  /** Listens to every turn's events (the live feed's `turns` topic). */
  tap(listener: TurnEventTap): () => void;
  /** Listens to this process's turn events once each is stored, in order (the cross-process bus, ADR 0025). */
  relay(listener: TurnEventTap): () => void;
  /**
   * A turn event of another process, stored there (ADR 0025): delivered to
   * this process's followers and waiters of the turn. False for an unknown type: ignored.
   */
  deliverRemote(event: { eventId: string; seq: number; type: string; data: Record<string, unknown> }): boolean;
  /** Another process says a turn changed in the store: its waiters here read the ledger again (ADR 0025). */
  wake(eventId: string): void;
  /** Another process ended or paused a turn of `sessionKey`: a lane of it waiting here tries again (ADR 0029). */
  sessionFree(sessionKey: string): void;
  /** True when a waiter or follower here takes the turn's events (another process's, ADR 0046). */
  follows(eventId: string): boolean;
  /** True when a lane here waits on a turn of the session (so another process's `sessionFree` matters). */
  waitsOn(sessionKey: string): boolean;
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
  /** Several agents (DECISIONS §17): which one a new session gets, and which one runs a session's turns. */
  agents?: {
    originOf(inbound: Inbound): SessionOrigin;
    forSession(sessionKey: string): Promise<SessionAgent>;
  };
  /** Idempotency LRU entries per kind of scope (the webhook's own size comes from its channel). */
  idempotencyCacheSizes?: Partial<Record<ScopeKind, number>>;
  /** Told of every newly accepted message (live feed `sessions`). */
  onAccepted?: (sessionKey: string, eventId: string) => void;
  /** Metrics hooks. */
  onOutcome?: (status: string, durationMs: number) => void;
  onReplay?: () => void;
  /** Overrides for tests. */
  idempotencyCeiling?: number;
  /** Backoffs and the reconciler's passes (tests drive them); default real, unreferenced timers. */
  timers?: Timers;
  /** Pause between the reconciler's passes; default 1 s (ADR 0014). */
  reconcileIntervalMs?: number;
  /** This process's instance id (ledger `owner`, the bus's sender id); default a new `gw_…` id. */
  owner?: string;
  /**
   * True while a cross-process bus delivers other processes' turn events
   * (ADR 0025): the ledger poll of waiters, only a safety net then, slows down.
   */
  busConnected?: () => boolean;
  /**
   * Where several processes share the database: told once a turn of
   * `sessionKey` ended or paused here, so lanes of that session waiting in
   * other processes try again (the bus's session wake-up, ADR 0029).
   */
  onSessionFree?: (sessionKey: string) => void;
  /** Asks the other processes to interrupt a turn that does not run here; true when the request went out. */
  interruptElsewhere?: (eventId: string, reason: string) => boolean;
  /** Tracing of turns (DECISIONS §21); null or absent when it is off. */
  tracer?: TurnTracer | null;
  /** Event subscriptions (DECISIONS §20): deliveries written in the commits of what they report. */
  outbox?: EventOutbox | null;
  /** Load shedding at the door (`limits.overload`, ADR 0043); absent: only `max_queued_turns` refuses. */
  shedder?: LoadShedder | null;
}

/** Turn event types another process may send (DECISIONS §5). */
const TURN_EVENT_TYPES: ReadonlySet<string> = new Set(['delta', 'tool_call', 'tool_result', 'status', 'done', 'error']);

/** Builds the message path; nothing runs until `start()`. */
export function createMessagePath(options: MessagePathOptions): MessagePath {
  const { config, store, clock, ids, logger } = options;
  const log = logger.child({ source: 'turns' });
  const owner = options.owner ?? ids.next('gw');
  // The store's own statements for each step of a turn (accept, claim, outcome, streamed events), chosen once.
  const path = turnPathFor(store);
  const hub = new TurnEventHub({ store, path, clock, logger: log });
  const timings = new TurnTimings();
  // Live events wake waiters at once, and the runner hands them the outcomes it stores. The poll is a safety
  // net, and where other processes share the database it also finds outcomes of turns they ran; with one
  // process it can be slow.
  // With a connected cross-process bus, other processes' events arrive as this one's do (ADR 0025).
  const pollMs = () => (store.shared && !(options.busConnected?.() ?? false) ? 1000 : 5000);
  const waiters = new TurnWaiters({
    store,
    hub,
    maxWaiters: 10_000,
    pollMs,
    // A turn held here hands its outcome over: no first read of the ledger (`isHeld` is defined below).
    isHeld: (eventId) => isHeld(eventId),
  });
  const idempotency = new Idempotency({
    store,
    clock,
    ...(options.idempotencyCacheSizes ? { cacheSizes: options.idempotencyCacheSizes } : {}),
    ...(options.idempotencyCeiling !== undefined ? { ceiling: options.idempotencyCeiling } : {}),
    ...(options.onReplay ? { onReplay: options.onReplay } : {}),
    onError: (err) => log.warn({ err: (err as Error).message }, 'idempotency recount failed'),
  });
  const timers = options.timers ?? realTimers;
  const { heartbeatMs, staleMs } = takeoverTimes(config.cluster.takeover_after_ms);
  /** Sessions whose lane waits for a turn of theirs in another process (bounded by the queue's lanes). */
  const elsewhere = new Set<string>();
  let elsewherePoll: (() => void) | null = null;
  const recheckElsewhere = (): void => {
    elsewherePoll = null;
    const keys = [...elsewhere];
    elsewhere.clear();
    for (const key of keys) queue.recheck(key);
  };
  const onSessionBusy = (sessionKey: string, why: 'claiming' | 'elsewhere'): void => {
    if (why === 'claiming') {
      // Another process claims a turn of this session right now: look again in a moment.
      timers.after(SESSION_BUSY_RETRY_MS, () => queue.recheck(sessionKey));
      return;
    }
    elsewhere.add(sessionKey);
    // Woken by the other process's session wake-up; this poll only covers a lost one.
    elsewherePoll ??= timers.after(SESSION_ELSEWHERE_POLL_MS, recheckElsewhere);
  };
  const runner = new TurnRunner({
    store,
    path,
    onSessionBusy,
    ...(options.onSessionFree ? { onSessionFree: options.onSessionFree } : {}),
    hub,
    waiters,
    timings,
    tracer: options.tracer ?? null,
    outbox: options.outbox ?? null,
    // The context budget, the tool results' cap, and the context cache where this process is the one writer.
    ...payloadOptions(config.limits.payloads, store.shared),
    idempotency,
    clock,
    ids,
    logger: log,
    owner,
    ...(options.onOutcome ? { onOutcome: options.onOutcome } : {}),
    ...(options.commands ? { commands: options.commands } : {}),
    ...(options.agents ? { agents: options.agents } : {}),
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
    maxQueued: config.agent.max_queued_turns,
    run: (sessionKey, job) => runner.run(sessionKey, job),
    onError: (err) => log.error({ err }, 'turn job failed'),
    now: () => clock.now(), // waits and run times, for admission
    onRetry: (sessionKey, job, failures, delayMs) => {
      // Once per streak of a lane: an outage retries every lane until the store is back.
      if (failures === 1) {
        log.warn(
          { session_key: sessionKey, event_id: job.eventId, job: job.kind, delay_ms: delayMs },
          'turn job waits for the store',
        );
      }
    },
    timers,
  });
  const intake = new Intake({
    store,
    path,
    clock,
    ids,
    queue,
    idempotency,
    checkIdentity: options.checkIdentity,
    owner,
    timings,
    tracer: options.tracer ?? null,
    outbox: options.outbox ?? null,
    shedder: options.shedder ?? null,
    ...(options.onAccepted ? { onAccepted: options.onAccepted } : {}),
    ...(options.agents ? { originOf: (inbound: Inbound) => options.agents!.originOf(inbound) } : {}),
  });
  const followDeps = { hub, waiters, lastSeq: (eventId: string) => lastTurnEventSeq(store.db, eventId) };
  const follow = (eventId: string, followOptions: FollowOptions) =>
    readySteps(followTurn(followDeps, eventId, followOptions), followOptions.endOnPause);
  let heartbeatTimer: NodeJS.Timeout | undefined;
  /** Event ids already adopted by a recovery pass (bounded). */
  const adopted = new Set<string>();

  const now = () => isoTime(clock.now());

  /** Publishes the final `done` of turns just ended `interrupted` outside a runner (their streams end). */
  const publishInterrupted = async (eventIds: readonly string[]): Promise<void> => {
    for (const eventId of eventIds) {
      // Continue the turn's numbering; if the store cannot tell it, the event still reaches live followers.
      await hub.open(eventId).catch(() => undefined);
      hub.publish(eventId, 'done', {
        status: 'interrupted',
        message: messageView(eventId, 'interrupted', null, null, emptyTotals()),
      });
      hub.release(eventId);
    }
  };

  /** True while a lane or the runner holds the turn. */
  const isHeld = (eventId: string): boolean => queue.holds(eventId) || runner.holds(eventId);

  /** Ends the running `turns` of `filter` that `held` disowns as `interrupted` with `reason`; answers those it ended. */
  const interruptOrphans = async (
    turns: readonly TurnRecord[],
    reason: string,
    filter: TurnOwnerFilter,
    held: (eventId: string) => boolean,
  ): Promise<string[]> => {
    const orphans = turns.filter((turn) => !held(turn.eventId));
    if (orphans.length === 0) return [];
    const ended = await store.writer.run(async (trx) => {
      const ids = await interruptTurns(trx, {
        statuses: ['running'],
        eventIdIn: orphans.map((turn) => turn.eventId),
        reason,
        now: now(),
        ...filter,
      });
      for (const id of ids) await idempotency.settle(trx, id);
      return ids;
    });
    await publishInterrupted(ended);
    // A session blocked on a turn that ended this way may go on.
    const endedSet = new Set(ended);
    for (const turn of orphans) if (endedSet.has(turn.eventId)) queue.recheck(turn.sessionKey);
    return ended;
  };

  // On a database of its own (SQLite) every leftover is this process's; when shared, only its own.
  const ownTurns: TurnOwnerFilter = store.shared ? { ownerIn: [owner] } : {};
  const reconciler = new TurnReconciler({
    store,
    owners: ownTurns,
    timers,
    logger: log,
    ...(options.reconcileIntervalMs !== undefined ? { intervalMs: options.reconcileIntervalMs } : {}),
    isHeld,
    requeue: (turn) =>
      void queue.enqueue(turn.sessionKey, { kind: 'turn', eventId: turn.eventId, seq: turn.seq }, { force: true }),
    interrupt: (turns) => interruptOrphans(turns, 'store_unavailable', ownTurns, isHeld),
  });

  // A write that commits after an outage: lanes backing off retry now rather than at their next backoff.
  let stopWaking: (() => void) | null = null;

  /**
   * Takes over turns left by gateways that are gone: at start-up, this one's own predecessor's (the same
   * instance id: nothing of them runs here yet) and every dead instance's; later sweeps, dead instances' only.
   * Running ones end `interrupted` (process_restart); accepted ones are queued here in arrival order.
   */
  const recover = async (atStart: boolean): Promise<{ interrupted: string[]; requeued: number }> => {
    const live = await liveOwners(store, owner, isoTime(clock.now() - staleMs));
    const others = atStart ? live.filter((id) => id !== owner) : live;
    const interrupted = await store.writer.run((trx) =>
      interruptTurns(trx, { statuses: ['running'], ownerNotIn: others, reason: 'process_restart', now: now() }),
    );
    await publishInterrupted(interrupted);
    // Accepted turns of dead (or no) owners: run them here. The claim decides if two processes adopt one.
    const accepted = await listTurnsByStatus(store.db, ['accepted'], { limit: 100_000, ownerNotIn: others });
    let requeued = 0;
    for (const turn of accepted) {
      if (adopted.has(turn.eventId) || isHeld(turn.eventId)) continue;
      if (adopted.size >= 100_000) adopted.clear();
      adopted.add(turn.eventId);
      if (queue.enqueue(turn.sessionKey, { kind: 'turn', eventId: turn.eventId, seq: turn.seq }, { force: true })) {
        requeued++;
      }
    }
    // Lanes that waited on what was just ended or adopted go on (an adopted turn now leads its lane).
    if (interrupted.length > 0 || requeued > 0) {
      for (const turn of accepted) queue.recheck(turn.sessionKey);
      recheckElsewhere();
    }
    return { interrupted, requeued };
  };

  return {
    owner,
    outbox: options.outbox ?? null,
    submit: (inbound) => intake.submit(inbound),
    follow,
    waitFor: async (eventId, timeoutMs, signal, until) => {
      const turn = await waiters.wait(eventId, timeoutMs, signal, until);
      // A waited acceptance may not be durable yet (`Inbound.outcomeOnly`): it is before the caller hears
      // of the event without its outcome (504).
      if (!turn) await store.writer.sync();
      return turn;
    },
    timings: (eventId) => timings.take(eventId),
    interrupt: (eventId, reason) =>
      runner.interrupt(eventId, reason) ||
      (store.shared && !isHeld(eventId) && (options.interruptElsewhere?.(eventId, reason) ?? false)),
    interruptHere: (eventId, reason) => runner.interrupt(eventId, reason),
    turn: (eventId) => getTurn(store.db, eventId),
    overloaded: () => options.shedder?.pressure() ?? null,
    runningTurns: () => runner.runningTurns(),
    tap: (listener) => hub.tap(listener),
    relay: (listener) => hub.relay(listener),
    deliverRemote: (event) => {
      if (!TURN_EVENT_TYPES.has(event.type)) return false;
      hub.deliverRemote(event as TurnEvent);
      return true;
    },
    follows: (eventId) => hub.hasListeners(eventId),
    waitsOn: (sessionKey) => elsewhere.has(sessionKey) || queue.isBlocked(sessionKey),
    sessionFree: (sessionKey) => {
      // Also a lane that waited on a turn awaiting approval, resolved and ended over there.
      elsewhere.delete(sessionKey);
      queue.recheck(sessionKey);
    },
    wake: (eventId) => {
      getTurn(store.db, eventId).then(
        (turn) => turn && waiters.settled(turn),
        () => undefined, // the poll reads it later
      );
    },
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
      options.shedder?.start?.();
      await store.writer.run((trx) => registerInstance(trx, owner, now()));
      await idempotency.start();
      const result = await recover(true);
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
          recover(false).catch((err: unknown) => log.warn({ err: (err as Error).message }, 'recovery sweep failed'));
        }
      }, heartbeatMs);
      heartbeatTimer.unref();
      reconciler.start();
      stopWaking = store.writer.onWritesRestored(() => {
        const woken = queue.wake();
        if (woken > 0) log.info({ lanes: woken }, 'store writes again; waiting turns resume');
      });
      return result;
    },
    async shutdown(graceMs) {
      clearInterval(heartbeatTimer);
      elsewherePoll?.();
      elsewherePoll = null;
      await reconciler.close();
      stopWaking?.();
      idempotency.close();
      queue.close();
      const idle = await queue.idle(graceMs);
      if (!idle) {
        runner.interruptAll('shutdown');
        await queue.idle(5_000);
      }
      // Turns claimed here that still wait for the store (a retry, or an outcome to store) end now.
      await listTurnsByStatus(store.db, ['running'], { limit: 10_000, ownerIn: [owner] })
        .then((turns) => interruptOrphans(turns, 'shutdown', { ownerIn: [owner] }, (id) => runner.holds(id)))
        .catch(() => undefined); // the store is down: the next start interrupts them (process_restart)
      await hub.flush();
      await store.writer.run((trx) => removeInstance(trx, owner)).catch(() => undefined);
      options.shedder?.close?.();
    },
  };
}
