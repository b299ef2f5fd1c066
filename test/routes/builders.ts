/** Builders of test data for the route tests: message bodies, recording tools, the timestamp format. */
import type { AgentTool } from '../../src/runtime/tools.js';

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The fields of a Message (spec: Message), sorted. */
export const MESSAGE_FIELDS = ['content', 'cost', 'event_id', 'id', 'role', 'status', 'tool_calls'];

/** Query strings that break naive full-text query syntax (quotes, operators, prefixes, CJK, emoji, SQL). */
export const HOSTILE_QUERIES = [
  '"',
  '*',
  'OR',
  '-',
  ':',
  '(',
  ')',
  '(fox',
  'fox*',
  'NEAR(a b)',
  '東京',
  '🦊',
  "' or 1=1 --",
];

/** A body for POST /message in chat `chat` with `text`. */
export function msg(text: string, chat = 'c1', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { platform: 'api', user_id: 'u1', chat_id: chat, text, ...extra };
}

/** A tool that records its calls and answers `result` (or what `run` gives). */
export function recordingTool(
  name: string,
  run: (args: Record<string, unknown>) => unknown = () => ({ ok: true }),
): AgentTool & { calls: Array<Record<string, unknown>> } {
  const calls: Array<Record<string, unknown>> = [];
  return {
    calls,
    spec: {
      name,
      description: `test tool ${name}`,
      parameters: { type: 'object', properties: { value: { type: 'string' } } },
    },
    async run(args) {
      calls.push(args);
      return run(args);
    },
  };
}
