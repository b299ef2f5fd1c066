import { z } from 'zod';
import { defineRoute, HANDLED, type Principal, type RouteDef } from '../http/route.js';
import type { IdGenerator } from '../lib/ids.js';
import { agentOfModel, EVENT_ID_HEADER, openAiErrorBody, openAiErrorSchema } from '../openai/index.js';
import type { MessagePath, TurnRecord } from '../turns/index.js';
import { CANCEL_REASON, presentResponse, statusOf, type ResponseEcho } from './responses.presenter.js';
import {
  conversationOf,
  inboundOf,
  newConversation,
  requireResponse,
  type ResponseLookup,
} from './responses.service.js';
import { responseBody, responseParams } from './responses.schema.js';
import { streamResponse } from './responses.stream.js';

export interface ResponsesRoutesDeps {
  /** The message path's door. */
  messages: Pick<MessagePath, 'submit' | 'follow' | 'waitFor' | 'turn' | 'interrupt'>;
  /** Whose session a turn is in (DECISIONS §18): another principal's response is 404. */
  sessions: ResponseLookup['sessions'];
  ids: IdGenerator;
  /** How long a call waits for its turn (as the chat completions); then it answers the response as it stands. */
  replyTimeoutMs: number;
  /** The agents a principal may use: each is the model `gatehouse/<agent>` (DECISIONS §17). */
  agents?: { usableBy(principal: Principal): string[] };
}

const responseSchema = z
  .object({
    id: z.string(),
    object: z.literal('response'),
    created_at: z.number().int(),
    status: z.enum(['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled']),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    incomplete_details: z.object({ reason: z.string() }).nullable(),
    model: z.string(),
    output: z.array(z.object({ type: z.string(), id: z.string() }).loose()),
    usage: z
      .object({ input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int() })
      .loose()
      .nullable(),
  })
  .loose()
  .meta({ id: 'OpenAIResponse', description: 'A turn as an OpenAI Responses API `response`' });

const common = {
  permission: 'api' as const,
  tags: ['openai'],
  errorBody: openAiErrorBody,
  errorSchema: openAiErrorSchema,
};

/**
 * The OpenAI Responses API (DECISIONS §22, ADR 0041) on the main port,
 * outside the API prefix: POST /v1/responses (JSON, an event stream, or a
 * background response answered `queued`), GET /v1/responses/{id} and POST
 * /v1/responses/{id}/cancel. A response is a turn: `resp_` + its event id.
 */
export function responsesRoutes(deps: ResponsesRoutesDeps): RouteDef[] {
  const { messages } = deps;
  const lookup: ResponseLookup = { messages, sessions: deps.sessions };
  return [
    defineRoute({
      ...common,
      method: 'POST',
      path: '/v1/responses',
      absolutePaths: ['/v1/responses'],
      summary: 'OpenAI Responses API: one agent turn as a response (an event stream with stream: true)',
      body: responseBody,
      errors: [404, 409, 503],
      responses: [
        { status: 200, description: 'response', schema: responseSchema, headers: ['X-Gatehouse-Event-Id'] },
        {
          status: 200,
          description: 'Responses stream events (response.created … response.completed)',
          contentType: 'text/event-stream',
          headers: ['X-Gatehouse-Event-Id'],
        },
      ],
      handler: async (ctx, { body }) => {
        const agent = agentOfModel(body.model, deps.agents?.usableBy(ctx.principal) ?? []);
        const headers = ctx.request.headers;
        const background = body.background === true;
        const previousId = body.previous_response_id ?? null;
        const conversation = previousId
          ? conversationOf(await requireResponse(lookup, previousId, ctx.principal))
          : newConversation(ctx.principal, headers, deps.ids);
        const inbound = inboundOf(body, conversation, { principal: ctx.principal, headers, background });
        const submitted = await messages.submit(agent === undefined ? inbound : { ...inbound, agent });
        const eventId = submitted.eventId;
        ctx.reply.header(EVENT_ID_HEADER, eventId);
        const echo: ResponseEcho = {
          model: body.model,
          instructions: body.instructions ?? null,
          previousResponseId: previousId,
          background,
        };
        const accepted = await messages.turn(eventId);
        if (!accepted) throw new Error(`turn ${eventId} is not in the ledger`);
        if (body.stream === true) {
          await streamResponse(ctx, messages, accepted, { echo, timeoutMs: deps.replyTimeoutMs });
          return HANDLED;
        }
        if (background) return presentResponse(accepted, echo);
        const turn =
          (await messages.waitFor(eventId, deps.replyTimeoutMs, ctx.signal)) ?? (await messages.turn(eventId));
        return presentResponse(turn ?? accepted, echo);
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/v1/responses/:id',
      absolutePaths: ['/v1/responses/:id'],
      summary: 'OpenAI Responses API: a response (its turn) as it stands',
      params: responseParams,
      errors: [404, 503],
      responses: [{ status: 200, description: 'response', schema: responseSchema }],
      handler: async (ctx, { params }) => presentResponse(await requireResponse(lookup, params.id, ctx.principal)),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/v1/responses/:id/cancel',
      absolutePaths: ['/v1/responses/:id/cancel'],
      summary: 'OpenAI Responses API: cancel a queued or running response (interrupts its turn)',
      params: responseParams,
      errors: [404, 503],
      responses: [{ status: 200, description: 'response (cancelled once its turn stops)', schema: responseSchema }],
      handler: async (ctx, { params }) => {
        const turn = await requireResponse(lookup, params.id, ctx.principal);
        const live = statusOf(turn).status;
        if (live !== 'queued' && live !== 'in_progress') return presentResponse(turn);
        return presentResponse(await cancelTurn(messages, turn.eventId, deps.replyTimeoutMs, ctx.signal));
      },
    }),
  ];
}

/**
 * Interrupts a turn with the cancel reason: at once when it runs; a queued
 * one when it starts (the ledger's `running` status event). Answers the turn
 * once it has ended (or as it stands when the wait is cut short).
 */
async function cancelTurn(
  messages: ResponsesRoutesDeps['messages'],
  eventId: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<TurnRecord> {
  if (!messages.interrupt(eventId, CANCEL_REASON)) {
    for await (const step of messages.follow(eventId, { fromSeq: 0, endOnPause: false, timeoutMs, signal })) {
      if (step.kind === 'ended' || step.kind === 'timeout') break;
      if (messages.interrupt(eventId, CANCEL_REASON)) break;
    }
  }
  const ended = await messages.waitFor(eventId, timeoutMs, signal, 'terminal');
  return ended ?? (await messages.turn(eventId))!;
}
