import type { MessageMatch, MessageRecord, SessionRecord } from './sessions.repo.js';

/** Characters a session title keeps (a longer first message is cut at a word and ends with `…`). */
export const TITLE_CHARS = 60;

/** Characters of a search match's snippet. */
export const SNIPPET_CHARS = 160;

/** Session wire shape (spec variant A, plus `title`; `match` only on a search). */
export function presentSession(session: SessionRecord): Record<string, unknown> {
  return {
    id: session.key,
    title: sessionTitle(session),
    channel: session.channel,
    created_at: session.createdAt,
    last_active: session.lastActive,
    message_count: session.messageCount,
    status: session.status,
    metadata: session.metadata,
    agent: session.agent,
    ...(session.match ? { match: presentMatch(session.match) } : {}),
  };
}

/**
 * A readable name for a session: its first user message on one line, cut to `TITLE_CHARS`; without one,
 * `<platform> · <user>` from its key (`gateway:<platform>[@<principal>]:<chat_id>`), else the key itself.
 */
export function sessionTitle(session: Pick<SessionRecord, 'key' | 'firstUserText'>): string {
  const text = (session.firstUserText ?? '').replace(/\s+/g, ' ').trim();
  if (text) return cut(text, TITLE_CHARS);
  const parts = /^gateway:([^:@]+)(?:@[^:]*)?:(.+)$/.exec(session.key);
  return parts ? `${parts[1]} · ${parts[2]}` : session.key;
}

/** `text` cut to at most `max` characters, at a word boundary when one is near, with `…` when cut. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max - 1);
  const space = head.lastIndexOf(' ');
  return `${(space > max / 2 ? head.slice(0, space) : head).trimEnd()}…`;
}

/** The matched message on the wire: where it is (`event_id` names its turn) and a snippet around the match. */
function presentMatch(match: MessageMatch): Record<string, unknown> {
  return {
    message_id: match.id,
    role: match.role,
    event_id: match.eventId,
    created_at: match.createdAt,
    snippet: snippet(match.text, match.query),
  };
}

/** About `SNIPPET_CHARS` of `text` on one line around the first occurrence of `query` (its start when not found). */
export function snippet(text: string, query: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const at = query ? flat.toLowerCase().indexOf(query.toLowerCase().replace(/\s+/g, ' ')) : -1;
  const start = at <= 40 ? 0 : at - 40;
  const piece = flat.slice(start, start + SNIPPET_CHARS);
  return `${start > 0 ? '…' : ''}${piece}${start + SNIPPET_CHARS < flat.length ? '…' : ''}`;
}

/** History entry wire shape (DECISIONS §5). */
export function presentHistoryEntry(message: MessageRecord): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    id: message.id,
    role: message.role,
    content: message.content,
    created_at: message.createdAt,
    event_id: message.eventId,
  };
  if (message.toolCalls) entry.tool_calls = message.toolCalls;
  if (message.toolCallId) entry.tool_call_id = message.toolCallId;
  if (message.name) entry.name = message.name;
  return entry;
}

/** Opaque cursor for session pagination. */
export function encodeCursor(cursor: { lastActive: string; key: string }): string {
  return Buffer.from(JSON.stringify([cursor.lastActive, cursor.key]), 'utf8').toString('base64url');
}

/** Decodes a cursor; null when it is not one of ours. */
export function decodeCursor(text: string): { lastActive: string; key: string } | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string') {
      return { lastActive: value[0], key: value[1] };
    }
  } catch {
    /* fall through */
  }
  return null;
}
