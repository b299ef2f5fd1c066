import type { ExpressionBuilder, Kysely, Selectable, Transaction } from 'kysely';
import { sql } from 'kysely';
import { prepared, preparedSql, type Database, type MessagesTable, type SessionsTable } from '../store/index.js';
import {
  BYTES_PER_TOKEN,
  MESSAGE_OVERHEAD_BYTES,
  sizeEntry,
  type ContextBudget,
  type SizedEntry,
} from './context-budget.js';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** Session status (spec variant A). */
export type SessionStatus = 'active' | 'archived';

/** A live or deleted session, as stored. */
export interface SessionRecord {
  key: string;
  channel: string;
  status: SessionStatus;
  createdAt: string;
  lastActive: string;
  messageCount: number;
  /** Messages of other epochs are outside the model's context and the visible history. */
  contextEpoch: number;
  metadata: Record<string, unknown>;
  /** Set while the session is deleted; repository reads of live sessions never return such a row. */
  deletedAt: string | null;
  /** The agent that runs its turns (DECISIONS §17): decided at creation, never changed. */
  agent: string;
  /** The principal that owns it (DECISIONS §18). */
  principal: string;
  /**
   * The start of the first user message of the current context epoch (at most `TITLE_SOURCE_CHARS`
   * characters), null when there is none; absent where the read did not look (`presentSession` falls back).
   */
  firstUserText?: string | null;
  /** With a `q` search: the newest message of the current epoch whose text matches it. */
  match?: MessageMatch;
}

/** A message matching a session search (`ListSessionsOptions.q`). */
export interface MessageMatch {
  id: string;
  role: string;
  eventId: string | null;
  createdAt: string;
  /** The start of its text (at most `MATCH_SOURCE_CHARS` characters), where the presenter cuts a snippet. */
  text: string;
  /** The text searched for. */
  query: string;
}

/** Characters of the first user message read for a title: enough to cut one, never the whole text. */
export const TITLE_SOURCE_CHARS = 200;

/** Characters of a matching message read for its snippet. */
export const MATCH_SOURCE_CHARS = 2000;

/** Who a new session belongs to and which agent runs it; absent: `main`, owned by `default`. */
export interface SessionOrigin {
  agent?: string;
  principal?: string;
}

/** One message of a session's conversation. */
export interface MessageRecord {
  /** Time-sortable (`msg_…`): ordering by id is chronological within a session. */
  id: string;
  sessionKey: string;
  contextEpoch: number;
  /** `user` | `assistant` | `tool` | `system`. */
  role: string;
  content: string | null;
  toolCalls: unknown[] | null;
  toolCallId: string | null;
  name: string | null;
  /** The turn (inbound event) that produced it. */
  eventId: string | null;
  createdAt: string;
}

/** Keyset position: the last item of the previous page. */
export interface SessionCursor {
  lastActive: string;
  key: string;
}

/** What `listSessions` filters and how much it returns. */
export interface ListSessionsOptions {
  channel?: string | null;
  /** Only the sessions of this principal (DECISIONS §18); absent: every principal's. */
  principal?: string;
  /** Default `all`. */
  status?: SessionStatus | 'all';
  /** Page size, at least 1 (the HTTP layer validates the range). */
  limit: number;
  /** Position after which the page starts; null or absent for the first page. */
  cursor?: SessionCursor | null;
  /**
   * Only sessions with a message of the current context epoch containing this text (case-insensitive for
   * ASCII letters; `%` and `_` match themselves). Each item then carries its newest matching message.
   */
  q?: string | null;
}

/** One page of sessions. */
export interface SessionPage {
  items: SessionRecord[];
  /** Every live session matching the filters, across all pages. */
  total: number;
  hasMore: boolean;
  /** Cursor for the next page (the last item's position); null when `hasMore` is false. */
  nextCursor: SessionCursor | null;
}

const MAX_RACE_RETRIES = 5;

/**
 * Returns the live session `key`, creating it when missing. A deleted key is
 * revived as a fresh session: `deleted_at` cleared, `created_at` and
 * `last_active` = `now`, message count 0, channel and metadata from this call,
 * status active and `context_epoch + 1`, so nothing of its earlier life is in
 * context. A live session is returned unchanged (`channel`/`metadata` ignored).
 *
 * Race-safe across connections and processes: `insert … on conflict do
 * nothing`, then a conditional revive (`where deleted_at is not null`), then a
 * read; if a concurrent delete lands in between, it starts over.
 */
