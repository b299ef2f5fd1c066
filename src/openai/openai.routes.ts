import { z } from 'zod';
import { defineRoute, type Principal, HANDLED, type RouteDef } from '../http/route.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { outcomeTimeout, type MessagePath } from '../turns/index.js';
import { modelNotFound, openAiErrorBody, presentCompletion, presentModelList } from './openai.presenter.js';
import { completionBody, GATEHOUSE_MODEL, openAiErrorSchema } from './openai.schema.js';
import { answerOf, chooseSession, createdOf, inboundOf } from './openai.service.js';
import { streamCompletion } from './openai.stream.js';

/** The header naming a call's turn on every answer that has one. */
export const EVENT_ID_HEADER = 'x-gatehouse-event-id';

export interface OpenAiRoutesDeps {
  /** The message path's door. */
  messages: Pick<MessagePath, 'submit' | 'follow' | 'waitFor' | 'turn'>;
  ids: IdGenerator;
  clock: Clock;
  /** How long a call waits for its turn (as POST /sessions/{id}/messages); then 504, the turn goes on. */
  replyTimeoutMs: number;
  /** The agents a principal may use: each is offered as the model `gatehouse/<agent>` (DECISIONS §17). */
  agents?: { usableBy(principal: Principal): string[]; namedFor(principal: Principal): string[] };
}

const usageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});

const completionSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.literal(GATEHOUSE_MODEL),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({ role: z.literal('assistant'), content: z.string(), refusal: z.null() }),
      logprobs: z.null(),
      finish_reason: z.enum(['stop', 'length']),
    }),
  ),
  usage: usageSchema,
  system_fingerprint: z.null(),
});

const modelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(
    z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() }),
  ),
});

/**
 * The OpenAI-compatible API (DECISIONS §13, ADR 0015) on the main port,
 * outside the API prefix: POST /v1/chat/completions (JSON or a chunk
 * stream) and GET /v1/models. Guarded like every route; errors in OpenAI's
 * shape.
 */
/**
 * The agent a model name selects (DECISIONS §17): `gatehouse` none (bindings and the default decide),
 * `gatehouse/<agent>` that agent when the principal may use it; anything else is OpenAI's 404 model_not_found.
 */
export function agentOfModel(model: string, usable: readonly string[]): string | undefined {
  if (model === GATEHOUSE_MODEL) return undefined;
  const agent = model.startsWith(`${GATEHOUSE_MODEL}/`) ? model.slice(GATEHOUSE_MODEL.length + 1) : null;
  if (agent === null || !usable.includes(agent)) throw modelNotFound(model);
  return agent;
}

export function openAiRoutes(deps: OpenAiRoutesDeps): RouteDef[] {
  const { messages } = deps;
  const listed = Math.floor(deps.clock.now() / 1000);
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/models',
      absolutePaths: ['/v1/models'],
      permission: 'api',
      summary:
        'OpenAI-compatible: the models offered (`gatehouse`, and `gatehouse/<agent>` per agent this token may use)',
      tags: ['openai'],
      errorBody: openAiErrorBody,
      errorSchema: openAiErrorSchema,
      responses: [{ status: 200, description: 'OpenAI model list', schema: modelListSchema }],
      handler: (ctx) => presentModelList(listed, deps.agents?.namedFor(ctx.principal) ?? []),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/chat/completions',
      absolutePaths: ['/v1/chat/completions'],
      permission: 'api',
      summary: 'OpenAI-compatible: one agent turn as a chat completion (SSE chunks with stream: true)',
      tags: ['openai'],
      body: completionBody,
      errorBody: openAiErrorBody,
      errorSchema: openAiErrorSchema,
      errors: [404, 409, 502, 504],
      responses: [
        {
          status: 200,
          description: 'chat.completion',
          schema: completionSchema,
          headers: ['X-Gatehouse-Event-Id'],
        },
        {
          status: 200,
          description: 'chat.completion.chunk data lines, then data: [DONE]',
          contentType: 'text/event-stream',
          headers: ['X-Gatehouse-Event-Id'],
        },
      ],
      handler: async (ctx, { body }) => {
        const agent = agentOfModel(body.model, deps.agents?.usableBy(ctx.principal) ?? []);
        const headers = ctx.request.headers;
        const session = chooseSession(body, headers, ctx.principal, deps.ids);
        const inbound = inboundOf(body, session, { principal: ctx.principal, headers });
        const submitted = await messages.submit(agent === undefined ? inbound : { ...inbound, agent });
        const eventId = submitted.eventId;
        ctx.reply.header(EVENT_ID_HEADER, eventId);
        if (body.stream === true) {
          const accepted = await messages.turn(eventId);
          await streamCompletion(ctx, messages, eventId, {
            created: accepted ? createdOf(accepted) : Math.floor(deps.clock.now() / 1000),
            includeUsage: body.stream_options?.include_usage === true,
            timeoutMs: deps.replyTimeoutMs,
          });
          return HANDLED;
        }
        const turn = await messages.waitFor(eventId, deps.replyTimeoutMs, ctx.signal);
        if (!turn) throw outcomeTimeout({ event_id: eventId });
        const answer = answerOf(turn);
        return presentCompletion({
          eventId,
          created: createdOf(turn),
          content: answer.content,
          finishReason: answer.finishReason,
          usage: answer.usage,
        });
      },
    }),
  ];
}
