import { z } from 'zod';

/** `{id}` of GET /agents/{id}. */
export const agentParams = z.object({ id: z.string().min(1) });

/** One agent as GET /agents shows it (DECISIONS §17). */
export const agentSchema = z
  .object({
    id: z.string(),
    provider: z.string().describe('The provider type: echo, openai or anthropic'),
    model: z.string().describe('The model it calls'),
    tools: z.array(z.string()).describe('The tools it may call, by name'),
    sessions: z.number().int().min(0).describe('Its live sessions (for an api principal: its own)'),
    default: z.boolean().describe('True for the agent of sessions no binding matches'),
  })
  .meta({ id: 'Agent', description: 'An agent behind the gateway (DECISIONS §17)' });

/** GET /agents. */
export const agentListSchema = z.object({ items: z.array(agentSchema) }).meta({ id: 'AgentList' });

/** GET /whoami (DECISIONS §18). */
export const whoamiSchema = z
  .object({
    principal: z.string().describe('The principal the token belongs to'),
    role: z.enum(['api', 'admin']),
    agents: z.array(z.string()).describe('The agents it may use'),
  })
  .meta({ id: 'WhoAmI', description: 'Who the token is' });
