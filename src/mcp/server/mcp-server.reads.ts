import { z } from 'zod';
import type { AgentRoster } from '../../agents/index.js';
import { ApiError, errors } from '../../http/errors.js';
import { presentKnowledgeItem, type KnowledgeService } from '../../knowledge/index.js';
import { presentMemory, type MemoryService } from '../../memory/index.js';
import {
  isolatedPrincipal,
  ownerScope,
  type MessageRecord,
  type SessionRecord,
  type SessionService,
} from '../../sessions/index.js';
import { outcomeApiError, type MessagePath, type TurnRecord } from '../../turns/index.js';
import { defineTool, limitSchema, type McpTool } from './mcp-server.tool.js';

/** What the read tools use. */
export interface ReadToolDeps {
  messages: Pick<MessagePath, 'turn'>;
  sessions: Pick<SessionService, 'list' | 'require' | 'history'>;
  agents: Pick<AgentRoster, 'usableBy' | 'defaultAgent'>;
  memory: Pick<MemoryService, 'list'>;
  knowledge: Pick<KnowledgeService, 'list'>;
}

/** A search text: the bound of GET /memory's `query`. */
const queryText = z
  .string()
  .min(1)
  .max(1000)
  .refine((text) => text.trim() !== '' && !text.includes('\u0000'), 'must not be blank or contain NUL')
  .describe('What to look for (words or a question), at most 1000 characters');

const sessionId = z.string().min(1).max(1000).describe('A session id, as list_sessions or send_message answered it');
const eventId = z.string().min(1).max(200).describe("A turn's event id, as send_message answered it");

const sessionView = z.object({
  id: z.string(),
  channel: z.string(),
  agent: z.string(),
  status: z.string(),
  created_at: z.string(),
  last_active: z.string(),
  message_count: z.number().int(),
});

const historyEntry = z.object({
  id: z.string(),
  role: z.string(),
  content: z.string().nullable(),
  created_at: z.string(),
  event_id: z.string().nullable(),
  tool_calls: z.array(z.unknown()).optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});

const turnView = z.object({
  event_id: z.string(),
  session_id: z.string(),
  status: z.string(),
  current_tool: z.string().nullable(),
  reply: z.string().nullable(),
  termination_reason: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  accepted_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  updated_at: z.string(),
});

const memoryView = z.object({
  id: z.string(),
  key: z.string().nullable(),
  content: z.string(),
  tags: z.array(z.string()),
  created_at: z.string(),
  last_accessed: z.string(),
  relevance_score: z.number(),
});

const knowledgeView = z.object({
  id: z.string(),
  title: z.string(),
  source: z.string(),
  score: z.number(),
  matches: z.array(z.object({ chunk: z.number().int(), text: z.string() })),
});

function presentSession(session: SessionRecord): z.output<typeof sessionView> {
  return {
    id: session.key,
    channel: session.channel,
    agent: session.agent,
    status: session.status,
    created_at: session.createdAt,
    last_active: session.lastActive,
    message_count: session.messageCount,
  };
}

function presentEntry(message: MessageRecord): z.output<typeof historyEntry> {
  return {
    id: message.id,
    role: message.role,
    content: message.content,
    created_at: message.createdAt,
    event_id: message.eventId,
    ...(message.toolCalls ? { tool_calls: message.toolCalls } : {}),
    ...(message.toolCallId ? { tool_call_id: message.toolCallId } : {}),
    ...(message.name ? { name: message.name } : {}),
  };
}

/** A turn as `get_turn` answers it: the ledger's record (GET /turns/{event_id}), with a failed turn's error. */
export function presentTurnView(turn: TurnRecord): z.output<typeof turnView> {
  const failure = outcomeApiError(turn, {});
  return {
    event_id: turn.eventId,
    session_id: turn.sessionKey,
    status: turn.status,
    current_tool: turn.currentTool,
    reply: turn.response,
    termination_reason: turn.terminationReason,
    error: failure ? { code: failure.code, message: failure.message } : null,
    accepted_at: turn.acceptedAt,
    started_at: turn.startedAt,
    finished_at: turn.finishedAt,
    updated_at: turn.updatedAt,
  };
}

/** An opaque page position for list_sessions: the last session's activity time and key. */
function encodeCursor(cursor: { lastActive: string; key: string }): string {
  return Buffer.from(JSON.stringify([cursor.lastActive, cursor.key]), 'utf8').toString('base64url');
}

function decodeCursor(text: string): { lastActive: string; key: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string') {
      return { lastActive: value[0], key: value[1] };
    }
  } catch {
    /* not one of ours */
  }
  throw errors.badRequest('invalid cursor: pass next_cursor from the previous page');
}

/**
 * The tools that read (DECISIONS §18-19), each scoped as the REST API is: an api principal sees its own sessions,
 * turns and memory (another's answers "not found", lists leave it out); admins see everything; knowledge and the
 * agents list are shared, the agents narrowed to those the caller may use.
 */
