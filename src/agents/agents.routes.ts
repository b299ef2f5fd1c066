import { errors } from '../http/errors.js';
import { defineRoute, type Principal, type RouteDef } from '../http/route.js';
import type { ToolRegistry } from '../runtime/index.js';
import type { AgentRoster } from './agent-roster.js';
import { toolAllowed } from './agent-roster.js';
import { agentListSchema, agentParams, agentSchema, whoamiSchema } from './agents.schema.js';

/** What the agent routes read. */
export interface AgentRoutesDeps {
  roster: AgentRoster;
  tools: Pick<ToolRegistry, 'names'>;
  /** Live sessions per agent; of one principal's only when `principal` is given. */
  sessionCounts(principal?: string): Promise<Map<string, number>>;
}

/** GET /agents, GET /agents/{id} and GET /whoami (DECISIONS §17-18). */
export function agentRoutes(deps: AgentRoutesDeps): RouteDef[] {
  const { roster } = deps;
  const present = (id: string, counts: Map<string, number>): Record<string, unknown> => {
    const profile = roster.profile(id)!;
    return {
      id,
      provider: profile.provider.type,
      model: profile.provider.model ?? roster.optionsFor(id).provider.model,
      tools: deps.tools.names().filter((name) => toolAllowed(profile.tools, name)),
      sessions: counts.get(id) ?? 0,
      default: id === roster.defaultAgent(),
    };
  };
  const countsFor = (principal: Principal) => deps.sessionCounts(principal.role === 'admin' ? undefined : principal.id);
  return [
    defineRoute({
      method: 'GET',
      path: '/agents',
      permission: 'api',
      summary: 'The agents this token may use',
      tags: ['agents'],
      responses: [{ status: 200, description: 'The agents', schema: agentListSchema }],
      handler: async (ctx) => {
        const counts = await countsFor(ctx.principal);
        return { items: roster.usableBy(ctx.principal).map((id) => present(id, counts)) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/agents/:id',
      permission: 'api',
      summary: 'One agent',
      tags: ['agents'],
      params: agentParams,
      responses: [{ status: 200, description: 'The agent', schema: agentSchema }],
      handler: async (ctx, { params }) => {
        // An agent the principal may not use is as absent as an unknown one (DECISIONS §18: 404, never 403).
        if (!roster.profile(params.id) || !roster.mayUse(ctx.principal, params.id)) throw errors.notFound('agent');
        return present(params.id, await countsFor(ctx.principal));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/whoami',
      permission: 'api',
      summary: 'The principal, role and agents of this token',
      tags: ['agents'],
      responses: [{ status: 200, description: 'Who the token is', schema: whoamiSchema }],
      handler: (ctx) => ({
        principal: ctx.principal.id,
        role: ctx.principal.role === 'admin' ? 'admin' : 'api',
        agents: roster.usableBy(ctx.principal),
      }),
    }),
  ];
}
