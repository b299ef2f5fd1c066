import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import {
  BYTES_PER_TOKEN,
  MESSAGE_OVERHEAD_BYTES,
  messageRow,
  sizeEntry,
  toContextEntry,
  type ContextBudget,
  type ContextRow,
  type MessageRecord,
  newSessionRow,
  sessionOf,
  type SessionOrigin,
  type SessionRecord,
  type SizedEntry,
} from '../sessions/index.js';
import { preparedSql, type Database, type SessionsTable, type TurnsTable } from '../store/index.js';
import { usageRow, type UsageInput } from '../usage/index.js';
import { TERMINAL_STATUSES, type TerminalTurnStatus } from './turn-status.js';
import { acceptParams, toTurn, type AcceptRow, type TurnRecord } from './turns.repo.js';

/**
 * The turn path's writes on PostgreSQL, each folded into one statement
 * (ADR 0032). Every statement there is a round trip to the server, and a turn
 * made about 27 of them; these do the same work in about half as many. Each
 * is the exact equivalent of the builder statements it replaces (which SQLite,
 * in process and without data-modifying CTEs, keeps running one by one).
 */

/** `store.db`, a transaction, or a group-commit `trx`. */
type Executor = Kysely<Database> | Transaction<Database>;

const TERMINAL = sql.join(TERMINAL_STATUSES.map((status) => sql.lit(status)));

/**
 * The accepted turn of a live session: its row inserted with the session's
 * context epoch, in one statement where reading the session and inserting
 * the turn took two. Null when the session is missing or deleted, or the
 * event is in the ledger already: the caller takes the general path.
 */
export async function acceptIntoLiveSession(ex: Executor, input: AcceptRow): Promise<TurnRecord | null> {
  const row = await accept.first(ex, acceptParams(input));
  return row ? toTurn(row) : null;
}

/**
 * The accepted turn of a session created with it: the session inserted (when its key has no row, live or
 * deleted) and the turn with the new session's context epoch, in one statement where inserting the session and
 * the turn took two. Null when the key has a row: the caller takes the general path (read, revive). The turn's
 * seq is null when the event is in the ledger already.
 */
export async function acceptIntoNewSession(
  ex: Executor,
  input: {
    eventId: string;
    payload: unknown;
    owner: string | null;
    now: string;
    session: { key: string; channel: string; now: string } & SessionOrigin;
  },
): Promise<{ session: SessionRecord; seq: number | null } | null> {
  const row = newSessionRow(input.session.key, input.session.channel, '{}', input.session.now, input.session);
  const created = await acceptNew.first(ex, {
    ...row,
    eventId: input.eventId,
    payload: JSON.stringify(input.payload ?? null),
    owner: input.owner,
    now: input.now,
  });
  if (!created) return null;
  const { turn_seq: seq, ...session } = created;
  return { session: sessionOf(session), seq };
}

const acceptNew = preparedSql(
  (input: Selectable<SessionsTable> & { eventId: string; payload: string; owner: string | null; now: string }) => sql<
    Selectable<SessionsTable> & { turn_seq: number | null }
  >`with s as (
      insert into sessions (agent, principal, key, channel, status, created_at, last_active, message_count,
        context_epoch, metadata, deleted_at)
      values (${input.agent}::text, ${input.principal}::text, ${input.key}::text, ${input.channel}::text,
        ${input.status}::text, ${input.created_at}::text, ${input.last_active}::text, ${input.message_count}::integer,
        ${input.context_epoch}::integer, ${input.metadata}::text, ${input.deleted_at}::text)
      on conflict (key) do nothing
      returning *
    ), t as (
      insert into turns (event_id, session_key, status, context_epoch, accepted_at, updated_at, payload, owner)
      select ${input.eventId}::text, s.key, 'accepted', s.context_epoch, ${input.now}::text, ${input.now}::text,
        ${input.payload}::text, ${input.owner}::text
      from s
      on conflict (event_id) do nothing
      returning seq
    )
    select s.*, t.seq as turn_seq from s left join t on true`,
);

const accept = preparedSql(
  (input: {
    eventId: string;
    sessionKey: string;
    ownerScope: string | null;
    payload: string;
    owner: string | null;
    now: string;
  }) => sql<
    Selectable<TurnsTable>
  >`insert into turns (event_id, session_key, status, context_epoch, accepted_at, updated_at, payload, owner)
    select ${input.eventId}::text, s.key, 'accepted', s.context_epoch, ${input.now}::text, ${input.now}::text,
      ${input.payload}::text, ${input.owner}::text
    from sessions s where s.key = ${input.sessionKey}::text and s.deleted_at is null
      and (${input.ownerScope}::text is null or s.principal = ${input.ownerScope}::text)
    on conflict (event_id) do nothing
    returning *`,
);