export async function ensureSession(
  ex: Executor,
  input: { key: string; channel: string; metadata?: Record<string, unknown>; now: string } & SessionOrigin,
): Promise<SessionRecord> {
  return (await ensureSessionCreated(ex, input)).session;
}

/**
 * `ensureSession`, also telling whether this call created the session: the
 * key had no row at all, so it never had a turn, message or earlier life
 * (sessions are deleted by marking them, never removed). With `missing` (the
 * caller has just seen no live session under the key) the insert comes
 * first, saving the read that would find nothing; the outcome is the same.
 */
export async function ensureSessionCreated(
  ex: Executor,
  input: { key: string; channel: string; metadata?: Record<string, unknown>; now: string } & SessionOrigin,
  options: { missing?: boolean } = {},
): Promise<{ session: SessionRecord; created: boolean }> {
  if (!options.missing) {
    // The common case — a live session — costs one read.
    const existing = await getSession(ex, input.key);
    if (existing) return { session: existing, created: false };
  }
  const metadata = JSON.stringify(input.metadata ?? {});
  for (let attempt = 0; attempt < MAX_RACE_RETRIES; attempt++) {
    const inserted = await ex
      .insertInto('sessions')
      .values(newSessionRow(input.key, input.channel, metadata, input.now, input))
      .onConflict((oc) => oc.column('key').doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) return { session: toSession(inserted), created: true };

    const revived = await ex
      .updateTable('sessions')
      .set((eb) => ({
        channel: input.channel,
        status: 'active',
        created_at: input.now,
        last_active: input.now,
        message_count: 0,
        context_epoch: eb('context_epoch', '+', 1),
        metadata,
        deleted_at: null,
        agent: input.agent ?? 'main',
        principal: input.principal ?? 'default',
      }))
      .where('key', '=', input.key)
      .where('deleted_at', 'is not', null)
      .returningAll()
      .executeTakeFirst();
    if (revived) return { session: toSession(revived), created: false };

    const live = await getSession(ex, input.key);
    if (live) return { session: live, created: false };
  }
  throw new Error(`ensureSession(${input.key}): the row kept changing under concurrent deletes`);
}

/**
 * Inserts a new session (status active, no messages, epoch 0). Rejects with
 * the driver's unique-violation error when the key exists, deleted or not.
 */
export async function createSession(
  ex: Executor,
  input: { key: string; channel: string; metadata: Record<string, unknown>; now: string } & SessionOrigin,
): Promise<SessionRecord> {
  const row = await ex
    .insertInto('sessions')
    .values(newSessionRow(input.key, input.channel, JSON.stringify(input.metadata), input.now, input))
    .returningAll()
    .executeTakeFirstOrThrow();
  return toSession(row);
}

const liveSession = prepared((ex, input: { key: string }) =>
  ex.selectFrom('sessions').selectAll().where('key', '=', input.key).where('deleted_at', 'is', null),
);

/** The live session `key`, or null when it does not exist or is deleted. */
export async function getSession(ex: Executor, key: string): Promise<SessionRecord | null> {
  const row = await liveSession.first(ex, { key });
  return row ? toSession(row) : null;
}

/**
 * One page of live sessions, most recently active first, ties broken by key
 * (descending, byte order). Keyset pagination on `(last_active, key)`: a
 * session that becomes active between two pages moves to the front and is not
 * repeated; the pages already handed out never shift. `total` counts every
 * match regardless of the cursor. Each item carries the source of its title
 * (`firstUserText`: one indexed row per session, its text cut), and with `q`
 * its newest matching message.
 */
