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
import type { ChatMessage, ToolCall } from '../runtime/index.js';
import type { Idempotency } from '../idempotency/index.js';
import {
  appendMessage,
  bumpEpoch,
  contextMessages,
  ensureSession,
  getSession,
  touchSession,
  type MessageRecord,
} from '../sessions/index.js';
import type { Store } from '../store/index.js';
import { recordUsage, spentNanoUsdSince } from '../usage/index.js';
import type { TurnEventHub } from './turn-events.js';
import type { InboundPayload } from './inbound.js';
import type { JobResult, TurnJob } from './turn-queue.js';
import {
  claimTurn,
  finishTurn,
  getTurn,
  pauseTurn,
  resumeTurn,
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

/** Messages of context sent to the model (the newest of the current epoch). */
const CONTEXT_LIMIT = 100;

export interface TurnRunnerOptions {
  store: Store;
  hub: TurnEventHub;
  /** Starts the TTL of a finished turn's idempotency records, in its ledger transaction. */
  idempotency: Pick<Idempotency, 'settle'>;
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

function toChatMessages(rows: MessageRecord[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const row of rows) {
    if (row.role === 'user') out.push({ role: 'user', content: row.content ?? '' });
    else if (row.role === 'assistant')
      out.push({
        role: 'assistant',
        content: row.content,
        ...(row.toolCalls ? { tool_calls: row.toolCalls as ToolCall[] } : {}),
      });
    else if (row.role === 'tool')
      out.push({ role: 'tool', content: row.content ?? '', tool_call_id: row.toolCallId ?? '', name: row.name ?? '' });
  }
  // A context window cut between a tool call and its results is not valid for the model: drop leading results.
  while (out[0]?.role === 'tool') out.shift();
  return out;
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

  /** Runs one queue job; never throws for turn failures (they end in the ledger). */
  async run(sessionKey: string, job: TurnJob): Promise<JobResult> {
    const { store } = this.options;
    if (job.kind === 'resume') {
      // The approve/deny route already moved the turn waiting_approval → running.
      const turn = await getTurn(store.db, job.eventId);
      if (!turn || turn.status !== 'running') return 'done';
      await this.execute(turn, [job.eventId], { pending: job.pending, resolution: { type: job.resolution } });
      return 'done';
    }

    const waiting = await waitingTurnsOfSession(store.db, sessionKey);
    if (waiting.approval) {
      // A turn awaiting approval blocks the later turns of its session (ADR 0005).
      const turn = await getTurn(store.db, job.eventId);
      if (!turn || turn.status !== 'accepted') return 'done';
      if (waiting.approval.seq < turn.seq) return 'blocked';
    }
    const now = this.now();
    const userMessageId = this.options.ids.next('msg');
    // Claim, and store the user's message, in one transaction.
    const step = await store.writer.run(async (trx) => {
      const claimed = await claimTurn(trx, job.eventId, { owner: this.options.owner, now });
      if (!claimed) return null;
      const payload = claimed.payload as InboundPayload;
      const command = this.commandOf(payload.text);
      if (command) return { kind: 'command', claimed, command } as const;
      const clarification = waiting.clarification;
      if (clarification && clarification.eventId !== claimed.eventId) {
        // The session's next message answers the question and resumes that turn (DECISIONS §5).
        const resumed = await resumeTurn(trx, clarification.eventId, {
          from: 'waiting_clarification',
          owner: this.options.owner,
          now,
        });
        if (resumed) return { kind: 'answer', claimed, resumed, pending: clarification.pending } as const;
      }
      const session = await ensureSession(trx, { key: sessionKey, channel: payload.channel, now });
      await appendMessage(trx, {
        id: userMessageId,
        sessionKey,
        contextEpoch: session.contextEpoch,
        role: 'user',
        content: payload.text,
        toolCalls: null,
        toolCallId: null,
        name: null,
        eventId: claimed.eventId,
        createdAt: now,
      });
      await touchSession(trx, sessionKey, { now, messagesAdded: 1 });
      return { kind: 'message', claimed, epoch: session.contextEpoch } as const;
    });
    if (!step) return 'done';
    if (step.kind === 'command') {
      await this.runCommand(step.claimed, step.command);
    } else if (step.kind === 'answer') {
      const text = (step.claimed.payload as InboundPayload).text;
      await this.execute(step.claimed, [step.claimed.eventId, step.resumed.eventId], {
        pending: (step.resumed.pending ?? step.pending) as PendingState,
        resolution: { type: 'answer', text },
      });
    } else {
      await this.execute(step.claimed, [step.claimed.eventId], undefined, step.epoch);
    }
    return 'done';
  }

  /** The chat command a message is, or null: `/new`, `/status`, or a registered one. */
  private commandOf(text: string): { name: string; args: string } | null {
    const match = /^\/([a-z][a-z0-9_-]*)(?:\s+([\s\S]*))?$/i.exec(text.trim());
    if (!match) return null;
    const name = match[1]!.toLowerCase();
    if (name !== 'new' && name !== 'status' && !this.options.commands?.[name]) return null;
    return { name, args: (match[2] ?? '').trim() };
  }

  /** `/new` starts a new context epoch; `/status` reports the session (DECISIONS §10); others are registered. */
  private async runCommand(turn: TurnRecord, command: { name: string; args: string }): Promise<void> {
    const { store, hub } = this.options;
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
    await this.finish([turn.eventId], { status: 'completed', content: response, messageId, totals: emptyTotals() });
  }

  /**
   * Runs the agent for a claimed (or resumed) turn. `eventIds[0]` carries the
   * stream; a clarification answer also finishes the turn it resumed.
   */
  private async execute(
    turn: TurnRecord,
    eventIds: string[],
    resume?: { pending: PendingState; resolution: Resolution },
    knownEpoch?: number,
  ): Promise<void> {
    const { store, hub, logger } = this.options;
    const primary = eventIds[0]!;
    const sessionKey = turn.sessionKey;
    const controller = new AbortController();
    const startedMs = this.options.clock.now();
    for (const id of eventIds) this.running.set(id, controller);
    if (this.stopping !== null) controller.abort(this.stopping);
    try {
      // A turn claimed just now has no events yet; a resumed one continues its numbering.
      for (const id of eventIds) await hub.open(id, { fresh: !resume && id === primary });
      for (const id of eventIds) hub.publish(id, 'status', { status: 'running' });
      const epoch = knownEpoch ?? (await getSession(store.db, sessionKey))?.contextEpoch ?? turn.contextEpoch;
      const emit: AgentPorts['emit'] = (type, data) => {
        for (const id of eventIds) hub.publish(id, type, data);
      };
      const append = (record: Omit<MessageRecord, 'id' | 'sessionKey' | 'contextEpoch' | 'eventId' | 'createdAt'>) => {
        const id = this.options.ids.next('msg');
        const now = this.now();
        return store.writer
          .run(async (trx) => {
            await appendMessage(trx, {
              ...record,
              id,
              sessionKey,
              contextEpoch: epoch,
              eventId: primary,
              createdAt: now,
            });
            await touchSession(trx, sessionKey, { now, messagesAdded: 1 });
          })
          .then(() => id);
      };
      const ports: AgentPorts = {
        sessionKey,
        eventId: primary,
        loadContext: async () => toChatMessages(await contextMessages(store.db, sessionKey, epoch, CONTEXT_LIMIT)),
        appendAssistant: (content, toolCalls) =>
          append({ role: 'assistant', content, toolCalls, toolCallId: null, name: null }),
        appendToolResult: async (call, content) => {
          await append({ role: 'tool', content, toolCalls: null, toolCallId: call.id, name: call.name });
        },
        recordUsage: async (model, usage, cost) => {
          const now = this.now();
          await store.writer.run((trx) =>
            recordUsage(trx, {
              id: this.options.ids.next('use'),
              eventId: primary,
              sessionKey,
              channel: (turn.payload as InboundPayload).channel,
              model,
              inputTokens: usage.input_tokens,
              outputTokens: usage.output_tokens,
              costNanoUsd: cost,
              now,
            }),
          );
        },
        budgetExceeded: async () => {
          const cap = this.options.dailyBudgetUsd;
          if (cap === null) return false;
          const dayStart = new Date(this.options.clock.now());
          dayStart.setUTCHours(0, 0, 0, 0);
          const spent = await spentNanoUsdSince(store.db, dayStart.toISOString());
          return spent >= cap * 1e9;
        },
        emit,
        setCurrentTool: async (name) => {
          const now = this.now();
          for (const id of eventIds) {
            await store.writer.run((trx) => updateTurnProgress(trx, id, { currentTool: name, now }));
          }
        },
      };
      let outcome: AgentOutcome;
      try {
        outcome = await runAgent(this.options.agent, ports, controller.signal, resume);
      } catch (err) {
        logger.error({ source: 'turns', event_id: primary, err }, 'turn crashed');
        outcome = { status: 'failed', error: err as Error, totals: resume?.pending.totals ?? emptyTotals() };
      }
      await this.finish(eventIds, outcome);
      this.options.onOutcome?.(outcome.status, this.options.clock.now() - startedMs);
    } finally {
      for (const id of eventIds) {
        this.running.delete(id);
        hub.release(id);
      }
    }
  }

  /** Writes the outcome to the ledger, then tells listeners (so waiters find it stored). */
  private async finish(eventIds: string[], outcome: AgentOutcome): Promise<void> {
    const { store, hub, logger } = this.options;
    const now = this.now();
    const primary = eventIds[0]!;
    if (outcome.status === 'waiting_approval' || outcome.status === 'waiting_clarification') {
      const pending = outcome.pending;
      await store.writer.run(async (trx) => {
        for (const id of eventIds)
          await pauseTurn(trx, id, {
            status: outcome.status,
            pending,
            response: outcome.response,
            currentTool: pending.calls[0]?.name ?? null,
            now,
          });
      });
      for (const id of eventIds) {
        const message = messageView(id, outcome.status, outcome.response, null, outcome.totals);
        hub.publish(id, 'status', { status: outcome.status, message });
      }
      return;
    }
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
        error = isProvider
          ? { code: 'UPSTREAM_ERROR', message: `model provider failed: ${outcome.error.message}` }
          : { code: 'INTERNAL_ERROR', message: 'internal error' };
        if (!isProvider) logger.error({ source: 'turns', event_id: primary, err: outcome.error }, 'turn failed');
        break;
      }
    }
    await store.writer.run(async (trx) => {
      for (const id of eventIds) {
        const message = messageView(id, status, content, messageId, outcome.totals);
        await finishTurn(trx, id, {
          status,
          response: content,
          terminationReason: reason,
          result: error ? { error, message } : { message },
          now,
        });
        await this.options.idempotency.settle(trx, id);
      }
    });
    for (const id of eventIds) {
      // A stream ends with `done` (the Message) or `error` (the error object) — DECISIONS §5.
      if (error) hub.publish(id, 'error', { error: { ...error, details: { event_id: id } }, status });
      else hub.publish(id, 'done', { status, message: messageView(id, status, content, messageId, outcome.totals) });
    }
  }
}