/** What the first statement of a claim found: the session's lock, its paused turns and the turn itself. */
export interface ClaimGate {
  /** The session's advisory lock is this transaction's (ADR 0029); false: another claim holds it. */
  locked: boolean;
  /** The turn's ledger seq and status, or null when it is not in the ledger. */
  self: { seq: number; status: string } | null;
  /** The oldest turn of the session waiting for approval, and for clarification. */
  approval: TurnRecord | null;
  clarification: TurnRecord | null;
}

/**
 * Takes the session's claim lock (never waited for) and reads what a claim
 * decides on besides the lock: the session's paused turns and the turn's own
 * seq and status. The reads see the database as the statement began; the
 * check that must see every earlier lock holder's commit (`claimIfFree`) is
 * the next statement.
 */
export async function lockSessionForClaim(
  ex: Executor,
  input: { sessionKey: string; eventId: string },
): Promise<ClaimGate> {
  const rows = await gate.rows(ex, { lock: `session:${input.sessionKey}:`, ...input });
  const first = rows[0];
  const waiting = rows
    .filter((row) => row.event_id !== null)
    .map((row) => toTurn(row as Selectable<TurnsTable>))
    .sort((a, b) => a.seq - b.seq);
  return {
    locked: first?.locked === true,
    self: first?.self_seq != null ? { seq: Number(first.self_seq), status: first.self_status! } : null,
    approval: waiting.find((t) => t.status === 'waiting_approval') ?? null,
    clarification: waiting.find((t) => t.status === 'waiting_clarification') ?? null,
  };
}

type GateRow = { locked: boolean; self_seq: string | number | null; self_status: string | null } & {
  [K in keyof Selectable<TurnsTable>]: Selectable<TurnsTable>[K] | null;
};

const gate = preparedSql(
  (input: { lock: string; sessionKey: string; eventId: string }) => sql<GateRow>`select l.locked,
      me.seq as self_seq, me.status as self_status, w.*
    from (select pg_try_advisory_xact_lock(hashtext(${input.lock}::text || coalesce(current_schema(), ''))) as locked) l
    left join lateral (select seq, status from turns where event_id = ${input.eventId}::text) me on true
    left join lateral (
      select * from turns
      where session_key = ${input.sessionKey}::text and status in ('waiting_approval', 'waiting_clarification')
    ) w on true`,
);

/**
 * Claims the accepted turn for `owner` unless the session is busy: another of
 * its turns runs, or an earlier one is still accepted (one statement, run
 * after the session's lock is held, so it sees every earlier claim).
 */
export async function claimIfFree(
  ex: Executor,
  input: { sessionKey: string; eventId: string; owner: string; now: string },
): Promise<{ busy: boolean; claimed: TurnRecord | null }> {
  const row = await claimFree.first(ex, input);
  if (!row) return { busy: false, claimed: null };
  const { busy, ...turn } = row;
  return { busy, claimed: turn.event_id === null ? null : toTurn(turn as Selectable<TurnsTable>) };
}

type ClaimRow = { busy: boolean } & { [K in keyof Selectable<TurnsTable>]: Selectable<TurnsTable>[K] | null };

const claimFree = preparedSql(
  (input: { sessionKey: string; eventId: string; owner: string; now: string }) => sql<ClaimRow>`with b as materialized (
      select exists (
        select 1 from turns t
        where t.session_key = ${input.sessionKey}::text and t.event_id <> ${input.eventId}::text
          and (t.status = 'running' or (t.status = 'accepted'
            and t.seq < (select me.seq from turns me where me.event_id = ${input.eventId}::text)))
      ) as busy
    ),
    c as (
      update turns set status = 'running', started_at = ${input.now}::text, owner = ${input.owner}::text,
        updated_at = ${input.now}::text
      where event_id = ${input.eventId}::text and status = 'accepted' and not (select busy from b)
      returning *
    )
    select b.busy, c.* from b left join c on true`,
);

/**
 * The claimed turn's user message and first event (`status` running, number
 * 1), and the session counting the message: one statement, which also reads
 * the model's context window within `budget` (as `contextWithin` reads it:
 * sized from stored lengths, only what fits read, each text cut at the
 * per-message cap), the new message added last, oldest first.
 * Null (nothing written) when the session is missing or deleted.
 */
