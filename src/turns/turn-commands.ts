/**
 * Chat commands (DECISIONS §10): a message that is `/new` (a new context epoch), `/status` (the session) or a
 * registered command (`/approve <skill>`…) is answered by its handler instead of the agent, and the answer is
 * stored as the session's assistant message. A command has effects of its own, so a store failure once it runs
 * ends its turn `interrupted` (store_unavailable, ADR 0014).
 */
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { emptyTotals, type AgentOptions, type AgentOutcome } from '../runtime/index.js';
import { appendMessage, bumpEpoch, getSession, touchSession } from '../sessions/index.js';
import type { Store } from '../store/index.js';
import type { ContextCache } from './context-cache.js';
import type { InboundPayload } from './inbound.js';
import type { TurnEventHub } from './turn-events.js';
import { isStoreUnavailable, storeUnavailableOutcome } from './turn-finish.js';
import type { TurnRecord } from './turns.repo.js';

/** A chat command handler: `args` is the text after the command word. */
export type ChatCommand = (
  args: string,
  caller: { platform: string; userId: string; sessionKey: string },
) => Promise<string>;

/** A message that is a chat command: its name (lower case, without the slash) and the text after it. */
export interface CommandCall {
  name: string;
  args: string;
}

/** What running a chat command uses (the runner's options: `agent` is read as configured at the time). */
export interface TurnCommandDeps {
  store: Store;
  hub: TurnEventHub;
  contextCache?: ContextCache;
  clock: Clock;
  ids: IdGenerator;
  agent: Pick<AgentOptions, 'provider'>;
  /** The agent a session's turns run with (DECISIONS §17); absent: `agent`. */
  agents?: { forSession(sessionKey: string): Promise<{ options: Pick<AgentOptions, 'provider'> }> };
  /** Extra chat commands, by name without the slash; a handler checks its own permissions. */
  commands?: Record<string, ChatCommand>;
}

/** The chat command a message is, or null: `/new`, `/status`, or one of `commands`. */
export function commandOf(text: string, commands: Record<string, ChatCommand> | undefined): CommandCall | null {
  const match = /^\/([a-z][a-z0-9_-]*)(?:\s+([\s\S]*))?$/i.exec(text.trim());
  if (!match) return null;
  const name = match[1]!.toLowerCase();
  if (name !== 'new' && name !== 'status' && !commands?.[name]) return null;
  return { name, args: (match[2] ?? '').trim() };
}

/**
 * Runs the chat command of a claimed turn and stores its answer; answers the turn's outcome (to be settled by
 * the caller). `/new` starts a new context epoch; `/status` reports the session (DECISIONS §10); others are
 * registered, and a handler that throws answers with its failure. A store failure ends the turn
 * `interrupted`; anything else releases the turn's events and rejects.
 */
export async function runChatCommand(
  deps: TurnCommandDeps,
  turn: TurnRecord,
  command: CommandCall,
): Promise<AgentOutcome> {
  const { store, hub } = deps;
  const now = () => isoTime(deps.clock.now());
  // A command writes the session's messages (and may start a new epoch) its own way.
  deps.contextCache?.forget(turn.sessionKey);
  try {
    await hub.open(turn.eventId);
    hub.publish(turn.eventId, 'status', { status: 'running' });
    let response: string;
    const handler = deps.commands?.[command.name];
    if (command.name !== 'new' && command.name !== 'status' && handler) {
      const payload = turn.payload as InboundPayload;
      try {
        response = await handler(command.args, {
          platform: payload.platform,
          userId: payload.user_id,
          sessionKey: turn.sessionKey,
        });
      } catch (err) {
        response = `/${command.name} failed: ${(err as Error).message}`;
      }
    } else if (command.name === 'new') {
      const epoch = await store.writer.run((trx) => bumpEpoch(trx, turn.sessionKey, now()));
      response = `Started a new conversation (context epoch ${epoch}).`;
    } else {
      const session = await getSession(store.db, turn.sessionKey);
      const { provider } = deps.agents ? (await deps.agents.forSession(turn.sessionKey)).options : deps.agent;
      response = session
        ? `Session ${session.key}: ${session.messageCount} messages, context epoch ${session.contextEpoch}, ` +
          `agent ${session.agent}, provider ${provider.type}:${provider.model}.`
        : `Session ${turn.sessionKey}: no messages yet.`;
    }
    const messageId = deps.ids.next('msg');
    const at = now();
    const session = await getSession(store.db, turn.sessionKey);
    await store.writer.run(async (trx) => {
      await appendMessage(trx, {
        id: messageId,
        sessionKey: turn.sessionKey,
        contextEpoch: session?.contextEpoch ?? turn.contextEpoch,
        role: 'assistant',
        content: response,
        toolCalls: null,
        toolCallId: null,
        name: null,
        eventId: turn.eventId,
        createdAt: at,
      });
      await touchSession(trx, turn.sessionKey, { now: at, messagesAdded: 1 });
    });
    return { status: 'completed', content: response, messageId, totals: emptyTotals() };
  } catch (err) {
    if (!isStoreUnavailable(err)) {
      hub.release(turn.eventId);
      throw err;
    }
    return storeUnavailableOutcome(emptyTotals());
  }
}
