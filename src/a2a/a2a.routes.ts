import { z } from 'zod';
import type { AgentRoster } from '../agents/index.js';
import { errors } from '../http/errors.js';
import type { Guard } from '../http/guard.js';
import { defineRoute, HANDLED, type RequestContext, type RouteDef } from '../http/route.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { extractToken } from '../security/tokens.js';
import type { SessionService } from '../sessions/index.js';
import type { MessagePath } from '../turns/index.js';
import { agentCardOf } from './a2a.card.js';
import { GatehouseA2AHandler } from './a2a.handler.js';
import { a2aErrorBody, jsonRpcResponseSchema, loadSdk, serveJsonRpc, type StreamHold } from './a2a.rpc.js';

/** What the A2A routes use. */
export interface A2ARoutesDeps {
  messages: Pick<MessagePath, 'submit' | 'waitFor' | 'turn' | 'follow' | 'interrupt'>;
  sessions: Pick<SessionService, 'require'>;
  agents: Pick<AgentRoster, 'mayUse' | 'defaultAgent' | 'ids'>;
  /** Reads the token a card request may carry (cards need none; a token shows the agents it may use). */
  guard: Pick<Guard, 'principalForToken'>;
  tokenHeader: string;
  ids: IdGenerator;
  logger: Logger;
  replyTimeoutMs: number;
}

const agentParams = z.object({ agent: z.string().min(1).max(64) });

/** The gateway's origin as the caller reached it: the base of the URLs a card names. */
function originOf(ctx: RequestContext): string {
  const host = ctx.request.headers.host ?? 'localhost';
  return `${ctx.request.protocol}://${host}`;
}

/**
 * The A2A routes (DECISIONS §22; docs/adr/0042-a2a.md), on the main port outside the API prefix:
 *
 * - `GET /.well-known/agent-card.json`: the default agent's card, public (discovery: it reveals no more than that
 *   a gateway answers here). `GET /a2a/<agent>/.well-known/agent-card.json`: an agent's card, shown only to a
 *   caller whose token may use that agent (DECISIONS §18: an agent another principal may not use is as absent as
 *   an unknown one, 404); the default agent's is public there too.
 * - `POST /a2a` (the default agent) and `POST /a2a/<agent>`: JSON-RPC, guarded as the API is (tokens, Origin/Host,
 *   rate limits, audit; permission api), errors in JSON-RPC's shape.
 */
export function a2aRoutes(deps: A2ARoutesDeps): RouteDef[] {
  const { agents } = deps;
  const cardOf = async (ctx: RequestContext, agent: string) => {
    const isDefault = agent === agents.defaultAgent();
    if (!agents.ids().includes(agent)) throw errors.notFound('agent');
    if (!isDefault) {
      const presented = extractToken(ctx.request.headers, deps.tokenHeader);
      const caller = deps.guard.principalForToken(presented?.token ?? null, 'header');
      if (!caller || !agents.mayUse(caller, agent)) throw errors.notFound('agent');
    }
    const sdk = await loadSdk();
    return sdk.cardToJson(agentCardOf(agent, { origin: originOf(ctx), isDefault }));
  };
  const serve = async (ctx: RequestContext, body: unknown, agent: string) => {
    // An agent the caller may not use is as absent as an unknown one (DECISIONS §18).
    if (!agents.ids().includes(agent) || !agents.mayUse(ctx.principal, agent)) throw errors.notFound('agent');
    if (body === undefined) throw errors.badRequest('a JSON-RPC request is required');
    const card = agentCardOf(agent, { origin: originOf(ctx), isDefault: agent === agents.defaultAgent() });
    const held: StreamHold = { stream: null };
    const handler = new GatehouseA2AHandler(deps, {
      principal: ctx.principal,
      agent,
      headers: ctx.request.headers,
      signal: ctx.signal,
      card,
      requestId: ctx.requestId,
      onHeld: (bytes) => held.stream?.holding(bytes),
    });
    return (await serveJsonRpc(ctx, body, handler, deps.logger, held)) ?? HANDLED;
  };
  const cardRoute = {
    method: 'GET' as const,
    permission: 'none' as const,
    tags: ['a2a'],
    errors: [404],
    responses: [{ status: 200, description: 'The agent card (A2A 1.0)', schema: z.record(z.string(), z.unknown()) }],
  };
  const rpcRoute = {
    method: 'POST' as const,
    permission: 'api' as const,
    tags: ['a2a'],
    errorBody: a2aErrorBody,
    errorSchema: jsonRpcResponseSchema,
    errors: [404],
    responses: [
      { status: 200, description: 'The JSON-RPC response', schema: jsonRpcResponseSchema },
      {
        status: 200,
        description: 'SendStreamingMessage, SubscribeToTask: one JSON-RPC response per task event',
        contentType: 'text/event-stream',
      },
    ],
  };
  const rpcSummary = (who: string) =>
    `A2A JSON-RPC to ${who}: SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask`;
  return [
    defineRoute({
      ...cardRoute,
      path: '/.well-known/agent-card.json',
      absolutePaths: ['/.well-known/agent-card.json'],
      summary: "A2A: the default agent's card (no token needed)",
      handler: (ctx) => cardOf(ctx, agents.defaultAgent()),
    }),
    defineRoute({
      ...cardRoute,
      path: '/a2a/:agent/.well-known/agent-card.json',
      absolutePaths: ['/a2a/:agent/.well-known/agent-card.json'],
      summary: "A2A: an agent's card (shown to a token that may use the agent; the default agent's to anyone)",
      params: agentParams,
      handler: (ctx, { params }) => cardOf(ctx, params.agent),
    }),
    defineRoute({
      ...rpcRoute,
      path: '/a2a',
      absolutePaths: ['/a2a'],
      summary: rpcSummary('the default agent'),
      handler: (ctx, { body }) => serve(ctx, body, agents.defaultAgent()),
    }),
    defineRoute({
      ...rpcRoute,
      path: '/a2a/:agent',
      absolutePaths: ['/a2a/:agent'],
      summary: rpcSummary('an agent'),
      params: agentParams,
      handler: (ctx, { body, params }) => serve(ctx, body, params.agent),
    }),
  ];
}
