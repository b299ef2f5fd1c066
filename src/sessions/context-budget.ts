import type { ContextEntry } from './sessions.repo.js';

/**
 * The model's context as a budget (`limits.payloads`): the newest messages of a session's epoch that fit in
 * `maxTokens`, each counted at most `maxMessageTokens`, at most `maxMessages` of them. Tokens are estimated
 * from UTF-8 bytes, four bytes a token — cheap, the same in SQL (`octet_length`) and here, and close enough for
 * a bound: the budget is what keeps a turn's memory and its request to the model from growing with the history.
 */
export interface ContextBudget {
  maxTokens: number;
  maxMessageTokens: number;
  maxMessages: number;
}

/** Bytes a token is estimated at. */
export const BYTES_PER_TOKEN = 4;

/** What a message costs beyond its text (role, framing, ids), in bytes: about four tokens. */
export const MESSAGE_OVERHEAD_BYTES = 16;

/** The budget of `limits.payloads`'s defaults (tests and embedders that configure nothing). */
export const DEFAULT_CONTEXT_BUDGET: ContextBudget = { maxTokens: 100_000, maxMessageTokens: 65_536, maxMessages: 200 };

/** The context budget of a `limits.payloads` block. */
export function contextBudgetOf(payloads: {
  max_context_tokens: number;
  max_message_tokens: number;
  max_context_messages: number;
}): ContextBudget {
  return {
    maxTokens: payloads.max_context_tokens,
    maxMessageTokens: Math.min(payloads.max_message_tokens, payloads.max_context_tokens),
    maxMessages: payloads.max_context_messages,
  };
}

/** A context entry with its cost in bytes (its text, cut at the per-message cap, its tool calls and overhead). */
export interface SizedEntry {
  entry: ContextEntry;
  bytes: number;
}

/** The estimated tokens of `bytes` bytes. */
export function tokensOf(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}

/** A message's text at most `maxBytes` bytes of UTF-8, cut with a note saying so (the note included). */
export function cutText(text: string, fullBytes: number, maxBytes: number): string {
  if (fullBytes <= maxBytes) return text;
  const note = `\n[…cut: this message is ${fullBytes} bytes; only its first part is shown here (limits.payloads).]`;
  const keep = Math.max(0, maxBytes - Buffer.byteLength(note));
  const buffer = Buffer.from(text.length > keep ? text.slice(0, keep) : text, 'utf8');
  let end = Math.min(keep, buffer.length);
  // Back up to the first byte of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && end < buffer.length && (buffer[end]! & 0xc0) === 0x80) end--;
  return buffer.subarray(0, end).toString('utf8') + note;
}

/**
 * A message as the context counts it: its text cut at `maxMessageTokens` (with a note), its cost in bytes.
 * `fullBytes`: the text's stored size when it was read cut already (SQL `substr`); measured otherwise.
 */
export function sizeEntry(
  entry: ContextEntry,
  budget: ContextBudget,
  fullBytes?: number,
  toolCallBytes?: number,
): SizedEntry {
  const cap = budget.maxMessageTokens * BYTES_PER_TOKEN;
  const content = entry.content;
  let bytes = MESSAGE_OVERHEAD_BYTES;
  let out = entry;
  if (content !== null) {
    const full = fullBytes ?? Buffer.byteLength(content, 'utf8');
    if (full > cap) out = { ...entry, content: cutText(content, full, cap) };
    bytes += Math.min(full, cap);
  }
  if (entry.toolCalls) bytes += toolCallBytes ?? Buffer.byteLength(JSON.stringify(entry.toolCalls), 'utf8');
  return { entry: out, bytes };
}

/**
 * The messages (oldest first) sent to the model: whole groups taken newest first while they fit — a group is
 * a message, or an assistant message with tool calls and the tool results after it, never split (a result
 * without its call is refused by providers) — at most `maxMessages`. The newest group is always taken: when it
 * alone is over the budget its tool results are cut further to share what is left. Tool results whose call
 * is not there are dropped.
 */
export function fitContext(window: readonly SizedEntry[], budget: ContextBudget): ContextEntry[] {
  return pickGroups(window, budget, true).map((sized) => sized.entry);
}

/**
 * What of `window` a later turn can still need (ContextCache): the groups `fitContext` would take, uncut beyond
 * the per-message cap, so a window kept in memory never holds more than the budget (and the newest group).
 */
export function retainContext(window: readonly SizedEntry[], budget: ContextBudget): SizedEntry[] {
  return pickGroups(window, budget, false);
}

function pickGroups(window: readonly SizedEntry[], budget: ContextBudget, shrink: boolean): SizedEntry[] {
  const limit = budget.maxTokens * BYTES_PER_TOKEN;
  const taken: SizedEntry[][] = [];
  let used = 0;
  let count = 0;
  let i = window.length - 1;
  while (i >= 0) {
    let start = i;
    while (start >= 0 && window[start]!.entry.role === 'tool') start--;
    const owner = start >= 0 ? window[start]! : undefined;
    const hasResults = start < i;
    if (hasResults && !(owner?.entry.role === 'assistant' && owner.entry.toolCalls)) {
      // Tool results without their call: never sent; what is older goes on as usual.
      i = start;
      continue;
    }
    if (!owner) break;
    let group = window.slice(start, i + 1);
    const cost = group.reduce((sum, sized) => sum + sized.bytes, 0);
    if (taken.length === 0) {
      if (cost > limit && shrink) group = shrinkGroup(group, limit);
    } else if (used + cost > limit || count + group.length > budget.maxMessages) {
      break;
    }
    taken.push(group);
    used += cost;
    count += group.length;
    i = start - 1;
  }
  const out: SizedEntry[] = [];
  for (let g = taken.length - 1; g >= 0; g--) out.push(...taken[g]!);
  return out;
}

/** The newest group cut to fit `limit`: its tool results share what the call leaves, evenly. */
function shrinkGroup(group: SizedEntry[], limit: number): SizedEntry[] {
  const results = group.filter((sized) => sized.entry.role === 'tool');
  if (results.length === 0) return group;
  const fixed = group.reduce((sum, sized) => (sized.entry.role === 'tool' ? sum : sum + sized.bytes), 0);
  const share = Math.max(256, Math.floor((limit - fixed) / results.length) - MESSAGE_OVERHEAD_BYTES);
  return group.map((sized) => {
    const content = sized.entry.content;
    if (sized.entry.role !== 'tool' || content === null) return sized;
    const full = Buffer.byteLength(content, 'utf8');
    if (full <= share) return sized;
    return { entry: { ...sized.entry, content: cutText(content, full, share) }, bytes: share + MESSAGE_OVERHEAD_BYTES };
  });
}
