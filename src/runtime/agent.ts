import { parseJsonBounded } from '../lib/json.js';
import { costNanoUsd, priceFor } from './providers/pricing.js';
import {
  ProviderError,
  type ChatMessage,
  type ModelProvider,
  type ToolCall,
  type Usage,
} from './providers/provider.js';
import { ASK_USER_TOOL, type ToolSet } from './tools.js';

/** A tool call as reported in the Message (`tool_calls`) and the ledger. */
export interface ToolCallReport {
  id: string;
  name: string;
  arguments: string;
  result?: unknown;
  status?: 'ok' | 'error' | 'denied' | 'pending';
}

/** Running totals of a turn (carried across pauses). */
export interface TurnTotals {
  inputTokens: number;
  outputTokens: number;
  costNanoUsd: number;
  toolCalls: ToolCallReport[];
  /** Model calls that asked for tools (bounded by `max_tool_iterations`). */
  iterations: number;
}

/** What a paused turn needs to resume (stored in the ledger's `pending`). */
export interface PendingState {
  kind: 'approval' | 'clarification';
  /** Unresolved calls of the last assistant message; `calls[0]` is the one paused on. */
  calls: ToolCall[];
  totals: TurnTotals;
}

/** How a paused turn is resumed. */
export type Resolution = { type: 'approve' } | { type: 'deny' } | { type: 'answer'; text: string };

/** Where the loop reads and writes; the turn runner implements it over the store and the event hub. */
export interface AgentPorts {
  /** The turn's session and event, handed to tools. */
  readonly sessionKey: string;
  readonly eventId: string;
  /** Whose memory the turn's tools use (`ToolContext.memoryOwner`). */
  readonly memoryOwner?: string;
  /** The principal owning the session (`ToolContext.principal`). */
  readonly principal?: string;
  /** The conversation so far (current context epoch), oldest first; ends with the new user message or tool results. */
  loadContext(): Promise<ChatMessage[]>;
  /** Stores an assistant message; returns its id. */
  appendAssistant(content: string | null, toolCalls: ToolCall[] | null): Promise<string>;
  /** Stores a tool result. */
  appendToolResult(call: ToolCall, content: string): Promise<void>;
  /** Records one model call's usage and cost. */
  recordUsage(model: string, usage: Usage, costNanoUsd: number): Promise<void>;
  /** True when `budget.daily_usd` is spent (checked before every model call). */
  budgetExceeded(): Promise<boolean>;
  /** Streams an event of the turn (`delta`, `tool_call`, `tool_result`, `status`). */
  emit(type: 'delta' | 'tool_call' | 'tool_result' | 'status', data: Record<string, unknown>): void;
  /** Notes the tool in progress in the ledger. */
  setCurrentTool(name: string | null): Promise<void>;
}

export interface AgentOptions {
  provider: ModelProvider;
  tools: ToolSet;
  systemPrompt: string | null;
  /**
   * Extra system context computed per model call (e.g. the active skills'
   * names and descriptions). Capabilities register these in the composition
   * root; each returns null when it has nothing to add.
   */
  systemContext?: ReadonlyArray<() => Promise<string | null>>;
  maxToolIterations: number;
  approvalRequired: ReadonlySet<string>;
  pricing: Record<string, { input_per_mtok: number; output_per_mtok: number }>;
  /**
   * A tool result larger than this many bytes of UTF-8 is cut, with a note to the model, before it is stored,
   * streamed or sent (`limits.payloads.max_tool_result_bytes`); absent: its default.
   */
  maxToolResultBytes?: number;
  /**
   * A reply of the model longer than this many bytes of UTF-8 is cut there and the turn ends `incomplete`
   * (`max_reply_bytes`): `limits.payloads.max_reply_bytes`; absent: no cap.
   */
  maxReplyBytes?: number;
}

/** `limits.payloads.max_tool_result_bytes`'s default. */
export const DEFAULT_MAX_TOOL_RESULT_BYTES = 262_144;

