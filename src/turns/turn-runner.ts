import type { Transaction } from 'kysely';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../logs/index.js';
import {
  emptyTotals,
  runAgent,
  type AgentOptions,
  type AgentOutcome,
  type AgentPorts,
  type PendingState,
  type Resolution,
  type TurnTotals,
} from '../runtime/index.js';
import { ProviderError, type ChatMessage, type ModelProvider, type ToolCall } from '../runtime/index.js';
import type { Idempotency } from '../idempotency/index.js';
import {
  appendMessage,
  bumpEpoch,
  contextChat,
  ensureSession,
  getSession,
  touchSession,
  touchSessionEpoch,
  type ContextEntry,
  type MessageRecord,
} from '../sessions/index.js';
import { StoreUnavailableError, type Database, type Store } from '../store/index.js';
import { spentNanoUsdSince } from '../usage/index.js';
import type { ContextCache } from './context-cache.js';
import type { TurnEventHub, TurnEventType } from './turn-events.js';
import { appendTurnEvent, appendTurnEventOnce } from './turn-events.repo.js';
import type { InboundPayload } from './inbound.js';
import type { JobResult, TurnJob } from './turn-queue.js';
import type { TurnTimings } from './turn-timings.js';
import type { TurnWaiters } from './turn-waiters.js';
import { claimIfFree, finishHeldTurn, lockSessionForClaim, recordClaimedMessage } from './turn-path.pg.js';
import { isEmpty, noWrites, storeTurnWrites, type TurnWrites } from './turn-writes.js';
import {
  claimTurn,
  claimedUserMessage,
  finishTurnReturning,
  getTurn,
  holdsTurns,
  pauseTurnReturning,
  resumeTurn,
  sessionBusyBefore,
  updateTurnProgress,
  waitingTurnsOfSession,
  type TurnRecord,
} from './turns.repo.js';

/** The Message shape (DECISIONS §5) that answers a turn. */
export interface MessageView {
  id: string;
  role: 'assistant';
  content: string;
  tool_calls: Array<{ id: string; name: string; arguments: string; result?: unknown }>;
  cost: { input_tokens: number; output_tokens: number; total_usd: number };
  status: string;
  event_id: string;
}

/** A turn's writes refused because another gateway holds the turn now (ADR 0029). */
export class TurnTakenOverError extends Error {
  constructor(readonly eventId: string) {
    super(`turn ${eventId} is held by another gateway`);
    this.name = 'TurnTakenOverError';
  }
}

/** Messages of context sent to the model (the newest of the current epoch). */
export const CONTEXT_WINDOW = 100;

export interface TurnRunnerOptions {
  store: Store;
  hub: TurnEventHub;
  /** Told of each outcome (or pause) once it is durable, before its final event: waiting answers need no read. */
  waiters?: Pick<TurnWaiters, 'settled'>;
  /** Where each turn's moments are marked (`Server-Timing`). */
  timings?: TurnTimings;
  /** Context windows kept in memory (only where this process is the database's one writer). */
  contextCache?: ContextCache;
  /** Starts the TTL of a finished turn's idempotency records, in its ledger transaction. */
  idempotency: Pick<Idempotency, 'settle' | 'settledExpiry'>;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  agent: AgentOptions;
  /** USD per UTC day, or null for no cap. */
  dailyBudgetUsd: number | null;
  /** This process's instance id (ledger `owner`). */
  owner: string;
  /** Told when a run ends or pauses (metrics). */
  onOutcome?: (status: string, durationMs: number) => void;
  /**
   * Where several processes share the database (ADR 0029): told when a turn
   * of `sessionKey` could not start because the session is busy — `claiming`
   * (another process claims a turn of it this instant) or `elsewhere` (an
   * earlier turn of it is still accepted, or one runs, in another process).
   * The job waits in its lane as `blocked` until `TurnQueue.recheck`.
   */
  onSessionBusy?: (sessionKey: string, why: 'claiming' | 'elsewhere') => void;
  /** Told once a turn of `sessionKey` ended or paused and its outcome is stored (the session may go on). */
  onSessionFree?: (sessionKey: string) => void;
  /**
   * Extra chat commands (`/approve <skill>`…), by name without the slash.
   * A handler answers with the reply text; it checks its own permissions.
   */
  commands?: Record<string, ChatCommand>;
}