export async function recordClaimedMessage(
  ex: Executor,
  input: {
    message: Omit<MessageRecord, 'contextEpoch'>;
    event: { type: string; data: unknown };
    window: ContextBudget;
  },
): Promise<{ epoch: number; window: SizedEntry[] } | null> {
  const { message } = input;
  const cap = input.window.maxMessageTokens * BYTES_PER_TOKEN;
  const rows = await claimedMessage.rows(ex, {
    id: message.id,
    sessionKey: message.sessionKey,
    role: message.role,
    content: message.content,
    eventId: message.eventId!,
    now: message.createdAt,
    type: input.event.type,
    data: JSON.stringify(input.event.data ?? null),
    limit: input.window.maxMessages,
    cap,
    overhead: MESSAGE_OVERHEAD_BYTES,
    budget: input.window.maxTokens * BYTES_PER_TOKEN,
  });
  if (rows.length === 0) return null;
  // The statement sees the messages as they were before it: the new one joins the window in id order.
  const entries = rows
    .filter((row) => row.id !== null)
    .map((row) => ({
      id: row.id!,
      sized: sizeEntry(
        toContextEntry(row as ContextRow),
        input.window,
        Number(row.content_bytes ?? 0),
        Number(row.tool_calls_bytes ?? 0),
      ),
    }));
  const entry = { role: message.role, content: message.content, toolCalls: null, toolCallId: null, name: null };
  entries.push({ id: message.id, sized: sizeEntry(entry, input.window) });
  entries.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const window = entries.map((e) => e.sized);
  return { epoch: rows[0]!.context_epoch, window };
}

const claimedMessage = preparedSql(
  (input: {
    id: string;
    sessionKey: string;
    role: string;
    content: string | null;
    eventId: string;
    now: string;
    type: string;
    data: string;
    limit: number;
    cap: number;
    overhead: number;
    budget: number;
  }) => sql<
    { context_epoch: number; id: string | null; content_bytes: number | null; tool_calls_bytes: number | null } & {
      [K in keyof ContextRow]: ContextRow[K] | null;
    }
  >`with s as (
      update sessions set last_active = ${input.now}::text, message_count = message_count + 1
      where key = ${input.sessionKey}::text and deleted_at is null
      returning context_epoch
    ),
    m as (
      insert into messages (id, session_key, context_epoch, role, content, tool_calls, tool_call_id, name, event_id, created_at)
      select ${input.id}::text, ${input.sessionKey}::text, s.context_epoch, ${input.role}::text, ${input.content}::text,
        null, null, null, ${input.eventId}::text, ${input.now}::text
      from s
    ),
    e as (
      insert into turn_events (event_id, seq, type, data, created_at)
      select ${input.eventId}::text, 1, ${input.type}::text, ${input.data}::text, ${input.now}::text from s
    )
    select s.context_epoch, w.id, w.role, w.content, w.content_bytes, w.tool_calls, w.tool_calls_bytes,
      w.tool_call_id, w.name
    from s left join lateral (
      with recent as (
        select id,
          least(coalesce(octet_length(content), 0), ${input.cap}::integer)
            + coalesce(octet_length(tool_calls), 0) + ${input.overhead}::integer as cost,
          case when role = 'tool' then 0 else 1 end as opens
        from messages
        where session_key = ${input.sessionKey}::text and context_epoch = s.context_epoch
        order by id desc limit ${input.limit}::integer
      ),
      sized as (
        select id, cost, sum(cost) over (order by id desc) as used, sum(opens) over (order by id desc) - opens as newer
        from recent
      )
      select mm.id, mm.role, substr(mm.content, 1, ${input.cap}::integer + 1) as content,
        octet_length(mm.content) as content_bytes, mm.tool_calls, octet_length(mm.tool_calls) as tool_calls_bytes,
        mm.tool_call_id, mm.name
      from sized z join messages mm on mm.id = z.id
      where z.used - z.cost < ${input.budget}::integer or z.newer = 0
    ) w on true`,
);

/**
 * Ends a turn this gateway holds, with everything its outcome commits, in one
 * statement: the terminal status (first one wins, and only while `owner`
 * holds it: the fence of ADR 0029), the staged messages (each once, counted
 * on their session) and usage rows (each once), the start of its idempotency
 * records' TTL and its final event (once). Null, with nothing written, when
 * the turn has ended or another gateway holds it.
 */