export async function listSessions(ex: Executor, options: ListSessionsOptions): Promise<SessionPage> {
  const status = options.status ?? 'all';
  const pattern = options.q ? likePattern(options.q) : null;
  let filtered = ex.selectFrom('sessions').where('deleted_at', 'is', null);
  if (options.channel != null) filtered = filtered.where('channel', '=', options.channel);
  if (options.principal !== undefined) filtered = filtered.where('principal', '=', options.principal);
  if (status !== 'all') filtered = filtered.where('status', '=', status);
  // A search reads the current-epoch messages of the sessions the other filters keep, each session's through
  // messages_by_session (key, epoch, id); there is no full-text index over messages (the answer is paged).
  if (pattern !== null) filtered = filtered.where((eb) => eb.exists(matching(eb, pattern).select('m.id')));

  let page = filtered.selectAll('sessions').select((eb) =>
    eb
      .selectFrom('messages as m')
      .select(sql<string>`substr(m.content, 1, ${sql.lit(TITLE_SOURCE_CHARS)})`.as('t'))
      .whereRef('m.session_key', '=', 'sessions.key')
      .whereRef('m.context_epoch', '=', 'sessions.context_epoch')
      .where('m.role', '=', 'user')
      .orderBy('m.id')
      .limit(1)
      .as('first_user_text'),
  );
  if (pattern !== null) {
    page = page.select((eb) => matching(eb, pattern).select('m.id').orderBy('m.id', 'desc').limit(1).as('match_id'));
  }
  const cursor = options.cursor;
  if (cursor) {
    page = page.where((eb) => eb(eb.refTuple('last_active', 'key'), '<', eb.tuple(cursor.lastActive, cursor.key)));
  }
  const rows = await page
    .orderBy('last_active', 'desc')
    .orderBy('key', 'desc')
    .limit(options.limit + 1)
    .execute();
  const count = await filtered.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const hasMore = rows.length > options.limit;
  const kept = rows.slice(0, options.limit);
  const matches = await matchesByIds(
    ex,
    kept.flatMap((row) => ('match_id' in row && typeof row.match_id === 'string' ? [row.match_id] : [])),
    options.q ?? '',
  );
  const items = kept.map((row) => {
    const session = toSession(row);
    session.firstUserText = row.first_user_text ?? null;
    const matchId = 'match_id' in row ? row.match_id : null;
    const match = typeof matchId === 'string' ? matches.get(matchId) : undefined;
    if (match) session.match = match;
    return session;
  });
  const last = items.at(-1);
  return {
    items,
    total: Number(count.n),
    hasMore,
    nextCursor: hasMore && last ? { lastActive: last.lastActive, key: last.key } : null,
  };
}

/** The messages of the outer `sessions` row's current epoch whose text matches `pattern` (a LIKE pattern, lower case). */
function matching(eb: ExpressionBuilder<Database, 'sessions'>, pattern: string) {
  return eb
    .selectFrom('messages as m')
    .whereRef('m.session_key', '=', 'sessions.key')
    .whereRef('m.context_epoch', '=', 'sessions.context_epoch')
    .where(sql<boolean>`lower(m.content) like ${pattern} escape '!'`);
}

/** `text` as a case-folded LIKE pattern matching it anywhere, its wildcards escaped (escape character `!`). */
export function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/** The matched messages of one page, by id (their text cut at `MATCH_SOURCE_CHARS`). */
async function matchesByIds(ex: Executor, ids: string[], query: string): Promise<Map<string, MessageMatch>> {
  if (ids.length === 0) return new Map();
  const rows = await ex
    .selectFrom('messages')
    .select([
      'id',
      'role',
      'event_id',
      'created_at',
      sql<string>`substr(content, 1, ${sql.lit(MATCH_SOURCE_CHARS)})`.as('text'),
    ])
    .where('id', 'in', ids)
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      { id: row.id, role: row.role, eventId: row.event_id, createdAt: row.created_at, text: row.text ?? '', query },
    ]),
  );
}

/** The start of the first user message of `epoch` of session `key` (its title's source), or null. */
export async function firstUserText(ex: Executor, key: string, epoch: number): Promise<string | null> {
  const row = await firstUser.first(ex, { key, epoch });
  return row?.t ?? null;
}

const firstUser = prepared((ex, input: { key: string; epoch: number }) =>
  ex
    .selectFrom('messages')
    .select(sql<string>`substr(content, 1, ${sql.lit(TITLE_SOURCE_CHARS)})`.as('t'))
    .where('session_key', '=', input.key)
    .where('context_epoch', '=', input.epoch)
    .where('role', '=', 'user')
    .orderBy('id')
    .limit(1),
);

/**
 * Records activity on a live session: `last_active = now`, `message_count +=
 * messagesAdded`. Returns false when the session is missing or deleted.
 */
export async function touchSession(
  ex: Executor,
  key: string,
  input: { now: string; messagesAdded: number },
): Promise<boolean> {
  return (await touch.affected(ex, { key, now: input.now, added: input.messagesAdded })) > 0;
}

/**
 * `touchSession` that answers the live session's context epoch, or null when
 * the session is missing or deleted (one statement where a read and an update
 * would be two).
 */
