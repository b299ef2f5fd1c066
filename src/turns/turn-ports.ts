/**
 * What the agent loop is handed for one turn (`AgentPorts`): the conversation as model messages (the request's
 * own context, then the session's window of the current epoch), where its reply, tool calls, usage and progress
 * go, the daily budget and the turn's events. The reply and usage are staged (`TurnWrites`) and stored with the
 * outcome; a step with tools stores its rows, behind the fence, before its tools run (ADR 0026).
 */
import type { Transaction } from 'kysely';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { AgentPorts, ChatMessage, ToolCall } from '../runtime/index.js';
import {
  contextWithin,
  DEFAULT_CONTEXT_BUDGET,
  fitContext,
  type ContextBudget,
  type ContextEntry,
  type MessageRecord,
  type SizedEntry,
} from '../sessions/index.js';
import type { Database, Store } from '../store/index.js';
import { spentNanoUsdSince } from '../usage/index.js';
import type { ContextCache } from './context-cache.js';
import type { InboundPayload } from './inbound.js';
import type { TurnEventHub } from './turn-events.js';
import type { TurnPath } from './turn-path.js';
import { isEmpty, storeTurnWrites, type TurnWrites } from './turn-writes.js';
import { updateTurnProgress, type TurnRecord } from './turns.repo.js';

/** A daily spend cap besides the gateway's: an agent's or a principal's (DECISIONS §17-18), USD per UTC day. */
export interface SpendCap {
  usd: number;
  /** Counts the spend of this agent's sessions. */
  agent?: string;
  /** Counts the spend of this principal's sessions. */
  principal?: string;
}

/** What a turn's ports use (the runner's options: `dailyBudgetUsd` is read at each check, as configured then). */
export interface TurnPortsDeps {
  store: Store;
  path: TurnPath;
  hub: TurnEventHub;
  contextCache?: ContextCache;
  clock: Clock;
  ids: IdGenerator;
  /** This process's instance id (ledger `owner`): the fence's. */
  owner: string;
  /** USD per UTC day, or null for no cap. */
  dailyBudgetUsd: number | null;
  /** The model's context as a token budget (`limits.payloads`); default: its defaults. */
  contextBudget?: ContextBudget;
}

/**
 * What the agent loop reads and writes for a turn: the store and the event
 * hub. The reply and usage go to `writes`, stored with the outcome; a step
 * with tools stores its rows (durably, as the tools' progress) before its
 * tools run, so what was spent is on disk before any tool acts and the next
 * model call reads them back. `claimWindow`: the context window the claim
 * read, which the first model call uses instead of reading it.
 */
export function turnPorts(
  deps: TurnPortsDeps,
  turn: TurnRecord,
  eventIds: string[],
  epoch: number,
  writes: TurnWrites,
  claimWindow?: SizedEntry[],
  caps: readonly SpendCap[] = [],
  owners: { memoryOwner?: string; principal?: string } = {},
): AgentPorts {
  let readWithClaim = claimWindow;
  const { store, hub } = deps;
  const primary = eventIds[0]!;
  const sessionKey = turn.sessionKey;
  const now = () => isoTime(deps.clock.now());
  const emit: AgentPorts['emit'] = (type, data) => {
    for (const id of eventIds) hub.publish(id, type, data);
  };
  /** Stores what is staged, with `also` in the same transaction; staged rows stay staged if it fails. */
  const flush = async (also?: (trx: Transaction<Database>) => Promise<void>) => {
    const staged: TurnWrites = { messages: [...writes.messages], usage: [...writes.usage] };
    if (isEmpty(staged) && !also) return;
    const at = now();
    try {
      await store.writer.run(async (trx) => {
        await deps.path.fence(trx, eventIds, deps.owner);
        await storeTurnWrites(trx, staged, at);
        await also?.(trx);
      });
    } catch (err) {
      deps.contextCache?.forget(sessionKey);
      throw err;
    }
    deps.contextCache?.append(sessionKey, epoch, staged.messages);
    writes.messages.splice(0, staged.messages.length);
    writes.usage.splice(0, staged.usage.length);
  };
  const stage = (record: Omit<MessageRecord, 'id' | 'sessionKey' | 'contextEpoch' | 'eventId' | 'createdAt'>) => {
    const id = deps.ids.next('msg');
    writes.messages.push({
      ...record,
      id,
      sessionKey,
      contextEpoch: epoch,
      eventId: primary,
      createdAt: now(),
    });
    return id;
  };
  return {
    ...owners,
    sessionKey,
    eventId: primary,
    // The request's own earlier messages (ADR 0015) come before the session's history.
    loadContext: async () => {
      await flush(); // tool results of the step before
      const cache = deps.contextCache;
      let window = readWithClaim ?? cache?.get(sessionKey, epoch);
      readWithClaim = undefined; // later steps read what they stored
      const budget = deps.contextBudget ?? DEFAULT_CONTEXT_BUDGET;
      if (!window) {
        window = await contextWithin(store.db, sessionKey, epoch, budget);
        cache?.set(sessionKey, epoch, window);
      }
      return [...requestContext(turn), ...toChatMessages(fitContext(window, budget), cache !== undefined)];
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
        id: deps.ids.next('use'),
        eventId: primary,
        sessionKey,
        channel: (turn.payload as InboundPayload).channel,
        model,
        inputTokens: usage.input_tokens,
        outputTokens: usage.output_tokens,
        costNanoUsd: cost,
        now: now(),
      });
      return Promise.resolve();
    },
    budgetExceeded: async () => {
      const all: SpendCap[] = deps.dailyBudgetUsd === null ? [] : [{ usd: deps.dailyBudgetUsd }];
      if (all.length + caps.length === 0) return false;
      const dayStart = new Date(deps.clock.now());
      dayStart.setUTCHours(0, 0, 0, 0);
      const since = dayStart.toISOString();
      const staged = writes.usage.reduce((sum, u) => sum + u.costNanoUsd, 0);
      // The gateway's cap, then the agent's and the principal's: any one spent stops the turn.
      for (const cap of [...all, ...caps]) {
        const of = {
          ...(cap.agent ? { agent: cap.agent } : {}),
          ...(cap.principal ? { principal: cap.principal } : {}),
        };
        if ((await spentNanoUsdSince(store.db, since, of)) + staged >= cap.usd * 1e9) return true;
      }
      return false;
    },
    emit,
    setCurrentTool: async (name) => {
      const at = now();
      await flush(async (trx) => {
        for (const id of eventIds) await updateTurnProgress(trx, id, { currentTool: name, now: at });
      });
    },
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
