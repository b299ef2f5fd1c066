/**
 * The turn runner: runs each turn job of the queue — claims the turn (`turn-claim.ts`), answers a chat command
 * (`turn-commands.ts`) or runs the agent loop on the turn's ports (`turn-ports.ts`), and settles the outcome
 * (`turn-finish.ts`). The store's own statements for each step come from its `TurnPath` (`turn-path.ts`).
 */
import type { IdGenerator } from '../lib/ids.js';
import {
  emptyTotals,
  runAgent,
  type AgentOptions,
  type AgentOutcome,
  type ModelProvider,
  type PendingState,
  type Resolution,
} from '../runtime/index.js';
import { contextBudgetOf, getSession, type ContextBudget, type SizedEntry } from '../sessions/index.js';
import { ContextCache } from './context-cache.js';
import type { InboundPayload } from './inbound.js';
import { runningStatus, TurnClaimer, type ClaimedStep } from './turn-claim.js';
import { runChatCommand, type ChatCommand } from './turn-commands.js';
import { isStoreUnavailable, settleOutcome, storeUnavailableOutcome, type TurnFinishDeps } from './turn-finish.js';
import { turnPorts, type SpendCap } from './turn-ports.js';
import type { JobResult, TurnJob } from './turn-queue.js';
import type { TurnTrace, TurnTracer } from './turn-trace.js';
import { noWrites, type TurnWrites } from './turn-writes.js';
import { getTurn, type TurnRecord } from './turns.repo.js';

export type { ChatCommand } from './turn-commands.js';

/** The agent a session's turns run with, and the spend caps besides the gateway's (its agent's, its owner's). */
export interface SessionAgent {
  options: AgentOptions;
  caps: readonly SpendCap[];
  /** Whose memory its turns use (`ToolContext.memoryOwner`). */
  memoryOwner?: string;
  /** The principal owning the session (`ToolContext.principal`). */
  principal?: string;
  /** The agent's id (spans of the turn, DECISIONS §21). */
  agent?: string;
}

/** What the runner uses: what ending a turn uses, and what running one adds. */
export interface TurnRunnerOptions extends TurnFinishDeps {
  ids: IdGenerator;
  /** The agent of sessions `agents` does not decide (every session, without it). */
  agent: AgentOptions;
  /** Which agent runs a session's turns, with what options and spend caps (DECISIONS §17-18). */
  agents?: { forSession(sessionKey: string): Promise<SessionAgent> };
  /** USD per UTC day, or null for no cap. */
  dailyBudgetUsd: number | null;
  /**
   * Where several processes share the database (ADR 0029): told when a turn
   * of `sessionKey` could not start because the session is busy — `claiming`
   * (another process claims a turn of it this instant) or `elsewhere` (an
   * earlier turn of it is still accepted, or one runs, in another process).
   * The job waits in its lane as `blocked` until `TurnQueue.recheck`.
   */
  onSessionBusy?: (sessionKey: string, why: 'claiming' | 'elsewhere') => void;
  /**
   * Extra chat commands (`/approve <skill>`…), by name without the slash.
   * A handler answers with the reply text; it checks its own permissions.
   */
  commands?: Record<string, ChatCommand>;
  /** Tracing of turns (DECISIONS §21); null or absent when it is off. */
  tracer?: TurnTracer | null;
  /** The model's context as a token budget (`limits.payloads`); default: its defaults. */
  contextBudget?: ContextBudget;
  /** A tool result over this many bytes is cut, with a note, before it is stored or sent (`limits.payloads`). */
  maxToolResultBytes?: number;
  /** The model's reply is cut at this many bytes and the turn ends incomplete (`limits.payloads`). */
  maxReplyBytes?: number;
}

/**
 * The runner's options from `limits.payloads` (ADR 0043): the context budget, the tool results' cap, and —
 * where this process is the database's one writer (`shared` false) — the context windows of active sessions
 * kept in memory, bounded by bytes.
 */
export function payloadOptions(
  payloads: {
    max_tool_result_bytes: number;
    max_reply_bytes: number;
    max_context_tokens: number;
    max_message_tokens: number;
    max_context_messages: number;
  },
  shared: boolean,
): Pick<TurnRunnerOptions, 'contextBudget' | 'maxToolResultBytes' | 'maxReplyBytes' | 'contextCache'> {
  const contextBudget = contextBudgetOf(payloads);
  return {
    contextBudget,
    maxToolResultBytes: payloads.max_tool_result_bytes,
    maxReplyBytes: payloads.max_reply_bytes,
    ...(shared ? {} : { contextCache: new ContextCache(contextBudget) }),
  };
}

