import { z } from 'zod';
import type { Principal } from '../../http/route.js';

/**
 * Who calls a tool, and when to give up: the /mcp request's principal and its client going away; its headers
 * carry the caller's `traceparent` (DECISIONS §21).
 */
export interface ToolCall {
  principal: Principal;
  signal: AbortSignal;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * One tool of the /mcp server (DECISIONS §19): its input and output schemas (zod; the SDK turns them into the
 * JSON Schemas `tools/list` shows and checks calls and answers against them) and what it does for a caller.
 * `run` answers the structured content; a thrown `ApiError` is the tool's error, with its message.
 */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  output: z.ZodObject;
  /** True when a call changes nothing (every tool but `send_message`). */
  readOnly: boolean;
  run(args: unknown, call: ToolCall): Promise<Record<string, unknown>>;
}

/** Defines a tool with its schemas' types flowing into `run` (the SDK hands it arguments its input schema parsed). */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  tool: Omit<McpTool, 'input' | 'output' | 'run'> & {
    input: I;
    output: O;
    run(args: z.output<I>, call: ToolCall): Promise<z.output<O>>;
  },
): McpTool {
  return tool;
}

/** A bounded page size: `max` at most, `fallback` when not given. */
export function limitSchema(max: number, fallback: number) {
  return z
    .number()
    .int()
    .min(1)
    .max(max)
    .default(fallback)
    .describe(`How many to answer: 1..${max} (default ${fallback})`);
}
