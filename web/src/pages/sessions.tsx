/**
 * Sessions (`#/sessions`): the sessions filtered by channel and status (an admin also by the principal owning
 * them, `?principal=`, DECISIONS §18), or found by the text of their messages (`q`), each named by its title
 * (the first user message; the key on hover) with the agent that runs its turns, and for the one opened its
 * history and (admin) its turn ledger. Deep links: `#/sessions?key=<key>` opens a session and `&turn=<event_id>`
 * scrolls to and marks that turn's messages; opening a session writes its link into the address. The turn inspector draws a turn's events as a timeline (status changes,
 * tool calls and results, the reply, timings, the termination reason) from `GET /turns/{id}/events`, and keeps
 * following a turn still running. Delete (two steps) removes a session. The list and the open session follow
 * the live `sessions` and `turns` topics.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { TERMINAL, type Schemas, type Turn } from '../api';
import { describeError, must } from '../errors';
import type { PageProps } from '../page';
import { readStream, type StreamEvent } from '../sse';
import { Badge, Empty, ErrorBox, Time, useLive, useLoad, useThrottled, usd } from '../ui';
import { Highlighted, queryTokens } from '../ui/highlight';
import { Table } from '../ui/table';
import { replaceHashQuery, useHashQuery } from '../ui/hash-query';
import './sessions/sessions.css';

type Session = Schemas['Session'];

/** The link that opens session `key` (and marks turn `turn`) on this page. */
export function sessionLink(key: string, turn?: string | null): string {
  const query = new URLSearchParams({ key });
  if (turn) query.set('turn', turn);
  return `#/sessions?${query.toString()}`;
}

/** Milliseconds the search waits after the last keystroke before it asks the server. */
const SEARCH_DELAY_MS = 300;

type StatusFilter = 'active' | 'archived' | 'all';