export async function touchSessionEpoch(
  ex: Executor,
  key: string,
  input: { now: string; messagesAdded: number },
): Promise<number | null> {
  const row = await touchReturning.first(ex, { key, now: input.now, added: input.messagesAdded });
  return row ? row.context_epoch : null;
}

/**
 * `touchSessionEpoch` that also answers the session's message count after it: one means the message being
 * added is the first of the session's life (a deleted and revived session starts again at zero, in a new
 * epoch), so its context window holds that message alone.
 */
export async function touchSessionCounted(
  ex: Executor,
  key: string,
  input: { now: string; messagesAdded: number },
): Promise<{ epoch: number; messageCount: number } | null> {
  const row = await touchReturning.first(ex, { key, now: input.now, added: input.messagesAdded });
  return row ? { epoch: row.context_epoch, messageCount: row.message_count } : null;
}

const touchReturning = prepared((ex, input: { key: string; now: string; added: number }) =>
  ex
    .updateTable('sessions')
    .set((eb) => ({ last_active: input.now, message_count: eb('message_count', '+', input.added) }))
    .where('key', '=', input.key)
    .where('deleted_at', 'is', null)
    .returning(['context_epoch', 'message_count']),
);

const touch = prepared((ex, input: { key: string; now: string; added: number }) =>
  ex
    .updateTable('sessions')
    .set((eb) => ({ last_active: input.now, message_count: eb('message_count', '+', input.added) }))
    .where('key', '=', input.key)
    .where('deleted_at', 'is', null),
);

/**
 * Deletes a live session: its messages are removed, the row is kept with
 * `deleted_at = now`, `message_count = 0` and `context_epoch + 1` (so the key
 * starts a new context epoch if used again). Memory entries and the turn
 * ledger are not touched. Returns false when it is missing or already deleted.
 * Two statements: run it inside a transaction to make it atomic.
 */
export async function deleteSession(ex: Executor, key: string, now: string): Promise<boolean> {
  const result = await ex
    .updateTable('sessions')
    .set((eb) => ({ deleted_at: now, message_count: 0, context_epoch: eb('context_epoch', '+', 1) }))
    .where('key', '=', key)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  await ex.deleteFrom('messages').where('session_key', '=', key).execute();
  return true;
}

/**
 * Starts a new context epoch on a live session (the `/new` chat command):
 * `context_epoch + 1`, `last_active = now`. Returns the new epoch, or null
 * when the session is missing or deleted. Earlier messages stay stored but
 * leave the context and the visible history.
 */
export async function bumpEpoch(ex: Executor, key: string, now: string): Promise<number | null> {
  const row = await ex
    .updateTable('sessions')
    .set((eb) => ({ context_epoch: eb('context_epoch', '+', 1), last_active: now }))
    .where('key', '=', key)
    .where('deleted_at', 'is', null)
    .returning('context_epoch')
    .executeTakeFirst();
  return row ? row.context_epoch : null;
}

/** Stores one message. Rejects with the driver's unique-violation error on a duplicate id. */
export async function appendMessage(ex: Executor, message: MessageRecord): Promise<void> {
  await insertMessage.run(ex, messageRow(message));
}

/**
 * Stores one message unless a message with its id is stored already (a write
 * repeated after a commit whose outcome was unknown); true when it stored it.
 */
export async function appendMessageOnce(ex: Executor, message: MessageRecord): Promise<boolean> {
  return (await insertMessageOnce.rows(ex, messageRow(message))).length > 0;
}

export type MessageRow = Selectable<MessagesTable>;

/** A message as its table's row (`tool_calls` as JSON text). */
export function messageRow(message: MessageRecord): MessageRow {
  return {
    id: message.id,
    session_key: message.sessionKey,
    context_epoch: message.contextEpoch,
    role: message.role,
    content: message.content,
    tool_calls: message.toolCalls === null ? null : JSON.stringify(message.toolCalls),
    tool_call_id: message.toolCallId,
    name: message.name,
    event_id: message.eventId,
    created_at: message.createdAt,
  };
}

const insertMessage = prepared((ex, row: MessageRow) => ex.insertInto('messages').values(messageValues(row)));
const insertMessageOnce = prepared((ex, row: MessageRow) =>
  ex
    .insertInto('messages')
    .values(messageValues(row))
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id'),
);

/** The row's columns, each read once (a prepared query's inputs are handed to the builder as they are). */
function messageValues(row: MessageRow): MessageRow {
  return {
    id: row.id,
    session_key: row.session_key,
    context_epoch: row.context_epoch,
    role: row.role,
    content: row.content,
    tool_calls: row.tool_calls,
    tool_call_id: row.tool_call_id,
    name: row.name,
    event_id: row.event_id,
    created_at: row.created_at,
  };
}

