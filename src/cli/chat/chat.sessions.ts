import { randomBytes } from 'node:crypto';
import type { ClientTarget } from '../target.js';
import { findSession, listSessions, sessionHistory, type SessionView } from './chat.api.js';
import { isSessionKey } from './chat.commands.js';
import { historyLines, localTime, sessionsTable } from './chat.render.js';
import type { Turn } from './chat.turns.js';

/**
 * The chat's sessions: a fresh key for a new one, the list of recent ones (/sessions), switching to one by key or
 * by its number in that list (/switch), and the last few history entries of a session the chat enters.
 */

/** History entries shown when a chat starts in, or switches to, an existing session. */
const HISTORY_SHOWN = 6;

/** What the session commands need of the chat. */
export interface SessionChat {
  readonly target: ClientTarget;
  /** Colour and styles. */
  readonly colour: boolean;
  /** The terminal's width in columns. */
  readonly width: number;
  /** The session new messages go to. */
  sessionKey: string;
  /** The sessions /sessions showed last, numbered from 1 for /switch. */
  lastSessions: SessionView[];
  /** The agent asked a question in the session: the next message answers it. */
  answering: boolean;
  /** The turn running, if any: its reply belongs to the session it was sent in. */
  readonly current: Turn | null;
  print(text: string): void;
  notice(text: string): void;
}

/** A fresh session key: `gateway:cli:<12 random base32 characters>`. */
export function newSessionKey(): string {
  const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
  const bytes = randomBytes(12);
  let id = '';
  for (const byte of bytes) id += alphabet[byte % 32]!;
  return `gateway:cli:${id}`;
}

/** /new: moves the chat to a fresh session (refused while a turn runs). */
export function startNewSession(chat: SessionChat): void {
  if (refuseWhileBusy(chat)) return;
  chat.sessionKey = newSessionKey();
  chat.answering = false;
  chat.notice(`new session ${chat.sessionKey}`);
}

/** /sessions: lists the recent sessions, numbered for /switch. Rejects when the API call fails. */
export async function showSessions(chat: SessionChat): Promise<void> {
  chat.lastSessions = await listSessions(chat.target);
  chat.print(sessionsTable(chat.colour, chat.lastSessions, chat.sessionKey));
}

/**
 * /switch <key|n>: moves the chat to a session by key, or by its number in the last /sessions list, and shows its
 * last entries (refused while a turn runs). Rejects when looking the session up fails.
 */
export async function switchSession(chat: SessionChat, args: string): Promise<void> {
  if (refuseWhileBusy(chat)) return;
  const index = /^\d+$/.test(args) ? Number(args) : null;
  const key = index !== null ? chat.lastSessions[index - 1]?.id : args;
  if (!key) {
    chat.notice(index !== null ? `no session number ${index}: run /sessions first` : 'usage: /switch <key|n>');
    return;
  }
  if (!isSessionKey(key)) {
    chat.notice(`not a session key: ${key} (keys start with "gateway:")`);
    return;
  }
  chat.sessionKey = key;
  chat.answering = false;
  const session = await findSession(chat.target, key);
  chat.notice(
    session
      ? `session ${key}: ${session.message_count} messages, last active ${localTime(session.last_active)}`
      : `session ${key}: no messages yet`,
  );
  if (session) await showHistory(chat, key);
}

/** Shows the last few history entries of session `key`; a failure to fetch them is a notice, never a rejection. */
export async function showHistory(chat: SessionChat, key: string): Promise<void> {
  try {
    const entries = await sessionHistory(chat.target, key, HISTORY_SHOWN);
    for (const line of historyLines(chat.colour, entries, chat.width - 8)) chat.print(line);
  } catch (err) {
    chat.notice(`no history: ${(err as Error).message}`);
  }
}

/** Refuses a session change while a turn runs (its reply belongs to the session it was sent in). */
function refuseWhileBusy(chat: SessionChat): boolean {
  if (!chat.current) return false;
  chat.notice('a turn is running: wait for it, or /interrupt it first');
  return true;
}