export type AgentOutcome =
  | { status: 'completed'; content: string; messageId: string; totals: TurnTotals }
  | {
      status: 'incomplete';
      reason: 'max_tool_iterations' | 'budget_exceeded' | 'max_reply_bytes';
      content: string | null;
      messageId: string | null;
      totals: TurnTotals;
    }
  | {
      status: 'waiting_approval' | 'waiting_clarification';
      pending: PendingState;
      response: string | null;
      totals: TurnTotals;
    }
  | { status: 'failed'; error: Error; totals: TurnTotals }
  | { status: 'interrupted'; reason: string; totals: TurnTotals };

/** Fresh totals for a new turn. */
export function emptyTotals(): TurnTotals {
  return { inputTokens: 0, outputTokens: 0, costNanoUsd: 0, toolCalls: [], iterations: 0 };
}

/**
 * A tool call's arguments: a JSON object within the bounds of every request
 * body (ADR 0013) — the model's output is shaped by whatever it read — or
 * null.
 */
function parseArguments(text: string): Record<string, unknown> | null {
  const parsed = parseJsonBounded(text || '{}');
  if (!parsed.ok) return null;
  const value = parsed.value;
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function resultText(result: unknown): string {
  return typeof result === 'string' ? result : (JSON.stringify(result ?? null) ?? 'null');
}

/**
 * A tool's result held to `maxBytes` (ADR 0043): as it is when its text fits; otherwise its text cut at a
 * character boundary, followed by a note telling the model how much there was — the note included in the
 * cap. What the model, the history, the turn's events and its `tool_calls` report get is this one value.
 */
export function capToolResult(result: unknown, maxBytes: number): { result: unknown; text: string } {
  const text = resultText(result);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return { result, text };
  const note = `\n[…cut: the tool's result was ${bytes} bytes; only the first part is shown (limits.payloads.max_tool_result_bytes).]`;
  const keep = Math.max(0, maxBytes - Buffer.byteLength(note));
  // Copied out (a slice would keep the whole result alive), never cut inside a character.
  const buffer = Buffer.from(text.slice(0, keep), 'utf8');
  let end = Math.min(keep, buffer.length);
  // Back up to the first byte of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && end < buffer.length && (buffer[end]! & 0xc0) === 0x80) end--;
  const head = buffer.subarray(0, end).toString('utf8');
  const cut = head + note;
  return { result: cut, text: cut };
}

/**
 * The agent loop: one model call per step, tools run between steps, until
 * the model answers without tools (completed), the tool budget runs out
 * (incomplete), a tool needs approval or the user is asked (paused), the
 * provider fails (failed) or the turn is aborted (interrupted). No hidden
 * extra model calls (DECISIONS §5).
 */
export async function runAgent(
  options: AgentOptions,
  ports: AgentPorts,
  signal: AbortSignal,
  resume?: { pending: PendingState; resolution: Resolution },
): Promise<AgentOutcome> {
  const totals = resume ? structuredClone(resume.pending.totals) : emptyTotals();
  const interrupted = (): AgentOutcome => ({
    status: 'interrupted',
    reason: String(signal.reason ?? 'interrupted'),
    totals,
  });

  /** Runs (or resolves) calls in order; returns a pause outcome or null when all are done. */
  const processCalls = async (calls: ToolCall[], first?: Resolution): Promise<AgentOutcome | null> => {
    for (let i = 0; i < calls.length; i++) {
      if (signal.aborted) return interrupted();
      const call = calls[i]!;
      const report = totals.toolCalls.find((r) => r.id === call.id);
      const resolution = i === 0 ? first : undefined;
      let result: unknown;
      let status: ToolCallReport['status'] = 'ok';
      if (resolution?.type === 'answer') {
        result = resolution.text;
      } else if (resolution?.type === 'deny') {
        result = { error: 'the administrator denied this tool call' };
        status = 'denied';
      } else if (call.name === ASK_USER_TOOL.name) {
        const args = parseArguments(call.arguments);
        const question = typeof args?.question === 'string' ? args.question : 'Could you clarify?';
        if (report) report.status = 'pending';
        return {
          status: 'waiting_clarification',
          pending: { kind: 'clarification', calls: calls.slice(i), totals },
          response: question,
          totals,
        };
      } else if (
        resolution?.type !== 'approve' &&
        (options.approvalRequired.has(call.name) || options.tools.get(call.name)?.needsApproval?.() === true)
      ) {
        if (report) report.status = 'pending';
        return {
          status: 'waiting_approval',
          pending: { kind: 'approval', calls: calls.slice(i), totals },
          response: null,
          totals,
        };
      } else {
        const tool = options.tools.get(call.name);
        const args = parseArguments(call.arguments);
        await ports.setCurrentTool(call.name);
        if (!tool) {
          result = { error: `unknown tool ${call.name}` };
          status = 'error';
        } else if (!args) {
          result = { error: 'arguments must be a JSON object' };
          status = 'error';
        } else {
          try {
            const owner = {
              ...(ports.memoryOwner !== undefined ? { memoryOwner: ports.memoryOwner } : {}),
              ...(ports.principal !== undefined ? { principal: ports.principal } : {}),
            };
            result = await tool.run(args, { sessionKey: ports.sessionKey, eventId: ports.eventId, signal, ...owner });
          } catch (err) {
            result = { error: (err as Error).message };
            status = 'error';
          }
        }
        await ports.setCurrentTool(null);
      }
      const capped = capToolResult(result, options.maxToolResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES);
      if (report) {
        report.result = capped.result;
        report.status = status;
      }
      await ports.appendToolResult(call, capped.text);
      ports.emit('tool_result', { id: call.id, name: call.name, result: capped.result });
    }
    return null;
  };

  if (resume) {
    const paused = await processCalls(resume.pending.calls, resume.resolution);
    if (paused) return paused;
  }

  for (;;) {
    if (signal.aborted) return interrupted();
    if (await ports.budgetExceeded()) {
      return { status: 'incomplete', reason: 'budget_exceeded', content: null, messageId: null, totals };
    }
    const history = await ports.loadContext();
    const system = [options.systemPrompt];
    for (const extra of options.systemContext ?? []) system.push(await extra());
    const systemText = system.filter((part): part is string => !!part).join('\n\n');
    const messages: ChatMessage[] = systemText ? [{ role: 'system', content: systemText }, ...history] : history;
    let response;
    try {
      response = await options.provider.complete({
        messages,
        tools: options.tools.specs(),
        signal,
        onDelta: (text) => ports.emit('delta', { content: text }),
        ...(options.maxReplyBytes !== undefined ? { maxReplyBytes: options.maxReplyBytes } : {}),
      });
    } catch (err) {
      if (signal.aborted || (err instanceof ProviderError && err.kind === 'aborted')) return interrupted();
      return { status: 'failed', error: err as Error, totals };
    }
    const price = priceFor(response.model, options.pricing);
    const cost = price ? costNanoUsd(response.usage, price) : 0;
    totals.inputTokens += response.usage.input_tokens;
    totals.outputTokens += response.usage.output_tokens;
    totals.costNanoUsd += cost;
    await ports.recordUsage(response.model, response.usage, cost);

    if (response.cut) {
      // The reply reached limits.payloads.max_reply_bytes: what came is kept, and the turn ends there.
      const content = response.content ?? '';
      const messageId = await ports.appendAssistant(content, null);
      return { status: 'incomplete', reason: 'max_reply_bytes', content, messageId, totals };
    }
    if (response.tool_calls.length === 0) {
      const content = response.content ?? '';
      const messageId = await ports.appendAssistant(content, null);
      return { status: 'completed', content, messageId, totals };
    }
    if (totals.iterations >= options.maxToolIterations) {
      // The model still wants tools after the allowed rounds: stop here (DECISIONS §10).
      const messageId = response.content ? await ports.appendAssistant(response.content, null) : null;
      return { status: 'incomplete', reason: 'max_tool_iterations', content: response.content, messageId, totals };
    }
    totals.iterations += 1;
    await ports.appendAssistant(response.content, response.tool_calls);
    for (const call of response.tool_calls) {
      totals.toolCalls.push({ id: call.id, name: call.name, arguments: call.arguments });
      ports.emit('tool_call', { id: call.id, name: call.name, arguments: call.arguments });
    }
    const paused = await processCalls(response.tool_calls);
    if (paused) return paused;
  }
}