/** Milliseconds between two ISO times as text (`1.24 s`), or a dash. */
function duration(from: string | null | undefined, to: string | null | undefined): string {
  if (!from || !to) return '—';
  const ms = new Date(to).getTime() - new Date(from).getTime();
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** One row of the timeline. */
interface TimelineItem {
  key: string;
  label: string;
  detail?: string;
  /** When the dashboard received it (events carry no time of their own). */
  at: string;
}

/** The protocols a turn's message may come in through, as people name them (others show as the ledger has them). */
const SOURCE_LABELS: Record<string, string> = {
  openai: 'OpenAI chat completions (/v1/chat/completions)',
  responses: 'OpenAI Responses API (/v1/responses)',
  mcp: 'MCP',
  a2a: 'A2A (Agent2Agent, /a2a)',
  websocket: 'WebSocket',
};

/** How the inspector names where a turn came in. */
function sourceLabel(source: string | null | undefined): string {
  if (!source) return '—';
  return SOURCE_LABELS[source] ?? source;
}

/** The turn inspector: the ledger record's timings and the turn's events, followed while it runs. */
function TurnInspector({
  eventId,
  token,
  api,
  onClose,
}: { eventId: string } & Pick<PageProps, 'token' | 'api'> & {
    onClose: () => void;
  }) {
  const record = useLoad(
    () => must(api.GET('/api/v1/turns/{event_id}', { params: { path: { event_id: eventId } } })),
    [eventId],
  );
  const [items, setItems] = useState<TimelineItem[]>([]);
  const [reply, setReply] = useState('');
  const [following, setFollowing] = useState(true);
  const [streamError, setStreamError] = useState<{ message: string; requestId?: string }>();
  const heading = useRef<HTMLHeadingElement>(null);

  useEffect(() => heading.current?.focus(), [eventId]);
  useEffect(() => {
    const controller = new AbortController();
    setItems([]);
    setReply('');
    setFollowing(true);
    setStreamError(undefined);
    let requestId: string | undefined;
    const add = (event: StreamEvent) => {
      const data = (event.data ?? {}) as Record<string, unknown>;
      const at = new Date().toISOString();
      const key = event.id ?? `${event.event}-${at}`;
      switch (event.event) {
        case 'delta':
          setReply((text) => text + (typeof data.content === 'string' ? data.content : ''));
          return;
        case 'status':
          setItems((list) => [...list, { key, at, label: `Status: ${String(data.status)}` }]);
          break;
        case 'tool_call':
          setItems((list) => [
            ...list,
            { key, at, label: `Tool call: ${String(data.name)}`, detail: String(data.arguments) },
          ]);
          break;
        case 'tool_result':
          setItems((list) => [
            ...list,
            {
              key,
              at,
              label: `Tool result: ${String(data.name)}`,
              detail: typeof data.result === 'string' ? data.result : JSON.stringify(data.result),
            },
          ]);
          break;
        case 'done': {
          const cost = (data.cost ?? {}) as { total_usd?: number; input_tokens?: number; output_tokens?: number };
          setItems((list) => [
            ...list,
            {
              key,
              at,
              label: `Done: ${String(data.status)}`,
              detail: `${cost.input_tokens ?? 0} input + ${cost.output_tokens ?? 0} output tokens, ${usd(cost.total_usd)}`,
            },
          ]);
          break;
        }
        case 'error':
          setItems((list) => [
            ...list,
            { key, at, label: `Error: ${String(data.code)}`, detail: String(data.message) },
          ]);
          break;
        default:
          setItems((list) => [...list, { key, at, label: event.event }]);
      }
      if (event.event === 'done' || event.event === 'error' || event.event === 'status') record.reload();
    };
    readStream(
      {
        path: `/api/v1/turns/${encodeURIComponent(eventId)}/events`,
        token,
        signal: controller.signal,
        onOpen: (rid) => (requestId = rid),
      },
      add,
    ).then(
      () => {
        setFollowing(false);
        record.reload();
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setFollowing(false);
        setStreamError({ requestId, ...describeError(error) });
      },
    );
    return () => controller.abort();
    // `record.reload` is stable.
  }, [eventId, token]);

  const turn: Turn | undefined = record.data;
  return (
    <section class="card" aria-labelledby="inspector-title">
      <div class="actions spread">
        <h3 id="inspector-title" tabIndex={-1} ref={heading}>
          Turn <code>{eventId}</code>
        </h3>
        <button type="button" class="secondary" onClick={onClose}>
          Close inspector
        </button>
      </div>
      {record.error !== undefined && <ErrorBox error={record.error} />}
      {turn && (
        <dl class="grid turn-facts">
          <div>
            <dt class="muted">Status</dt>
            <dd>
              <Badge status={turn.status} /> {following && !TERMINAL.has(turn.status) && <span>(following)</span>}
            </dd>
          </div>
          <div>
            <dt class="muted">Came in through</dt>
            <dd data-field="source">{sourceLabel(turn.source)}</dd>
          </div>
          <div>
            <dt class="muted">Termination reason</dt>
            <dd data-field="termination_reason">{turn.termination_reason ?? '—'}</dd>
          </div>
          <div>
            <dt class="muted">Accepted</dt>
            <dd>
              <Time iso={turn.accepted_at} />
            </dd>
          </div>
          <div>
            <dt class="muted">Waited in queue</dt>
            <dd>{duration(turn.accepted_at, turn.started_at)}</dd>
          </div>
          <div>
            <dt class="muted">Ran for</dt>
            <dd>{duration(turn.started_at, turn.finished_at)}</dd>
          </div>
          <div>
            <dt class="muted">Current tool</dt>
            <dd>{turn.current_tool ?? '—'}</dd>
          </div>
          <div>
            <dt class="muted">Trace</dt>
            <dd data-field="trace_id">{turn.trace_id ? <code>{turn.trace_id}</code> : '—'}</dd>
          </div>
        </dl>
      )}
      {streamError && (
        <p class="error-box" role="alert">
          <strong>{streamError.message}</strong>
          {streamError.requestId && (
            <span class="request-id">
              {' '}
              Request id: <code>{streamError.requestId}</code>
            </span>
          )}
        </p>
      )}
      <h4>Timeline</h4>
      {items.length === 0 && !reply ? (
        <Empty>{following ? 'Waiting for the first event…' : 'This turn has no events.'}</Empty>
      ) : (
        <ol class="timeline" aria-label="Turn events">
          {turn && (
            <li>
              Accepted <Time iso={turn.accepted_at} />
            </li>
          )}
          {turn?.started_at && (
            <li>
              Started <Time iso={turn.started_at} /> (after {duration(turn.accepted_at, turn.started_at)})
            </li>
          )}
          {items.map((item) => (
            <li key={item.key}>
              <strong>{item.label}</strong>{' '}
              <span class="muted">
                received <Time iso={item.at} />
              </span>
              {item.detail && <pre>{item.detail}</pre>}
            </li>
          ))}
          {reply && (
            <li>
              <strong>Reply</strong>
              <pre aria-label="Reply text">{reply}</pre>
            </li>
          )}
          {turn?.finished_at && (
            <li>
              Finished <Time iso={turn.finished_at} /> ({turn.termination_reason ?? turn.status}, ran{' '}
              {duration(turn.started_at, turn.finished_at)})
            </li>
          )}
        </ol>
      )}
    </section>
  );
}

/** The open session: history, turn ledger (admin), delete. */
function SessionDetail({
  id,
  title,
  turn,
  props,
  onDeleted,
}: {
  id: string;
  /** Its title when the list had it. */
  title: string | undefined;
  /** The turn to scroll to and mark (a deep link's `turn`). */
  turn: string | undefined;
  props: PageProps;
  onDeleted: () => void;
}) {
  const { api, role, live, notify, token } = props;
  // A linked session may be outside the list's filters: its title is read with it.
  const info = useLoad(
    () =>
      title === undefined
        ? must(api.GET('/api/v1/sessions/{session_id}', { params: { path: { session_id: id } } }))
        : Promise.resolve(undefined),
    [id, title === undefined],
  );
  const history = useLoad(
    () =>
      must(
        api.GET('/api/v1/sessions/{session_id}/history', {
          params: { path: { session_id: id }, query: { limit: 200 } },
        }),
      ),
    [id],
  );
  const turns = useLoad(
    () =>
      role === 'admin'
        ? must(
            api.GET('/api/v1/sessions/{session_id}/turns', {
              params: { path: { session_id: id }, query: { limit: 50 } },
            }),
          )
        : Promise.resolve(undefined),
    [id, role],
  );
  const [inspected, setInspected] = useState<string>();
  const [confirming, setConfirming] = useState(false);
  useEffect(() => {
    setInspected(undefined);
    setConfirming(false);
  }, [id]);

  // A deep link's turn: once its messages are shown, bring the first into view and move focus there.
  const marked = useRef<HTMLTableRowElement | null>(null);
  const historyShown = history.data !== undefined;
  useEffect(() => {
    if (!turn || !historyShown) return;
    const row = marked.current;
    if (!row) return;
    row.scrollIntoView({ block: 'center' });
    row.focus({ preventScroll: true });
  }, [turn, id, historyShown]);
  // The ledger's rows name their own turn `turn`.
  const markedTurn = turn;
  const firstMarked = turn ? history.data?.items.find((entry) => entry.event_id === turn)?.id : undefined;

  const refresh = useThrottled(() => {
    history.reload();
    turns.reload();
  }, 400);
  useLive(live, ['sessions', 'turns'], (event) => {
    if (event.topic === 'sessions') {
      if ((event.data as { id?: unknown }).id === id) refresh();
    } else if (event.event === 'status' || event.event === 'done' || event.event === 'error') refresh();
  });

  const remove = async () => {
    try {
      await must(api.DELETE('/api/v1/sessions/{session_id}', { params: { path: { session_id: id } } }));
      onDeleted();
    } catch (error) {
      notify(error);
    }
  };

  return (
    <div class="session-detail">
      <div class="actions spread">
        <h2 class="session-heading">
          {title ?? info.data?.title ?? 'Session'}
          <code class="session-heading-key">{id}</code>
        </h2>
        {role === 'admin' &&
          (confirming ? (
            <span class="actions">
              <button type="button" class="danger" onClick={() => void remove()}>
                Delete for good
              </button>
              <button type="button" class="secondary" onClick={() => setConfirming(false)}>
                Keep it
              </button>
            </span>
          ) : (
            <button type="button" class="danger" onClick={() => setConfirming(true)}>
              Delete session
            </button>
          ))}
      </div>
      <p>
        <a href={`#/chat?session=${encodeURIComponent(id)}`}>Open in chat</a>
      </p>

      <h3>History</h3>
      {history.error !== undefined && <ErrorBox error={history.error} />}
      {turn && history.data && !firstMarked && (
        <p class="muted" role="status">
          Turn <code>{turn}</code> has no messages in this session's current history.
        </p>
      )}
      <Table
        rows={history.data?.items}
        empty="No messages in this session."
        caption="Messages of the session, oldest first"
        columns={['When', 'Role', 'Content', 'Turn']}
        row={(entry) => (
          <tr
            key={entry.id}
            class={turn && entry.event_id === turn ? 'turn-marked' : undefined}
            data-event-id={entry.event_id ?? undefined}
            aria-current={turn && entry.event_id === turn ? 'true' : undefined}
            tabIndex={entry.id === firstMarked ? -1 : undefined}
            ref={entry.id === firstMarked ? marked : undefined}
          >
            <td class="history-when">
              <Time iso={entry.created_at} />
            </td>
            <td class="history-role">{entry.role === 'tool' ? `tool ${entry.name ?? ''}` : entry.role}</td>
            <td class="history-content">
              {entry.content ?? (entry.tool_calls ?? []).map((call) => `${call.name}(${call.arguments})`).join(', ')}
            </td>
            <td>
              {entry.event_id && (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Inspect turn ${entry.event_id}`}
                  onClick={() => setInspected(entry.event_id ?? undefined)}
                >
                  Inspect
                </button>
              )}
            </td>
          </tr>
        )}
      />

      <h3>Turns</h3>
      {role !== 'admin' ? (
        <p class="muted">The turn ledger needs an admin token; inspect a turn from the history above.</p>
      ) : (
        <>
          {turns.error !== undefined && <ErrorBox error={turns.error} />}
          <Table
            rows={turns.data?.items}
            empty="No turns in this session."
            caption="Turn ledger, newest first"
            columns={['Turn', 'Status', 'Accepted', 'Ran for', 'Termination', { label: 'Actions', hidden: true }]}
            row={(turn) => (
              <tr
                key={turn.event_id}
                class={
                  inspected === turn.event_id ? 'selected' : turn.event_id === markedTurn ? 'turn-marked' : undefined
                }
              >
                <td class="turn-id">
                  <code>{turn.event_id}</code>
                </td>
                <td>
                  <Badge status={turn.status} />
                </td>
                <td>
                  <Time iso={turn.accepted_at} />
                </td>
                <td>{duration(turn.started_at, turn.finished_at)}</td>
                <td>{turn.termination_reason ?? '—'}</td>
                <td>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Inspect turn ${turn.event_id}`}
                    onClick={() => setInspected(turn.event_id)}
                  >
                    Inspect
                  </button>
                </td>
              </tr>
            )}
          />
        </>
      )}
      {inspected && (
        <TurnInspector eventId={inspected} token={token} api={api} onClose={() => setInspected(undefined)} />
      )}
    </div>
  );
}