const contextWindow = prepared((ex, input: { key: string; epoch: number; limit: number }) =>
  ex
    .selectFrom('messages')
    .selectAll()
    .where('session_key', '=', input.key)
    .where('context_epoch', '=', input.epoch)
    .orderBy('id', 'desc')
    .limit(input.limit),
);

/** The newest `limit` messages of `epoch`, oldest first: the model's context window. */
export async function contextMessages(
  ex: Executor,
  key: string,
  epoch: number,
  limit: number,
): Promise<MessageRecord[]> {
  const rows = await contextWindow.rows(ex, { key, epoch, limit });
  return rows.reverse().map(toMessage);
}

/** One message as the model's context needs it (`contextChat`). */
export type ContextEntry = Pick<MessageRecord, 'role' | 'content' | 'toolCalls' | 'toolCallId' | 'name'>;

/** A row of `contextWithin`: the columns a model call needs, the text cut at the cap, and the sizes read. */
type BudgetRow = ContextRow & { content_bytes: number | null; tool_calls_bytes: number | null };

/**
 * The context window's read (ADR 0043): the newest `limit` messages of the epoch are sized from their stored
 * lengths (`octet_length` reads no text on either database), summed newest first, and only those that start
 * within `budget` bytes — or belong to the newest group, the messages from the newest non-tool one on — are
 * read, each text cut at `cap + 1` characters. So the read holds about the budget, never the history.
 */
const contextBudgetRead = preparedSql(
  (input: { key: string; epoch: number; limit: number; cap: number; overhead: number; budget: number }) =>
    sql<BudgetRow>`with recent as (
      select id,
        (case when coalesce(octet_length(content), 0) > cast(${input.cap} as integer) then cast(${input.cap} as integer)
          else coalesce(octet_length(content), 0) end)
          + coalesce(octet_length(tool_calls), 0) + cast(${input.overhead} as integer) as cost,
        case when role = 'tool' then 0 else 1 end as opens
      from messages
      where session_key = ${input.key} and context_epoch = cast(${input.epoch} as integer)
      order by id desc
      limit cast(${input.limit} as integer)
    ),
    sized as (
      select id, cost, sum(cost) over (order by id desc) as used, sum(opens) over (order by id desc) - opens as newer
      from recent
    )
    select m.role, substr(m.content, 1, cast(${input.cap} as integer) + 1) as content,
      octet_length(m.content) as content_bytes, m.tool_calls, octet_length(m.tool_calls) as tool_calls_bytes,
      m.tool_call_id, m.name
    from sized s join messages m on m.id = s.id
    where s.used - s.cost < cast(${input.budget} as integer) or s.newer = 0
    order by m.id`,
);

/**
 * The model's context window of `epoch` within `budget`, oldest first, each message sized and cut at the
 * per-message cap (`fitContext` then picks what is sent). One bounded statement, read before a model call:
 * at most `budget.maxMessages` rows are sized and about `budget.maxTokens` worth of text is read.
 */
export async function contextWithin(
  ex: Executor,
  key: string,
  epoch: number,
  budget: ContextBudget,
): Promise<SizedEntry[]> {
  const cap = budget.maxMessageTokens * BYTES_PER_TOKEN;
  const rows = await contextBudgetRead.rows(ex, {
    key,
    epoch,
    limit: budget.maxMessages,
    cap,
    overhead: MESSAGE_OVERHEAD_BYTES,
    budget: budget.maxTokens * BYTES_PER_TOKEN,
  });
  return rows.map((row) =>
    sizeEntry(toContextEntry(row), budget, Number(row.content_bytes ?? 0), Number(row.tool_calls_bytes ?? 0)),
  );
}

/** The columns of a message the model's context needs, as stored. */
export type ContextRow = Pick<MessageRow, 'role' | 'content' | 'tool_calls' | 'tool_call_id' | 'name'>;

/** A stored message as a context entry (`tool_calls` parsed). */
export function toContextEntry(row: ContextRow): ContextEntry {
  return {
    role: row.role,
    content: row.content,
    toolCalls: row.tool_calls === null ? null : (JSON.parse(row.tool_calls) as unknown[]),
    toolCallId: row.tool_call_id,
    name: row.name,
  };
}