export function readTools(deps: ReadToolDeps): McpTool[] {
  const { sessions } = deps;
  return [
    defineTool({
      name: 'list_sessions',
      title: 'List sessions',
      description:
        'Lists your conversations with the gateway, most recently active first. Page on with `cursor` = the ' +
        '`next_cursor` of the previous answer.',
      readOnly: true,
      input: z.object({
        limit: limitSchema(100, 20),
        cursor: z.string().min(1).max(500).optional().describe('next_cursor of the previous page'),
      }),
      output: z.object({
        items: z.array(sessionView),
        next_cursor: z.string().nullable(),
        has_more: z.boolean(),
        total: z.number().int(),
      }),
      run: async (args, { principal }) => {
        const cursor = args.cursor === undefined ? null : decodeCursor(args.cursor);
        const owner = ownerScope(principal);
        const page = await sessions.list({
          ...(owner !== null ? { principal: owner } : {}),
          status: 'all',
          limit: args.limit,
          cursor,
        });
        return {
          items: page.items.map(presentSession),
          next_cursor: page.nextCursor ? encodeCursor(page.nextCursor) : null,
          has_more: page.hasMore,
          total: page.total,
        };
      },
    }),
    defineTool({
      name: 'get_history',
      title: 'Read a session',
      description:
        "The newest messages of a session, oldest first: the user's messages, the agent's replies and its tool " +
        'calls and results.',
      readOnly: true,
      input: z.object({ session_id: sessionId, limit: limitSchema(100, 20) }),
      output: z.object({
        session_id: z.string(),
        items: z.array(historyEntry),
        total: z.number().int(),
        returned: z.number().int(),
      }),
      run: async (args, { principal }) => {
        const session = await sessions.require(args.session_id, ownerScope(principal));
        const page = await sessions.history(session, args.limit);
        return {
          session_id: session.key,
          items: page.items.map(presentEntry),
          total: page.total,
          returned: page.items.length,
        };
      },
    }),
    defineTool({
      name: 'get_turn',
      title: 'Look at a turn',
      description:
        "One turn's state: its status (accepted, running, waiting_approval, waiting_clarification, completed, " +
        'incomplete, interrupted, failed) and its reply once it has one. Poll it after send_message timed out.',
      readOnly: true,
      input: z.object({ event_id: eventId }),
      output: turnView,
      run: async (args, { principal }) => {
        const turn = await deps.messages.turn(args.event_id);
        if (!turn) throw errors.notFound('turn');
        const scope = ownerScope(principal);
        if (scope !== null) {
          // Another principal's turn is as absent as an unknown one (DECISIONS §18).
          await sessions.require(turn.sessionKey, scope).catch((err: unknown) => {
            throw err instanceof ApiError && err.code === 'NOT_FOUND' ? errors.notFound('turn') : err;
          });
        }
        return presentTurnView(turn);
      },
    }),
    defineTool({
      name: 'search_knowledge',
      title: 'Search the knowledge base',
      description: "Searches the gateway's knowledge base; answers the best documents with their matching passages.",
      readOnly: true,
      input: z.object({ query: queryText, limit: limitSchema(20, 5) }),
      output: z.object({ items: z.array(knowledgeView) }),
      run: async (args, { signal }) => {
        const found = await deps.knowledge.list({ query: args.query, limit: args.limit, signal });
        return {
          items: found.items.map((item) => {
            const view = presentKnowledgeItem(item, found.terms);
            return {
              id: view.id,
              title: view.title,
              source: view.source,
              score: view.score ?? 0,
              matches: view.matches ?? [],
            };
          }),
        };
      },
    }),
    defineTool({
      name: 'search_memory',
      title: 'Search memory',
      description: 'Searches the memory entries the agents saved for you, best match first.',
      readOnly: true,
      input: z.object({ query: queryText, limit: limitSchema(50, 10) }),
      output: z.object({ items: z.array(memoryView), total: z.number().int() }),
      run: async (args, { principal, signal }) => {
        // The memory GET /memory shows this caller: a configured principal's own, everyone else's all of it.
        const own = isolatedPrincipal(principal);
        const page = await deps.memory.list({
          owner: own === null ? undefined : `principal:${own}`,
          query: args.query,
          limit: args.limit,
          offset: 0,
          signal,
        });
        return { items: page.items.map((item) => presentMemory(item.record, item.score)), total: page.total };
      },
    }),
    defineTool({
      name: 'list_agents',
      title: 'List agents',
      description: 'The agents you may talk to (send_message `agent`), and which one answers when none is named.',
      readOnly: true,
      input: z.object({}),
      output: z.object({ items: z.array(z.object({ id: z.string(), default: z.boolean() })) }),
      run: (_args, { principal }) => {
        const fallback = deps.agents.defaultAgent();
        const items = deps.agents.usableBy(principal).map((id) => ({ id, default: id === fallback }));
        return Promise.resolve({ items });
      },
    }),
  ];
}