/** How a session is named in the list: its title, the key on hover and (cut to one line) under it. */
function SessionName({ session }: { session: Session }) {
  // A server before titles existed sends none: the key names it then.
  const title = session.title ?? session.id;
  return (
    <>
      <span class="session-title" title={session.id}>
        {title}
      </span>
      {title !== session.id && (
        <code class="session-key muted" title={session.id}>
          {session.id}
        </code>
      )}
    </>
  );
}

export default function SessionsPage(props: PageProps) {
  const { api, live, role } = props;
  const link = useHashQuery();
  const linkedKey = link.get('key') ?? undefined;
  const linkedTurn = link.get('turn') ?? undefined;
  const [channel, setChannel] = useState('');
  const [status, setStatus] = useState<StatusFilter>('active');
  // Admins only: an api principal always lists its own sessions.
  const [principal, setPrincipal] = useState('');
  const owner = role === 'admin' ? principal.trim() : '';
  const [search, setSearch] = useState('');
  const [q, setQ] = useState('');
  useEffect(() => {
    const timer = setTimeout(() => setQ(search.trim()), SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [search]);
  const [selected, setSelected] = useState<string | undefined>(linkedKey);
  const [turn, setTurn] = useState<string | undefined>(linkedTurn);
  // A link followed while the page is open opens its session too.
  useEffect(() => {
    if (linkedKey) {
      setSelected(linkedKey);
      setTurn(linkedTurn);
    }
  }, [linkedKey, linkedTurn]);
  const open = (key: string, atTurn?: string) => {
    setSelected(key);
    setTurn(atTurn);
    replaceHashQuery('sessions', { key, turn: atTurn });
  };
  const list = useLoad(
    () =>
      must(
        api.GET('/api/v1/sessions', {
          params: {
            query: {
              limit: 100,
              status,
              ...(channel.trim() ? { channel: channel.trim() } : {}),
              ...(owner ? { principal: owner } : {}),
              ...(q ? { q } : {}),
            },
          },
        }),
      ),
    [api, channel, status, owner, q],
  );
  const reload = useThrottled(list.reload, 400);
  useLive(live, ['sessions'], reload);
  const terms = queryTokens(q);
  const count = list.data?.pagination.total;

  return (
    <section aria-labelledby="sessions-title">
      <h1 id="sessions-title">Sessions</h1>
      <form class="toolbar" role="search" aria-label="Filter sessions" onSubmit={(e) => e.preventDefault()}>
        <div class="field sessions-search">
          <label for="sessions-q">Search messages</label>
          <input
            id="sessions-q"
            type="search"
            value={search}
            placeholder="text in any message"
            maxLength={200}
            autoComplete="off"
            onInput={(event) => setSearch(event.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="sessions-channel">Channel</label>
          <input
            id="sessions-channel"
            value={channel}
            placeholder="any"
            onInput={(event) => setChannel(event.currentTarget.value)}
          />
        </div>
        {role === 'admin' && (
          <div class="field">
            <label for="sessions-principal">Principal</label>
            <input
              id="sessions-principal"
              value={principal}
              placeholder="any"
              autoComplete="off"
              spellcheck={false}
              onInput={(event) => setPrincipal(event.currentTarget.value)}
            />
          </div>
        )}
        <div class="field">
          <label for="sessions-status">Status</label>
          <select
            id="sessions-status"
            value={status}
            onChange={(event) => setStatus(event.currentTarget.value as StatusFilter)}
          >
            <option value="active">active</option>
            <option value="archived">archived</option>
            <option value="all">all</option>
          </select>
        </div>
        <span class="muted" role="status">
          {count === undefined
            ? 'Loading…'
            : q
              ? `${count} ${count === 1 ? 'session mentions' : 'sessions mention'} “${q}”`
              : `${count} sessions`}
        </span>
      </form>
      {list.error !== undefined && <ErrorBox error={list.error} />}
      <div class="split">
        <div>
          <Table
            rows={list.data?.items}
            empty={q ? `No session's messages mention “${q}”.` : 'No sessions match these filters.'}
            caption={
              q
                ? `Sessions whose messages mention ${q}, most recently active first`
                : 'Sessions, most recently active first'
            }
            columns={['Session', 'Last active', { label: 'Actions', hidden: true }]}
            row={(session) => (
              <tr
                key={session.id}
                class={selected === session.id ? 'selected' : undefined}
                data-session-id={session.id}
              >
                <td class="session-cell">
                  <SessionName session={session} />
                  <div class="session-meta muted">
                    {session.channel} · {session.message_count} {session.message_count === 1 ? 'message' : 'messages'}{' '}
                    <span class="badge session-agent" data-field="agent" title="The agent that runs its turns">
                      <span class="visually-hidden">agent </span>
                      {session.agent}
                    </span>
                  </div>
                  {session.match && (
                    <p class="session-match">
                      <span class="muted">{session.match.role}: </span>
                      <Highlighted text={session.match.snippet} terms={terms} />{' '}
                      <a
                        href={sessionLink(session.id, session.match.event_id)}
                        onClick={(event) => {
                          event.preventDefault();
                          open(session.id, session.match?.event_id ?? undefined);
                        }}
                      >
                        Show in session<span class="visually-hidden"> {session.title ?? session.id}</span>
                      </a>
                    </p>
                  )}
                </td>
                <td class="session-active">
                  <Time iso={session.last_active} />
                </td>
                <td>
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Open ${session.id}`}
                    aria-pressed={selected === session.id}
                    onClick={() => open(session.id)}
                  >
                    Open
                  </button>
                </td>
              </tr>
            )}
          />
        </div>
        <div>
          {selected ? (
            <SessionDetail
              id={selected}
              title={list.data?.items.find((session) => session.id === selected)?.title}
              turn={turn}
              props={props}
              onDeleted={() => {
                setSelected(undefined);
                replaceHashQuery('sessions', {});
                list.reload();
              }}
            />
          ) : (
            <Empty>Open a session to see its history and turns.</Empty>
          )}
        </div>
      </div>
    </section>
  );
}
