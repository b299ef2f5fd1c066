import { z } from 'zod';
import { about, positiveInt } from '../schema-meta.js';

/** `limits.payloads`: caps on large tool results, histories and the model's context. */
export const payloadsSchema = z
  .strictObject({
    max_tool_result_bytes: positiveInt
      .default(262_144)
      .meta(
        about(
          'A tool result larger than this many bytes (UTF-8) is cut, with a note to the model, before it is stored,',
          'streamed or sent to the model. An MCP tool is cut at the smaller of this and mcp.max_output_bytes.',
        ),
      ),
    max_reply_bytes: positiveInt
      .default(1_048_576)
      .meta(
        about(
          'A reply of the model longer than this many bytes (UTF-8) is cut there: the call is stopped, the text',
          'streamed and kept ends at the cap, and the turn ends incomplete with termination_reason max_reply_bytes.',
          "Far above any model's output limit; it bounds what one turn holds in memory.",
        ),
      ),
    max_context_tokens: positiveInt
      .default(100_000)
      .meta(
        about(
          "Tokens of a session's history sent to the model with each call, estimated as four characters a token:",
          'the newest messages that fit, read newest first. A tool call and its results are kept or dropped together.',
          'The system prompt and the tools come on top.',
        ),
      ),
    max_message_tokens: positiveInt
      .default(65_536)
      .meta(
        about(
          "One message's share of the context at most (estimated tokens): a longer message is sent cut, with a note,",
          'so a single giant message cannot fill the context; the default lets a tool result at its cap through whole.',
          'The stored message keeps its full text.',
        ),
      ),
    max_context_messages: positiveInt
      .max(10_000)
      .default(200)
      .meta(about("Messages of a session's history sent to the model at most, however short they are.")),
  })
  .refine((p) => p.max_message_tokens <= p.max_context_tokens, {
    message: 'max_message_tokens must not exceed max_context_tokens',
    path: ['max_message_tokens'],
  })
  .prefault({})
  .meta(about('Caps on large payloads.'));