/**
 * Runs turn jobs: claims an accepted turn (atomic accepted→running), handles
 * chat commands, runs the agent loop against the store and the event hub,
 * and writes the outcome (first terminal status wins). Paused turns resume
 * through the same path.
 */
export class TurnRunner {
  private readonly running = new Map<string, AbortController>();
  /** Set by interruptAll: turns that start from now on are aborted at once. */
  private stopping: string | null = null;
  /**
   * Turns this runner claimed whose run the store cut short before any effect
   * (no model call yet): their job retries from the claimed step. At most one
   * per lane: the lane waits on it.
   */
  private readonly claims = new Map<string, ClaimedStep>();
  private readonly claimer: TurnClaimer;

  // The helpers keep `options` itself: `reconfigure` changes it for the turns that start from then on.
  constructor(private readonly options: TurnRunnerOptions) {
    this.claimer = new TurnClaimer(options);
  }

  /**
   * Live configuration (SettingsService): turns that start from now on use
   * these values; a turn already running keeps the ones it started with.
   */
  reconfigure(settings: {
    systemPrompt: string | null;
    maxToolIterations: number;
    approvalRequired: ReadonlySet<string>;
    pricing: AgentOptions['pricing'];
    dailyBudgetUsd: number | null;
  }): void {
    const { dailyBudgetUsd, ...agent } = settings;
    this.options.agent = { ...this.options.agent, ...agent };
    this.options.dailyBudgetUsd = dailyBudgetUsd;
  }

  /** Event ids of turns running in this process. */
  runningTurns(): string[] {
    return [...this.running.keys()];
  }

  /** Aborts a running turn; it ends `interrupted` with `reason`. False when not running here. */
  interrupt(eventId: string, reason: string): boolean {
    const controller = this.running.get(eventId);
    if (!controller) return false;
    controller.abort(reason);
    return true;
  }

  /**
   * Aborts every running turn (shutdown after the grace period), including
   * one claimed a moment ago that has not registered yet.
   */
  interruptAll(reason: string): void {
    this.stopping = reason;
    for (const controller of this.running.values()) controller.abort(reason);
  }

  /** True while this runner runs the turn (or a turn it resumed), from its start to its outcome. */
  holds(eventId: string): boolean {
    return this.running.has(eventId);
  }

  /**
   * Runs one queue job; never throws for turn failures (they end in the
   * ledger). When the store fails it answers `{retry}` instead (ADR 0014):
   * the same job while nothing but ledger bookkeeping happened (the turn is
   * still accepted, or claimed by this runner before any model call), or a
   * `finish` job carrying the outcome the store did not take.
   */
  async run(sessionKey: string, job: TurnJob): Promise<JobResult> {
    this.options.timings?.mark(job.eventId, 'started');
    this.options.tracer?.started(job.eventId);
    try {
      switch (job.kind) {
        case 'finish':
          return await this.finishAgain(job);
        case 'resume':
          return await this.runResume(job);
        case 'turn':
          return await this.runTurn(sessionKey, job);
      }
    } catch (err) {
      // Only failures before any effect get here; later ones end in `settle`.
      if (isStoreUnavailable(err)) return { retry: job };
      throw err;
    }
  }

  private async runResume(job: Extract<TurnJob, { kind: 'resume' }>): Promise<JobResult> {
    // The approve/deny route already moved the turn waiting_approval → running.
    const turn = await getTurn(this.options.store.db, job.eventId);
    if (!turn || turn.status !== 'running') return 'done';
    const result = await this.execute(turn, [job.eventId], {
      resume: { pending: job.pending, resolution: { type: job.resolution } },
    });
    return result === 'retry' ? { retry: job } : result;
  }