/** Bytes of message text one page of history carries at most (ADR 0043); the newest message always comes. */
export const HISTORY_MAX_BYTES = 4 * 1024 * 1024;

/**
 * One page of history: the newest `limit` messages of the epoch, sized from their stored lengths
 * (`octet_length` reads no text), and only those starting within `budget` bytes read — newest first, so the
 * newest message always comes, however large.
 */
const historyPage = preparedSql(
  (input: { key: string; epoch: number; limit: number; budget: number }) =>
    sql<Selectable<MessagesTable>>`with recent as (
      select id, coalesce(octet_length(content), 0) + coalesce(octet_length(tool_calls), 0) as size
      from messages
      where session_key = ${input.key} and context_epoch = cast(${input.epoch} as integer)
      order by id desc
      limit cast(${input.limit} as integer)
    ),
    sized as (select id, size, sum(size) over (order by id desc) as used from recent)
    select m.* from sized s join messages m on m.id = s.id
    where s.used - s.size < cast(${input.budget} as integer)
    order by m.id`,
);

/**
 * The visible history: the newest `limit` messages of `epoch` in
 * chronological order, within `HISTORY_MAX_BYTES` of text (fewer when the
 * newest are large: `items.length` says how many came), and `total`, the
 * number of messages in that epoch.
 */
export async function history(
  ex: Executor,
  key: string,
  epoch: number,
  limit: number,
  maxBytes = HISTORY_MAX_BYTES,
): Promise<{ items: MessageRecord[]; total: number }> {
  const rows = await historyPage.rows(ex, { key, epoch, limit, budget: maxBytes });
  const items = rows.map(toMessage);
  const count = await ex
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('session_key', '=', key)
    .where('context_epoch', '=', epoch)
    .executeTakeFirstOrThrow();
  return { items, total: Number(count.n) };
}

/** Live sessions: all of them, and those with status active (health report). */
export async function countSessions(ex: Executor): Promise<{ total: number; active: number }> {
  const row = await ex
    .selectFrom('sessions')
    .select((eb) => [
      eb.fn.countAll<number>().as('total'),
      eb.fn.count<number>(eb.case().when('status', '=', 'active').then(eb.lit(1)).end()).as('active'),
    ])
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return { total: Number(row.total), active: Number(row.active) };
}

/** Live sessions per agent; of one principal's only when `principal` is given. */
export async function countSessionsByAgent(ex: Executor, principal?: string): Promise<Map<string, number>> {
  let query = ex
    .selectFrom('sessions')
    .select((eb) => ['agent', eb.fn.countAll<number>().as('n')])
    .where('deleted_at', 'is', null)
    .groupBy('agent');
  if (principal !== undefined) query = query.where('principal', '=', principal);
  const rows = await query.execute();
  return new Map(rows.map((row) => [row.agent, Number(row.n)]));
}

/** The row of a new session (status active, no messages, epoch 0) as `ensureSession` inserts it. */
export function newSessionRow(
  key: string,
  channel: string,
  metadata: string,
  now: string,
  origin: SessionOrigin,
): Selectable<SessionsTable> {
  return {
    agent: origin.agent ?? 'main',
    principal: origin.principal ?? 'default',
    key,
    channel,
    status: 'active',
    created_at: now,
    last_active: now,
    message_count: 0,
    context_epoch: 0,
    metadata,
    deleted_at: null,
  };
}

/** A session row as the repository answers it. */
export function sessionOf(row: Selectable<SessionsTable>): SessionRecord {
  return toSession(row);
}

function toSession(row: Selectable<SessionsTable>): SessionRecord {
  return {
    key: row.key,
    channel: row.channel,
    status: row.status as SessionStatus,
    createdAt: row.created_at,
    lastActive: row.last_active,
    messageCount: row.message_count,
    contextEpoch: row.context_epoch,
    metadata: parseObject(row.metadata),
    deletedAt: row.deleted_at,
    agent: row.agent,
    principal: row.principal,
  };
}

function toMessage(row: Selectable<MessagesTable>): MessageRecord {
  return {
    id: row.id,
    sessionKey: row.session_key,
    contextEpoch: row.context_epoch,
    role: row.role,
    content: row.content,
    toolCalls: row.tool_calls === null ? null : (JSON.parse(row.tool_calls) as unknown[]),
    toolCallId: row.tool_call_id,
    name: row.name,
    eventId: row.event_id,
    createdAt: row.created_at,
  };
}

function parseObject(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