/** A chat command handler: `args` is the text after the command word. */
export type ChatCommand = (
  args: string,
  caller: { platform: string; userId: string; sessionKey: string },
) => Promise<string>;

/** Builds the Message of a turn from its totals. */
export function messageView(
  eventId: string,
  status: string,
  content: string | null,
  messageId: string | null,
  totals: TurnTotals,
): MessageView {
  return {
    // A turn that ends or pauses without a stored reply still answers a Message with a string id
    // (derived from its event, so every replay shows the same one) and string content.
    id: messageId ?? `msg_${eventId.replace(/^evt_/, '')}`,
    role: 'assistant',
    content: content ?? '',
    tool_calls: totals.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments, result: c.result })),
    cost: {
      input_tokens: totals.inputTokens,
      output_tokens: totals.outputTokens,
      total_usd: totals.costNanoUsd / 1e9,
    },
    status,
    event_id: eventId,
  };
}

function toChatMessages(rows: readonly ContextEntry[], cached: boolean): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const row of rows) {
    let message = cached ? chatMessageOf.get(row) : undefined;
    if (message === undefined) {
      message = toChatMessage(row);
      if (cached) chatMessageOf.set(row, message);
    }
    if (message) out.push(message);
  }
  // A context window cut between a tool call and its results is not valid for the model: drop leading results.
  while (out[0]?.role === 'tool') out.shift();
  return out;
}

/**
 * The model message of each entry of a cached window, made once: ContextCache keeps the same entries from turn
 * to turn, and converting up to a window's worth of them before every model call was the largest allocation
 * of a turn. Entries read from the store for one turn are converted without it (a weak map of short-lived keys
 * costs the GC more than it saves). Nothing changes a model message once made. Null: a role the model is not
 * shown.
 */
const chatMessageOf = new WeakMap<ContextEntry, ChatMessage | null>();

function toChatMessage(row: ContextEntry): ChatMessage | null {
  switch (row.role) {
    case 'user':
      return { role: 'user', content: row.content ?? '' };
    case 'assistant':
      return {
        role: 'assistant',
        content: row.content,
        ...(row.toolCalls ? { tool_calls: row.toolCalls as ToolCall[] } : {}),
      };
    case 'tool':
      return { role: 'tool', content: row.content ?? '', tool_call_id: row.toolCallId ?? '', name: row.name ?? '' };
    default:
      return null;
  }
}

/** The earlier messages a turn's request carried itself (`Inbound.context`), as model messages. */
function requestContext(turn: TurnRecord): ChatMessage[] {
  const context = (turn.payload as InboundPayload | null)?.context;
  if (!Array.isArray(context)) return [];
  return context.map((m): ChatMessage => ({ role: m.role, content: m.content }));
}

/** The short cause of a provider failure (`ProviderError.reason`), for the failed turn's log line. */
function providerCause(err: Error): string {
  return err instanceof ProviderError ? err.reason : 'provider error';
}

/** A provider failure with the upstream's redacted text (`ProviderError.logText`), for the failed turn's log line. */
function providerLogText(err: Error): string {
  return err instanceof ProviderError ? err.logText : err.message;
}

/** True when `err` (or an error it wraps) says the store cannot be reached or cannot write right now. */
export function isStoreUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof StoreUnavailableError) return true;
  }
  return false;
}

/** What a claim decided a turn is: a chat command, a clarification answer, or a message for the agent. */
type ClaimedStep =
  | { kind: 'command'; claimed: TurnRecord; command: { name: string; args: string } }
  | { kind: 'answer'; claimed: TurnRecord; resumed: TurnRecord; pending: unknown }
  | {
      kind: 'message';
      claimed: TurnRecord;
      epoch: number;
      /**
       * The claim's own transaction stored the turn's first event (`status`
       * running, number 1): it is only delivered. False once delivered, and for
       * a claim taken over from the ledger (its events are counted there).
       */
      statusStored: boolean;
      /** The context window the claim read with its writes (PostgreSQL, ADR 0032): the first model call's. */
      window?: ContextEntry[];
    }
  /** A claim whose commit went unconfirmed and whose step cannot be rebuilt from the ledger. */
  | { kind: 'lost'; claimed: TurnRecord };