  private async runTurn(sessionKey: string, job: Extract<TurnJob, { kind: 'turn' }>): Promise<JobResult> {
    let step = this.claims.get(job.eventId) ?? null;
    if (step) {
      // Claimed by this runner on an earlier attempt that the store cut short before any effect.
      const turn = await getTurn(this.options.store.db, job.eventId);
      if (!turn || turn.status !== 'running' || turn.owner !== this.options.owner) {
        this.claims.delete(job.eventId);
        this.options.hub.release(job.eventId);
        return 'done';
      }
    } else {
      const claimed = await this.claimer.claim(sessionKey, job.eventId, { newSession: job.newSession === true });
      if (claimed === 'blocked') return 'blocked';
      if (!claimed) return 'done';
      step = claimed;
    }
    // On SQLite the claim committed without waiting for its fsync: nothing with an effect (a model call, a
    // command's handler) runs before it is durable, while the conversation is read meanwhile (on PostgreSQL the
    // commit was durable and this resolves at once). A failed sync is a store failure before any effect (retried).
    const durable = this.options.store.writer.sync();
    durable.catch(() => undefined);
    switch (step.kind) {
      case 'command': {
        await durable;
        this.claims.delete(job.eventId);
        const startedMs = this.options.clock.now();
        const trace = this.options.tracer?.open(step.claimed, {}, false) ?? null;
        trace?.claimed();
        const outcome = await runChatCommand(this.options, step.claimed, step.command);
        trace?.answered();
        return this.settle([step.claimed.eventId], outcome, startedMs, noWrites(), { metrics: false, trace });
      }
      case 'answer': {
        this.claims.delete(job.eventId);
        const text = (step.claimed.payload as InboundPayload).text;
        const result = await this.execute(step.claimed, [step.claimed.eventId, step.resumed.eventId], {
          resume: { pending: step.pending as PendingState, resolution: { type: 'answer', text } },
          beforeEffects: durable,
          fresh: true,
        });
        return result === 'retry' ? { retry: job } : result; // (a resumed turn never asks to retry)
      }
      case 'lost':
        this.claims.delete(job.eventId);
        await this.options.hub.open(job.eventId, { fresh: true }); // it never got as far as an event
        return this.settle([job.eventId], storeUnavailableOutcome(emptyTotals()), this.options.clock.now(), noWrites());
      case 'message': {
        this.claims.set(job.eventId, step);
        const statusStored = step.statusStored;
        step.statusStored = false; // a retry of this step stores its own `status`
        const window = step.window;
        delete step.window; // a retry reads it anew
        const result = await this.execute(step.claimed, [step.claimed.eventId], {
          knownEpoch: step.epoch,
          ...(window ? { window } : {}),
          retryBeforeEffects: true,
          beforeEffects: durable,
          fresh: statusStored,
          statusStored,
          unkeyed: job.unkeyed === true,
        });
        if (result === 'retry') return { retry: job }; // still claimed: the next attempt starts from here
        this.claims.delete(job.eventId);
        return result;
      }
    }
  }

