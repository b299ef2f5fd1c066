import type { Config } from '../config/config.schema.js';
import { IdempotencyCache, IdempotencyLedgerGauge, DEFAULT_CEILING } from '../idempotency/idempotency.service.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../logs/logger.js';
import type { ModelProvider } from '../runtime/providers/provider.js';
import type { ToolRegistry } from '../runtime/tools.js';
import { heartbeat, liveInstances, registerInstance, removeInstance } from '../store/instances.repo.js';
import type { Store } from '../store/index.js';
import { Intake } from './intake.js';
import { TurnEventHub } from './turn-events.js';
import { TurnQueue } from './turn-queue.js';
import { messageView, TurnRunner, type ChatCommand } from './turn-runner.js';
import { emptyTotals } from '../runtime/agent.js';
import { TurnWaiters } from './turn-waiters.js';
import { interruptTurns, listTurnsByStatus } from './turns.repo.js';

/** Heartbeat of this process in the instance table (PostgreSQL scale-out). */
const HEARTBEAT_MS = 5_000;
/** An instance silent this long is dead: its running turns are interrupted, its accepted ones adopted. */
const STALE_MS = 20_000;

/** The message path: intake → queue → runner → events → waiters, plus recovery and shutdown. */
export interface MessagePath {
  readonly owner: string;
  readonly hub: TurnEventHub;
  readonly queue: TurnQueue;
  readonly runner: TurnRunner;
  readonly intake: Intake;
  /** The webhook channel's intake: same ledger and queue, its own idempotency LRU (2048, spec: Limits). */
  readonly webhookIntake: Intake;
  readonly waiters: TurnWaiters;
  readonly gauge: IdempotencyLedgerGauge;
  /** Start-up: register, interrupt turns that were running in a dead process, queue accepted ones. */
  start(): Promise<{ interrupted: string[]; requeued: number }>;
  /** Shutdown: stop starting turns, give running ones `graceMs`, then interrupt them (`shutdown`). */
  shutdown(graceMs: number): Promise<void>;
}

export interface MessagePathOptions {
  config: Config;
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  provider: ModelProvider;
  tools: ToolRegistry;
  /** Extra system context per model call (e.g. active skills). */
  systemContext?: ReadonlyArray<() => Promise<string | null>>;
  /** Extra chat commands (`/approve`, `/deny`…). */
  commands?: Record<string, ChatCommand>;
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
  const runner = new TurnRunner({
    store,
    hub,
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
  const gauge = new IdempotencyLedgerGauge({
    store,
    clock,
    ceiling: options.idempotencyCeiling ?? DEFAULT_CEILING,
    onError: (err) => log.warn({ err: (err as Error).message }, 'idempotency gauge refresh failed'),
  });
  const intake = new Intake({
    store,
    clock,
    ids,
    queue,
    cache: new IdempotencyCache(4096),
    gauge,
    owner,
    ...(options.onReplay ? { onReplay: options.onReplay } : {}),
    ...(options.onAccepted ? { onAccepted: options.onAccepted } : {}),
  });
  const webhookIntake = new Intake({
    store,
    clock,
    ids,
    queue,
    cache: new IdempotencyCache(2048),
    gauge,
    owner,
    ...(options.onReplay ? { onReplay: options.onReplay } : {}),
    ...(options.onAccepted ? { onAccepted: options.onAccepted } : {}),
  });
  // Live events wake waiters at once. The poll is a safety net, and on PostgreSQL it also finds
  // outcomes of turns another gateway process ran; on SQLite (one process) it can be slow.
  const waiters = new TurnWaiters({
    store,
    hub,
    maxWaiters: 10_000,
    pollMs: store.driver === 'postgres' ? 1000 : 5000,
  });
  let heartbeatTimer: NodeJS.Timeout | undefined;
  /** Event ids already adopted by a recovery pass (bounded). */
  const adopted = new Set<string>();

  const now = () => isoTime(clock.now());

  /** Owners whose turns must be left alone: this process and, on PostgreSQL, every live one. */
  const liveOwners = async (): Promise<string[]> => {
    if (store.driver === 'sqlite') return [owner]; // one process per SQLite file
    const live = await liveInstances(store.db, isoTime(clock.now() - STALE_MS));
    return [...new Set([owner, ...live])];
  };

  const recover = async (): Promise<{ interrupted: string[]; requeued: number }> => {
    const live = await liveOwners();
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
    hub,
    queue,
    runner,
    intake,
    webhookIntake,
    waiters,
    gauge,
    async start() {
      await store.writer.run((trx) => registerInstance(trx, owner, now()));
      await gauge.start();
      const result = await recover();
      if (result.interrupted.length || result.requeued) {
        log.info(
          { interrupted: result.interrupted.length, requeued: result.requeued },
          'recovered turns after restart',
        );
      }
      heartbeatTimer = setInterval(() => {
        store.writer.run((trx) => heartbeat(trx, owner, now())).catch(() => undefined);
        if (store.driver === 'postgres') {
          // Adopt work of instances that died while we run.
          recover().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'recovery sweep failed'));
        }
      }, HEARTBEAT_MS);
      heartbeatTimer.unref();
      return result;
    },
    async shutdown(graceMs) {
      clearInterval(heartbeatTimer);
      gauge.stop();
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