/** The outcome of a turn the store failed under after its first model call, tool or command (ADR 0014). */
function storeUnavailableOutcome(totals: TurnTotals): AgentOutcome {
  return { status: 'interrupted', reason: 'store_unavailable', totals };
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
  /** Turns whose claim failed without knowing whether it committed: the retry checks the ledger. */
  private readonly unconfirmed = new Set<string>();

  constructor(private readonly options: TurnRunnerOptions) {}

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

  private now(): string {
    return isoTime(this.options.clock.now());
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
      const claimed = await this.claim(sessionKey, job);
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
      case 'command':
        await durable;
        this.claims.delete(job.eventId);
        return this.runCommand(step.claimed, step.command);
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
        });
        if (result === 'retry') return { retry: job }; // still claimed: the next attempt starts from here
        this.claims.delete(job.eventId);
        return result;
      }
    }
  }

  /**
   * The approval check and the claim: accepted→running with the user's message
   * stored, in one transaction. Null when the turn is not this runner's to
   * run. A claim that fails is marked unconfirmed: the retry finds out from
   * the ledger whether it committed, and takes it over if so.
   */
  private async claim(
    sessionKey: string,
    job: Extract<TurnJob, { kind: 'turn' }>,
  ): Promise<ClaimedStep | 'blocked' | null> {
    const { store, owner } = this.options;
    const unconfirmed = this.unconfirmed.has(job.eventId);
    // On PostgreSQL the claim's reads and writes are folded into three statements (ADR 0032).
    const folded = store.driver === 'postgres' && store.shared && !unconfirmed;
    let waiting: { approval: TurnRecord | null; clarification: TurnRecord | null } | null = null;
    if (!folded) {
      waiting = await waitingTurnsOfSession(store.db, sessionKey);
      if (waiting.approval) {
        // A turn awaiting approval blocks the later turns of its session (ADR 0005).
        const turn = await getTurn(store.db, job.eventId);
        if (!turn || (turn.status !== 'accepted' && !unconfirmed)) return null;
        if (waiting.approval.seq < turn.seq) return 'blocked';
      }
    }
    const now = this.now();
    const userMessageId = this.options.ids.next('msg');
    // Where durability is a flush apart (SQLite), committed without it: `runTurn` syncs before any effect,
    // reading the conversation meanwhile. Elsewhere (PostgreSQL) the claim's commit is durable itself.
    let step: ClaimedStep | null | 'claiming' | 'elsewhere' | 'approval';
    try {
      step = await store.writer.run(
        async (trx): Promise<ClaimedStep | null | 'claiming' | 'elsewhere' | 'approval'> => {
          let claimed: TurnRecord | null;
          let clarification = waiting?.clarification ?? null;
          if (folded) {
            const gate = await lockSessionForClaim(trx, { sessionKey, eventId: job.eventId });
            if (gate.approval && gate.self && gate.approval.seq < gate.self.seq) {
              return gate.self.status === 'accepted' ? 'approval' : null;
            }
            if (!gate.locked) return 'claiming';
            const claim = await claimIfFree(trx, { sessionKey, eventId: job.eventId, owner, now });
            if (claim.busy) return 'elsewhere';
            claimed = claim.claimed;
            clarification = gate.clarification;
          } else {
            if (store.shared && !unconfirmed) {
              // One turn of a session at a time, in arrival order, across every process (ADR 0029): the session's
              // lock (never waited for) orders the claims, and no earlier turn of it may be accepted or running.
              if (!(await store.tryLock(trx, `session:${sessionKey}`))) return 'claiming';
              if (await sessionBusyBefore(trx, sessionKey, job.eventId)) return 'elsewhere';
            }
            claimed = await claimTurn(trx, job.eventId, { owner, now });
          }
          if (!claimed && unconfirmed) {
            // The earlier claim did commit if the turn runs under this owner and nothing runs it.
            const turn = await getTurn(trx, job.eventId);
            if (!turn || turn.status !== 'running' || turn.owner !== owner) return null;
            const command = this.commandOf((turn.payload as InboundPayload).text);
            if (command) return { kind: 'command', claimed: turn, command };
            const message = await claimedUserMessage(trx, sessionKey, job.eventId);
            return message
              ? { kind: 'message', claimed: turn, epoch: message.contextEpoch, statusStored: false }
              : { kind: 'lost', claimed: turn };
          }
          if (!claimed) return null;
          const payload = claimed.payload as InboundPayload;
          const command = this.commandOf(payload.text);
          if (command) return { kind: 'command', claimed, command };
          if (clarification && clarification.eventId !== claimed.eventId) {
            // The session's next message answers the question and resumes that turn (DECISIONS §5).
            const resumed = await resumeTurn(trx, clarification.eventId, { from: 'waiting_clarification', owner, now });
            if (resumed) return { kind: 'answer', claimed, resumed, pending: resumed.pending ?? clarification.pending };
          }
          const message = {
            id: userMessageId,
            sessionKey,
            role: 'user' as const,
            content: payload.text,
            toolCalls: null,
            toolCallId: null,
            name: null,
            eventId: claimed.eventId,
            createdAt: now,
          };
          // The turn's first event rides on its claim (delivered once committed; see `execute`).
          const event = { type: 'status', data: running() };
          if (folded) {
            // The message, its count on the live session, the first event and the context window in one statement.
            const input = { message, event, window: CONTEXT_WINDOW };
            let recorded = await recordClaimedMessage(trx, input);
            if (recorded === null) {
              await ensureSession(trx, { key: sessionKey, channel: payload.channel, now });
              recorded = (await recordClaimedMessage(trx, input))!;
            }
            return { kind: 'message', claimed, epoch: recorded.epoch, statusStored: true, window: recorded.window };
          }
          // The live session counts the message (one statement); one deleted meanwhile is revived first.
          let epoch = await touchSessionEpoch(trx, sessionKey, { now, messagesAdded: 1 });
          if (epoch === null) {
            await ensureSession(trx, { key: sessionKey, channel: payload.channel, now });
            epoch = (await touchSessionEpoch(trx, sessionKey, { now, messagesAdded: 1 }))!;
          }
          await appendMessage(trx, { ...message, contextEpoch: epoch });
          await appendTurnEvent(trx, { eventId: claimed.eventId, seq: 1, ...event, now });
          return { kind: 'message', claimed, epoch, statusStored: true };
        },
        { durable: !store.writer.syncsApart },
      );
    } catch (err) {
      this.options.contextCache?.forget(sessionKey);
      if (isStoreUnavailable(err)) this.unconfirmed.add(job.eventId);
      throw err;
    }
    this.unconfirmed.delete(job.eventId);
    if (step === 'approval') return 'blocked';
    if (step === 'claiming' || step === 'elsewhere') {
      this.options.onSessionBusy?.(sessionKey, step);
      return 'blocked';
    }
    if (step?.kind === 'message' && step.statusStored) {
      const text = (step.claimed.payload as InboundPayload).text;
      this.options.contextCache?.append(sessionKey, step.epoch, [
        { role: 'user', content: text, toolCalls: null, toolCallId: null, name: null },
      ]);
    } else if (step) {
      this.options.contextCache?.forget(sessionKey);
    }
    return step;
  }

  /** The chat command a message is, or null: `/new`, `/status`, or a registered one. */
  private commandOf(text: string): { name: string; args: string } | null {
    const match = /^\/([a-z][a-z0-9_-]*)(?:\s+([\s\S]*))?$/i.exec(text.trim());
    if (!match) return null;
    const name = match[1]!.toLowerCase();
    if (name !== 'new' && name !== 'status' && !this.options.commands?.[name]) return null;
    return { name, args: (match[2] ?? '').trim() };
  }

  /**
   * `/new` starts a new context epoch; `/status` reports the session (DECISIONS §10); others are registered.
   * A command has effects of its own, so a store failure once it runs ends it `interrupted` (store_unavailable).
   */
  private async runCommand(turn: TurnRecord, command: { name: string; args: string }): Promise<JobResult> {
    const { store, hub } = this.options;
    // A command writes the session's messages (and may start a new epoch) its own way.
    this.options.contextCache?.forget(turn.sessionKey);
    const startedMs = this.options.clock.now();
    let outcome: AgentOutcome;
    try {
      await hub.open(turn.eventId);
      hub.publish(turn.eventId, 'status', { status: 'running' });
      let response: string;
      const handler = this.options.commands?.[command.name];
      if (command.name !== 'new' && command.name !== 'status' && handler) {
        const payload = turn.payload as InboundPayload;
        try {
          response = await handler(command.args, {
            platform: payload.platform,
            userId: payload.user_id,
            sessionKey: turn.sessionKey,
          });
        } catch (err) {
          response = `/${command.name} failed: ${(err as Error).message}`;
        }
      } else if (command.name === 'new') {
        const epoch = await store.writer.run((trx) => bumpEpoch(trx, turn.sessionKey, this.now()));
        response = `Started a new conversation (context epoch ${epoch}).`;
      } else {
        const session = await getSession(store.db, turn.sessionKey);
        response = session
          ? `Session ${session.key}: ${session.messageCount} messages, context epoch ${session.contextEpoch}, provider ${this.options.agent.provider.type}:${this.options.agent.provider.model}.`
          : `Session ${turn.sessionKey}: no messages yet.`;
      }
      const messageId = this.options.ids.next('msg');
      const now = this.now();
      const session = await getSession(store.db, turn.sessionKey);
      await store.writer.run(async (trx) => {
        await appendMessage(trx, {
          id: messageId,
          sessionKey: turn.sessionKey,
          contextEpoch: session?.contextEpoch ?? turn.contextEpoch,
          role: 'assistant',
          content: response,
          toolCalls: null,
          toolCallId: null,
          name: null,
          eventId: turn.eventId,
          createdAt: now,
        });
        await touchSession(trx, turn.sessionKey, { now, messagesAdded: 1 });
      });
      outcome = { status: 'completed', content: response, messageId, totals: emptyTotals() };
    } catch (err) {
      if (!isStoreUnavailable(err)) {
        hub.release(turn.eventId);
        throw err;
      }
      outcome = storeUnavailableOutcome(emptyTotals());
    }
    return this.settle([turn.eventId], outcome, startedMs, noWrites(), { metrics: false });
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
      window?: ContextEntry[];
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
    for (const id of eventIds) this.running.set(id, controller);
    if (this.stopping !== null) controller.abort(this.stopping);
    try {
      let outcome: AgentOutcome;
      try {
        // A turn claimed just now has no events yet; a resumed one continues its numbering.
        for (const id of eventIds) await hub.open(id, { fresh: options.fresh === true && id === primary });
        for (const id of eventIds) {
          hub.publish(id, 'status', running(), { stored: id === primary && options.statusStored === true });
        }
        const epoch = options.knownEpoch ?? (await getSession(store.db, sessionKey))?.contextEpoch ?? turn.contextEpoch;
        const provider = this.options.agent.provider;
        // From the first model call on, the turn has had effects: a store failure then ends it (ADR 0014).
        const tracked: ModelProvider = {
          type: provider.type,
          model: provider.model,
          complete: async (request) => {
            if (!effects) {
              await options.beforeEffects;
              timings?.mark(primary, 'claimed');
            }
            effects = true;
            return provider.complete(request);
          },
        };
        const ports = this.ports(turn, eventIds, epoch, writes, options.window);
        outcome = await runAgent({ ...this.options.agent, provider: tracked }, ports, controller.signal, resume);
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
      return await this.settle(eventIds, outcome, startedMs, writes);
    } finally {
      for (const id of eventIds) this.running.delete(id);
    }
  }

  /**
   * What the agent loop reads and writes for a turn: the store and the event
   * hub. The reply and usage go to `writes`, stored with the outcome; a step
   * with tools stores its rows (durably, as the tools' progress) before its
   * tools run, so what was spent is on disk before any tool acts and the next
   * model call reads them back.
   */
  private ports(
    turn: TurnRecord,
    eventIds: string[],
    epoch: number,
    writes: TurnWrites,
    claimWindow?: ContextEntry[],
  ): AgentPorts {
    let readWithClaim = claimWindow;
    const { store, hub } = this.options;
    const primary = eventIds[0]!;
    const sessionKey = turn.sessionKey;
    const emit: AgentPorts['emit'] = (type, data) => {
      for (const id of eventIds) hub.publish(id, type, data);
    };
    /** Stores what is staged, with `also` in the same transaction; staged rows stay staged if it fails. */
    const flush = async (also?: (trx: Transaction<Database>) => Promise<void>) => {
      const staged: TurnWrites = { messages: [...writes.messages], usage: [...writes.usage] };
      if (isEmpty(staged) && !also) return;
      const now = this.now();
      try {
        await store.writer.run(async (trx) => {
          await this.fence(trx, eventIds);
          await storeTurnWrites(trx, staged, now);
          await also?.(trx);
        });
      } catch (err) {
        this.options.contextCache?.forget(sessionKey);
        throw err;
      }
      this.options.contextCache?.append(sessionKey, epoch, staged.messages);
      writes.messages.splice(0, staged.messages.length);
      writes.usage.splice(0, staged.usage.length);
    };
    const stage = (record: Omit<MessageRecord, 'id' | 'sessionKey' | 'contextEpoch' | 'eventId' | 'createdAt'>) => {
      const id = this.options.ids.next('msg');
      writes.messages.push({
        ...record,
        id,
        sessionKey,
        contextEpoch: epoch,
        eventId: primary,
        createdAt: this.now(),
      });
      return id;
    };
    return {
      sessionKey,
      eventId: primary,
      // The request's own earlier messages (ADR 0015) come before the session's history.
      loadContext: async () => {
        await flush(); // tool results of the step before
        const cache = this.options.contextCache;
        let window = readWithClaim ?? cache?.get(sessionKey, epoch);
        readWithClaim = undefined; // later steps read what they stored
        if (!window) {
          window = await contextChat(store.db, sessionKey, epoch, CONTEXT_WINDOW);
          cache?.set(sessionKey, epoch, window);
        }
        return [...requestContext(turn), ...toChatMessages(window, cache !== undefined)];
      },
      appendAssistant: async (content, toolCalls) => {
        const id = stage({ role: 'assistant', content, toolCalls, toolCallId: null, name: null });
        if (toolCalls) await flush(); // stored before its tools run
        return id;
      },
      appendToolResult: async (call, content) => {
        stage({ role: 'tool', content, toolCalls: null, toolCallId: call.id, name: call.name });
        await flush();
      },
      recordUsage: (model, usage, cost) => {
        writes.usage.push({
          id: this.options.ids.next('use'),
          eventId: primary,
          sessionKey,
          channel: (turn.payload as InboundPayload).channel,
          model,
          inputTokens: usage.input_tokens,
          outputTokens: usage.output_tokens,
          costNanoUsd: cost,
          now: this.now(),
        });
        return Promise.resolve();
      },
      budgetExceeded: async () => {
        const cap = this.options.dailyBudgetUsd;
        if (cap === null) return false;
        const dayStart = new Date(this.options.clock.now());
        dayStart.setUTCHours(0, 0, 0, 0);
        const spent = await spentNanoUsdSince(store.db, dayStart.toISOString());
        const staged = writes.usage.reduce((sum, u) => sum + u.costNanoUsd, 0);
        return spent + staged >= cap * 1e9;
      },
      emit,
      setCurrentTool: async (name) => {
        const now = this.now();
        await flush(async (trx) => {
          for (const id of eventIds) await updateTurnProgress(trx, id, { currentTool: name, now });
        });
      },
    };
  }

  /**
   * Stores a turn's outcome and tells listeners. When the store refuses it,
   * the outcome is not lost: a `finish` job carrying it (and the reply and
   * usage it stores) takes the head of the lane and writes it once the store
   * is back (the turn's event numbering stays open until then).
   */
  private async settle(
    eventIds: string[],
    outcome: AgentOutcome,
    startedMs: number,
    writes: TurnWrites,
    options: { metrics?: boolean } = {},
  ): Promise<JobResult> {
    let records: Array<TurnRecord | null>;
    try {
      records = await this.finish(eventIds, outcome, writes);
      for (const message of writes.messages) {
        this.options.contextCache?.append(message.sessionKey, message.contextEpoch, [message]);
      }
    } catch (err) {
      for (const message of writes.messages) this.options.contextCache?.forget(message.sessionKey);
      if (err instanceof TurnTakenOverError) {
        // Another gateway adopted the turn while this one was silent: its outcome there stands, this one's is dropped.
        this.options.logger.warn(
          { source: 'turns', event_id: eventIds[0], owner: this.options.owner },
          'turn taken over by another gateway; this outcome is not stored',
        );
        for (const id of eventIds) this.options.hub.release(id);
        return 'done';
      }
      if (!isStoreUnavailable(err)) {
        for (const id of eventIds) this.options.hub.release(id);
        throw err;
      }
      this.options.logger.warn(
        { source: 'turns', event_id: eventIds[0], err: (err as Error).message },
        'store unavailable when ending the turn; its outcome is stored once it is back',
      );
      return { retry: { kind: 'finish', eventId: eventIds[0]!, eventIds, outcome, startedMs, writes } };
    }
    for (const id of eventIds) this.options.hub.release(id);
    if (options.metrics !== false) this.options.onOutcome?.(outcome.status, this.options.clock.now() - startedMs);
    if (this.options.store.shared && this.options.onSessionFree) {
      const sessionKey = records.find((record) => record !== null)?.sessionKey;
      if (sessionKey) this.options.onSessionFree(sessionKey);
    }
    return 'done';
  }

  /**
   * Where several processes share the database, a turn's writes first check
   * that this process still holds the turn (`holdsTurns`, rows locked to the
   * commit); otherwise the transaction is abandoned with TurnTakenOverError.
   */
  private async fence(trx: Transaction<Database>, eventIds: readonly string[]): Promise<void> {
    if (!this.options.store.shared) return;
    if (!(await holdsTurns(trx, eventIds, this.options.owner))) throw new TurnTakenOverError(eventIds[0]!);
  }

  /** A `finish` job: the outcome the store refused, written now (first terminal status wins). */
  private async finishAgain(job: Extract<TurnJob, { kind: 'finish' }>): Promise<JobResult> {
    for (const id of job.eventIds) await this.options.hub.open(id);
    const result = await this.settle(job.eventIds, job.outcome, job.startedMs, job.writes ?? noWrites());
    return typeof result === 'object' ? { retry: job } : result;
  }

  /**
   * Writes the outcome in one durable commit — the staged reply and usage,
   * the ledger's end (or pause), the idempotency TTL and the turn's final
   * event — then hands the ledger record to waiters and delivers the final
   * event (so whoever hears of it finds it stored). Repeatable: a commit
   * whose answer was lost writes nothing twice.
   */
  private async finish(
    eventIds: string[],
    outcome: AgentOutcome,
    writes: TurnWrites,
  ): Promise<Array<TurnRecord | null>> {
    const { store, hub, logger, waiters, timings } = this.options;
    const now = this.now();
    const primary = eventIds[0]!;
    /** The final event of each turn: stored in the outcome's transaction, delivered after it. */
    const finals = new Map<string, { type: TurnEventType; data: Record<string, unknown> }>();
    let records: Array<TurnRecord | null>;
    if (outcome.status === 'waiting_approval' || outcome.status === 'waiting_clarification') {
      const pending = outcome.pending;
      for (const id of eventIds) {
        const message = messageView(id, outcome.status, outcome.response, null, outcome.totals);
        finals.set(id, { type: 'status', data: { status: outcome.status, message } });
      }
      records = await store.writer.run(async (trx) => {
        await this.fence(trx, eventIds);
        await storeTurnWrites(trx, writes, now);
        const paused: Array<TurnRecord | null> = [];
        for (const id of eventIds) {
          paused.push(
            await pauseTurnReturning(trx, id, {
              status: outcome.status,
              pending,
              response: outcome.response,
              currentTool: pending.calls[0]?.name ?? null,
              now,
            }),
          );
          const final = finals.get(id)!;
          await appendTurnEventOnce(trx, { eventId: id, seq: hub.nextSeq(id), ...final, now });
        }
        return paused;
      });
    } else {
      let status: 'completed' | 'incomplete' | 'failed' | 'interrupted';
      let content: string | null = null;
      let messageId: string | null = null;
      let reason: string | null = null;
      let error: { code: string; message: string } | null = null;
      switch (outcome.status) {
        case 'completed':
          status = 'completed';
          content = outcome.content;
          messageId = outcome.messageId;
          reason = 'completed';
          break;
        case 'incomplete':
          status = 'incomplete';
          content = outcome.content;
          messageId = outcome.messageId;
          reason = outcome.reason;
          break;
        case 'interrupted':
          status = 'interrupted';
          reason = outcome.reason;
          break;
        case 'failed': {
          status = 'failed';
          const isProvider = outcome.error.name === 'ProviderError';
          reason = isProvider ? 'provider_error' : 'internal_error';
          // The client gets the provider's name and what went wrong (`openai: HTTP 500`), never the upstream's text.
          error = isProvider
            ? { code: 'UPSTREAM_ERROR', message: `model provider failed: ${outcome.error.message}` }
            : { code: 'INTERNAL_ERROR', message: 'internal error' };
          if (isProvider) {
            // The cause in a word (ECONNREFUSED, HTTP 401, timeout) and the upstream's text, secrets redacted: log only.
            const text = providerLogText(outcome.error);
            const fields = { source: 'turns', event_id: primary, cause: providerCause(outcome.error), err: text };
            logger.error(fields, `turn failed: ${text}`);
          } else logger.error({ source: 'turns', event_id: primary, err: outcome.error }, 'turn failed');
          break;
        }
      }
      for (const id of eventIds) {
        // A stream ends with `done` (the Message) or `error` (the error object) — DECISIONS §5.
        finals.set(
          id,
          error
            ? { type: 'error', data: { error: { ...error, details: { event_id: id } }, status } }
            : {
                type: 'done',
                data: { status, message: messageView(id, status, content, messageId, outcome.totals) },
              },
        );
      }
      records = await store.writer.run(async (trx) => {
        if (store.driver === 'postgres' && store.shared && eventIds.length === 1) {
          // The fence, the outcome and everything it commits in one statement (ADR 0032).
          const final = finals.get(primary)!;
          const message = messageView(primary, status, content, messageId, outcome.totals);
          const ended = await finishHeldTurn(trx, {
            eventId: primary,
            owner: this.options.owner,
            status,
            response: content,
            terminationReason: reason,
            result: error ? { error, message } : { message },
            messages: writes.messages,
            usage: writes.usage,
            idempotencyExpiresAt: this.options.idempotency.settledExpiry(),
            event: { seq: hub.nextSeq(primary), ...final },
            now,
          });
          if (!ended) throw new TurnTakenOverError(primary);
          return [ended];
        }
        await this.fence(trx, eventIds);
        await storeTurnWrites(trx, writes, now);
        const ended: Array<TurnRecord | null> = [];
        for (const id of eventIds) {
          const message = messageView(id, status, content, messageId, outcome.totals);
          ended.push(
            await finishTurnReturning(trx, id, {
              status,
              response: content,
              terminationReason: reason,
              result: error ? { error, message } : { message },
              now,
            }),
          );
          await this.options.idempotency.settle(trx, id);
          const final = finals.get(id)!;
          await appendTurnEventOnce(trx, { eventId: id, seq: hub.nextSeq(id), ...final, now });
        }
        return ended;
      });
    }
    timings?.mark(primary, 'stored');
    for (const record of records) if (record) waiters?.settled(record);
    for (const id of eventIds) {
      const final = finals.get(id)!;
      hub.publish(id, final.type, final.data, { stored: true });
    }
    return records;
  }
}

/** The `status` event of a turn that starts or resumes running. */
function running(): Record<string, unknown> {
  return { status: 'running' };
}
