import type { MessageRecord, SessionRecord } from './sessions.repo.js';

/** Session wire shape (spec variant A). */
export function presentSession(session: SessionRecord): Record<string, unknown> {
  return {
    id: session.key,
    channel: session.channel,
    created_at: session.createdAt,
    last_active: session.lastActive,
    message_count: session.messageCount,
    status: session.status,
    metadata: session.metadata,
    agent: session.agent,
  };
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