export async function finishHeldTurn(
  ex: Executor,
  input: {
    eventId: string;
    owner: string;
    status: TerminalTurnStatus;
    response: string | null;
    terminationReason: string | null;
    result: unknown;
    messages: readonly MessageRecord[];
    usage: readonly UsageInput[];
    idempotencyExpiresAt: string;
    event: { seq: number; type: string; data: unknown };
    now: string;
  },
): Promise<TurnRecord | null> {
  const row = await finishHeld.first(ex, {
    eventId: input.eventId,
    owner: input.owner,
    status: input.status,
    response: input.response,
    reason: input.terminationReason,
    result: input.result === null || input.result === undefined ? null : JSON.stringify(input.result),
    messages: JSON.stringify(input.messages.map(messageRow)),
    usage: JSON.stringify(input.usage.map(usageRow)),
    expiresAt: input.idempotencyExpiresAt,
    seq: input.event.seq,
    type: input.event.type,
    data: JSON.stringify(input.event.data ?? null),
    now: input.now,
  });
  return row ? toTurn(row) : null;
}

const finishHeld = preparedSql(
  (input: {
    eventId: string;
    owner: string;
    status: string;
    response: string | null;
    reason: string | null;
    result: string | null;
    messages: string;
    usage: string;
    expiresAt: string;
    seq: number;
    type: string;
    data: string;
    now: string;
  }) => sql<Selectable<TurnsTable>>`with t as (
      update turns set status = ${input.status}::text, response = ${input.response}::text,
        termination_reason = ${input.reason}::text, result = ${input.result}::text, current_tool = null, pending = null,
        finished_at = ${input.now}::text, updated_at = ${input.now}::text
      where event_id = ${input.eventId}::text and status not in (${TERMINAL}) and owner = ${input.owner}::text
      returning *
    ),
    m as (
      insert into messages (id, session_key, context_epoch, role, content, tool_calls, tool_call_id, name, event_id, created_at)
      select x.id, x.session_key, x.context_epoch, x.role, x.content, x.tool_calls, x.tool_call_id, x.name, x.event_id,
        x.created_at
      from t, jsonb_to_recordset(${input.messages}::jsonb) as x(id text, session_key text, context_epoch integer,
        role text, content text, tool_calls text, tool_call_id text, name text, event_id text, created_at text)
      on conflict (id) do nothing
      returning session_key
    ),
    s as (
      update sessions set last_active = ${input.now}::text, message_count = message_count + a.added
      from (select session_key, count(*) as added from m group by session_key) a
      where sessions.key = a.session_key and sessions.deleted_at is null
    ),
    u as (
      insert into usage_records (id, event_id, session_key, channel, model, input_tokens, output_tokens, cost_nano_usd,
        created_at)
      select x.id, x.event_id, x.session_key, x.channel, x.model, x.input_tokens, x.output_tokens, x.cost_nano_usd,
        x.created_at
      from t, jsonb_to_recordset(${input.usage}::jsonb) as x(id text, event_id text, session_key text, channel text,
        model text, input_tokens integer, output_tokens integer, cost_nano_usd bigint, created_at text)
      on conflict (id) do nothing
    ),
    i as (
      update idempotency_records set expires_at = ${input.expiresAt}::text
      where event_id = ${input.eventId}::text and expires_at is null and exists (select 1 from t)
    ),
    e as (
      insert into turn_events (event_id, seq, type, data, created_at)
      select ${input.eventId}::text, ${input.seq}::integer, ${input.type}::text, ${input.data}::text, ${input.now}::text
      from t
      on conflict (event_id, seq) do nothing
    )
    select * from t`,
);

/** Stores turn events (numbers unique per turn) in one statement: the streamed events of one writer batch. */
export async function appendTurnEvents(
  ex: Executor,
  events: ReadonlyArray<{ eventId: string; seq: number; type: string; data: unknown; now: string }>,
): Promise<void> {
  const rows = events.map((e) => ({
    event_id: e.eventId,
    seq: e.seq,
    type: e.type,
    data: JSON.stringify(e.data ?? null),
    created_at: e.now,
  }));
  await insertEvents.run(ex, { rows: JSON.stringify(rows) });
}

const insertEvents = preparedSql(
  (input: { rows: string }) => sql`insert into turn_events (event_id, seq, type, data, created_at)
    select x.event_id, x.seq, x.type, x.data, x.created_at
    from jsonb_to_recordset(${input.rows}::jsonb) as x(event_id text, seq integer, type text, data text, created_at text)`,
);