  /**
   * Runs the agent for a claimed (or resumed) turn. `eventIds[0]` carries the
   * stream; a clarification answer also finishes the turn it resumed.
   *
   * A store failure ends the turn `interrupted` (store_unavailable), except
   * with `retryBeforeEffects` when nothing has reached the model yet: then it
   * answers 'retry' and the turn stays claimed for the next attempt. The
   * model's reply and usage are staged and stored with the outcome (one
   * commit); steps with tools store theirs before the tools run.
   */
  private async execute(
    turn: TurnRecord,
    eventIds: string[],
    options: {
      resume?: { pending: PendingState; resolution: Resolution };
      knownEpoch?: number;
      retryBeforeEffects?: boolean;
      /** Resolves once the claim is durable: awaited before the first model call. */
      beforeEffects?: Promise<void>;
      /** The primary turn was just claimed from `accepted`: its numbering starts at 1. */
      fresh?: boolean;
      /** The claim stored the primary turn's `status` event: only deliver it. */
      statusStored?: boolean;
      /** The context window read with the claim: the first model call uses it instead of reading it. */
      window?: SizedEntry[];
      /** The turn was accepted without an idempotency key (`TurnJob.unkeyed`). */
      unkeyed?: boolean;
    } = {},
  ): Promise<JobResult | 'retry'> {
    const { store, hub, logger, timings } = this.options;
    const { resume } = options;
    const primary = eventIds[0]!;
    const sessionKey = turn.sessionKey;
    const controller = new AbortController();
    const startedMs = this.options.clock.now();
    let effects = false;
    const writes = noWrites();
    let trace: TurnTrace | null = null;
    for (const id of eventIds) this.running.set(id, controller);
    if (this.stopping !== null) controller.abort(this.stopping);
    try {
      let outcome: AgentOutcome;
      try {
        // A turn claimed just now has no events yet; a resumed one continues its numbering.
        for (const id of eventIds) await hub.open(id, { fresh: options.fresh === true && id === primary });
        for (const id of eventIds) {
          // The paused turn says how it was resumed; a new turn answering a question (the primary) just runs.
          const resolved = resume?.resolution.type === 'answer' && id === primary ? undefined : resume?.resolution.type;
          hub.publish(id, 'status', runningStatus(resolved), {
            stored: id === primary && options.statusStored === true,
          });
        }
        const epoch = options.knownEpoch ?? (await getSession(store.db, sessionKey))?.contextEpoch ?? turn.contextEpoch;
        const chosen = this.options.agents
          ? await this.options.agents.forSession(sessionKey)
          : { options: this.options.agent, caps: [] };
        const agent = chosen.options;
        const provider = agent.provider;
        if (this.options.tracer) {
          const who = { principal: chosen.principal ?? null, agent: 'agent' in chosen ? (chosen.agent ?? null) : null };
          // A resumed turn (approve, deny) continues the trace whose turn span its pause ended.
          trace = this.options.tracer.open(turn, who, resume !== undefined && options.fresh !== true);
        }
        // From the first model call on, the turn has had effects: a store failure then ends it (ADR 0014).
        const tracked: ModelProvider = {
          type: provider.type,
          model: provider.model,
          complete: async (request) => {
            if (!effects) {
              await options.beforeEffects;
              timings?.mark(primary, 'claimed');
              trace?.claimed();
            }
            effects = true;
            return trace ? trace.chat(provider, request) : provider.complete(request);
          },
        };
        const owners = {
          ...('memoryOwner' in chosen && chosen.memoryOwner !== undefined ? { memoryOwner: chosen.memoryOwner } : {}),
          ...('principal' in chosen && chosen.principal !== undefined ? { principal: chosen.principal } : {}),
        };
        const ports = turnPorts(this.options, turn, eventIds, epoch, writes, options.window, chosen.caps, owners);
        const run = {
          ...agent,
          provider: tracked,
          ...(this.options.maxToolResultBytes !== undefined
            ? { maxToolResultBytes: this.options.maxToolResultBytes }
            : {}),
          ...(this.options.maxReplyBytes !== undefined ? { maxReplyBytes: this.options.maxReplyBytes } : {}),
        };
        if (trace) run.tools = trace.tools(agent.tools);
        outcome = await runAgent(run, ports, controller.signal, resume);
      } catch (err) {
        if (isStoreUnavailable(err)) {
          if (options.retryBeforeEffects && !effects && !resume) {
            logger.warn(
              { source: 'turns', event_id: primary, err: (err as Error).message },
              'store unavailable before the model call; the turn will be retried',
            );
            return 'retry';
          }
          logger.warn(
            { source: 'turns', event_id: primary, err: (err as Error).message },
            'store unavailable during the turn; it ends interrupted',
          );
          outcome = storeUnavailableOutcome(resume?.pending.totals ?? emptyTotals());
        } else {
          logger.error({ source: 'turns', event_id: primary, err }, 'turn crashed');
          outcome = { status: 'failed', error: err as Error, totals: resume?.pending.totals ?? emptyTotals() };
        }
      }
      timings?.mark(primary, 'answered');
      trace?.answered();
      return await this.settle(eventIds, outcome, startedMs, writes, { trace, unkeyed: options.unkeyed === true });
    } finally {
      for (const id of eventIds) this.running.delete(id);
    }
  }

  /** Stores the outcome and tells listeners, or answers a `finish` job when the store refuses it (`settleOutcome`). */
  private settle(
    eventIds: string[],
    outcome: AgentOutcome,
    startedMs: number,
    writes: TurnWrites,
    options: { metrics?: boolean; trace?: TurnTrace | null; unkeyed?: boolean } = {},
  ): Promise<JobResult> {
    return settleOutcome(this.options, eventIds, outcome, startedMs, writes, options);
  }

  /** A `finish` job: the outcome the store refused, written now (first terminal status wins). */
  private async finishAgain(job: Extract<TurnJob, { kind: 'finish' }>): Promise<JobResult> {
    for (const id of job.eventIds) await this.options.hub.open(id);
    const result = await this.settle(job.eventIds, job.outcome, job.startedMs, job.writes ?? noWrites(), {
      trace: job.trace ?? null,
    });
    return typeof result === 'object' ? { retry: job } : result;
  }
}
