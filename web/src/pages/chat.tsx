/**
 * Chat (`#/chat`): pick or create a session, send a message and watch the reply stream in token by token
 * (`POST /sessions/{id}/messages` with `Accept: text/event-stream`), tool calls and results inline. A running
 * turn can be interrupted (WebSocket `interrupt` frame); a turn paused for approval is approved or denied in
 * place (admin), then followed to its end (`GET /turns/{id}/events`, resumed after the last event seen); a
 * question of the agent (`waiting_clarification`) is answered by the next message. Each reply shows its cost.
 * A turn started elsewhere in the open session (another client, the API) is followed live too.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { PAUSED, TERMINAL, type HistoryEntry, type Message, type Session } from '../api';
import { describeError, must } from '../errors';
import type { PageProps } from '../page';
import { routeOf } from '../routes';
import { readStream, type StreamEvent } from '../sse';
import { Badge, Empty, ErrorBox, Time, useLive, useLoad, useThrottled, usd } from '../ui';

interface ToolView {
  id: string;
  name: string;
  arguments: string;
  result?: unknown;
  hasResult: boolean;
}

/** The turn on screen that is not in the history yet: streaming, paused, or just ended with an error. */
interface ActiveTurn {
  eventId: string | undefined;
  /** The user's text that started it (none when followed from elsewhere). */
  userText: string | undefined;
  text: string;
  tools: ToolView[];
  status: string;
  /** The last event id seen, to resume the turn's events after it. */
  lastId: string | undefined;
  question?: string;
  error?: { message: string; requestId?: string };
  /** The history already holds what this turn said so far; only its pause (or error) is left to show. */
  settled?: boolean;
}

type Cost = Message['cost'];

function selectedFromHash(): string | undefined {
  return routeOf(location.hash).query.get('session') ?? undefined;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

/** A tool call and (once there) its result. */
function ToolCall({ tool }: { tool: ToolView }) {
  return (
    <div class="tool" data-tool={tool.name}>
      <div>
        Tool call <code>{tool.name}</code>
      </div>
      {tool.arguments && <pre aria-label={`Arguments of ${tool.name}`}>{tool.arguments}</pre>}
      {tool.hasResult && (
        <>
          <div>Result</div>
          <pre aria-label={`Result of ${tool.name}`}>{text(tool.result)}</pre>
        </>
      )}
    </div>
  );
}

/** Groups the history into bubbles: tool results are shown with the call they answer. */
function historyBubbles(entries: HistoryEntry[], costs: Map<string, Cost>, outcomes: Map<string, string>) {
  const results = new Map<string, HistoryEntry>();
  // A turn's cost is shown once, on its last assistant message.
  const lastOfTurn = new Map<string, string>();
  for (const entry of entries)
    if (entry.role === 'assistant' && entry.event_id) lastOfTurn.set(entry.event_id, entry.id);
  for (const entry of entries) if (entry.role === 'tool' && entry.tool_call_id) results.set(entry.tool_call_id, entry);
  return entries
    .filter((entry) => entry.role !== 'tool' && entry.role !== 'system')
    .map((entry) => {
      const tools: ToolView[] = (entry.tool_calls ?? []).map((call) => {
        const result = results.get(call.id);
        return { ...call, result: result?.content, hasResult: result !== undefined };
      });
      const cost =
        entry.event_id && lastOfTurn.get(entry.event_id) === entry.id ? costs.get(entry.event_id) : undefined;
      return (
        <article key={entry.id} class={`bubble ${entry.role}`} aria-label={`${entry.role} message`}>
          <div class="meta">
            <span>{entry.role === 'user' ? 'You' : 'Agent'}</span>
            <Time iso={entry.created_at} />
            {cost && <span class="cost">Cost {usd(cost.total_usd)}</span>}
          </div>
          {tools.map((tool) => (
            <ToolCall key={tool.id} tool={tool} />
          ))}
          {entry.content && <div class="text">{entry.content}</div>}
          {entry.role === 'user' &&
            entry.event_id &&
            !lastOfTurn.has(entry.event_id) &&
            outcomes.has(entry.event_id) && (
              <div class="meta">
                <Badge status={outcomes.get(entry.event_id) ?? ''} /> no reply was kept
              </div>
            )}
        </article>
      );
    });
}

export default function ChatPage({ api, token, role, live, notify }: PageProps) {
  const sessions = useLoad(
    () => must(api.GET('/api/v1/sessions', { params: { query: { limit: 100, status: 'active' } } })),
    [api],
  );
  const [selected, setSelected] = useState<string | undefined>(selectedFromHash);
  const [entries, setEntries] = useState<HistoryEntry[]>([]);
  const [historyError, setHistoryError] = useState<unknown>(undefined);
  const [active, setActive] = useState<ActiveTurn>();
  const [costs, setCosts] = useState(() => new Map<string, Cost>());
  const [outcomes, setOutcomes] = useState(() => new Map<string, string>());
  const [draft, setDraft] = useState('');
  const [busy, setBusy] = useState(false);
  const activeRef = useRef<ActiveTurn | undefined>(undefined);
  activeRef.current = active;
  const abort = useRef<AbortController | undefined>(undefined);
  const logEnd = useRef<HTMLDivElement>(null);

  // The first session when none is chosen.
  const list: Session[] = sessions.data?.items ?? [];
  useEffect(() => {
    if (!selected && list[0]) setSelected(list[0].id);
  }, [selected, list]);

  const loadHistory = useCallback(
    async (id: string) => {
      try {
        const history = await must(
          api.GET('/api/v1/sessions/{session_id}/history', {
            params: { path: { session_id: id }, query: { limit: 200 } },
          }),
        );
        setEntries(history.items);
        setHistoryError(undefined);
      } catch (error) {
        setHistoryError(error);
      }
    },
    [api],
  );

  /** Applies one event of a message stream or a turn's events to the active turn. */
  const apply = useCallback((event: StreamEvent) => {
    setActive((turn) => {
      if (!turn) return turn;
      const next: ActiveTurn = { ...turn, lastId: event.id ?? turn.lastId };
      const data = (event.data ?? {}) as Record<string, unknown>;
      switch (event.event) {
        case 'accepted':
          next.eventId = String(data.event_id);
          next.status = 'running';
          break;
        case 'delta':
          next.text = turn.text + (typeof data.content === 'string' ? data.content : '');
          break;
        case 'tool_call':
          next.tools = [
            ...turn.tools,
            { id: String(data.id), name: String(data.name), arguments: String(data.arguments), hasResult: false },
          ];
          break;
        case 'tool_result':
          next.tools = turn.tools.some((tool) => tool.id === data.id)
            ? turn.tools.map((tool) => (tool.id === data.id ? { ...tool, result: data.result, hasResult: true } : tool))
            : [
                ...turn.tools,
                { id: String(data.id), name: String(data.name), arguments: '', result: data.result, hasResult: true },
              ];
          break;
        case 'status':
          if (typeof data.status === 'string') next.status = data.status;
          break;
        case 'done': {
          const message = data as unknown as Message;
          next.status = message.status;
          if (PAUSED.has(message.status)) next.question = message.content;
          if (message.event_id) next.eventId = message.event_id;
          break;
        }
        case 'error':
          next.status = 'failed';
          next.error = { message: typeof data.message === 'string' ? data.message : 'the turn failed' };
          break;
        default:
          break;
      }
      return next;
    });
    if (event.event === 'done') {
      const message = event.data as Message;
      setCosts((map) => new Map(map).set(message.event_id, message.cost));
      setOutcomes((map) => new Map(map).set(message.event_id, message.status));
    }
  }, []);

  /** After a stream ends: reload the history; the active turn stays only while paused or failed. */
  const settle = useCallback(
    async (id: string) => {
      await loadHistory(id);
      setActive((turn) =>
        turn && (PAUSED.has(turn.status) || turn.error)
          ? { ...turn, settled: !turn.error, userText: turn.error ? turn.userText : undefined }
          : undefined,
      );
    },
    [loadHistory],
  );

  /** Follows a turn's events after `lastId` to its end (after an approval, or a turn started elsewhere). */
  const follow = useCallback(
    async (id: string, eventId: string, lastId: string | undefined) => {
      const controller = new AbortController();
      abort.current = controller;
      setBusy(true);
      let requestId: string | undefined;
      try {
        await readStream(
          {
            path: `/api/v1/turns/${encodeURIComponent(eventId)}/events`,
            token,
            signal: controller.signal,
            onOpen: (rid) => (requestId = rid),
            ...(lastId !== undefined ? { lastEventId: lastId } : {}),
          },
          apply,
        );
      } catch (error) {
        if (!controller.signal.aborted) {
          const shown = describeError(error);
          setActive((turn) => turn && { ...turn, error: { requestId, ...shown } });
        }
      } finally {
        if (abort.current === controller) abort.current = undefined;
        setBusy(false);
      }
      if (!controller.signal.aborted) await settle(id);
    },
    [apply, settle, token],
  );

  // Opening a session: its history, and (admin) a turn of it still paused.
  useEffect(() => {
    abort.current?.abort();
    setActive(undefined);
    setEntries([]);
    if (!selected) return;
    // Only while the address is still this page's: a navigation away may already have set another one.
    const here = routeOf(location.hash).route.name === 'chat';
    if (here && location.hash !== `#/chat?session=${encodeURIComponent(selected)}`) {
      history.replaceState(history.state, '', `#/chat?session=${encodeURIComponent(selected)}`);
    }
    void loadHistory(selected);
    if (role !== 'admin') return;
    api
      .GET('/api/v1/sessions/{session_id}/turns', { params: { path: { session_id: selected }, query: { limit: 1 } } })
      .then(({ data }) => {
        const last = data?.items[0];
        if (last && PAUSED.has(last.status) && !activeRef.current) {
          setActive({
            eventId: last.event_id,
            userText: undefined,
            text: '',
            tools: [],
            status: last.status,
            lastId: undefined,
            question: last.status === 'waiting_clarification' ? (last.response ?? undefined) : undefined,
          });
        }
      })
      .catch(notify);
  }, [selected, api, role, loadHistory, notify]);
  useEffect(() => () => abort.current?.abort(), []);

  useEffect(() => {
    logEnd.current?.scrollIntoView({ block: 'nearest' });
  }, [entries, active]);

  // Live: the list of sessions, and turns of the open session started elsewhere.
  const reloadSessions = useThrottled(sessions.reload, 400);
  useLive(live, ['sessions'], (event) => {
    reloadSessions();
    const data = event.data as { id?: unknown; event_id?: unknown };
    if (!selected || data.id !== selected || typeof data.event_id !== 'string') return;
    const current = activeRef.current;
    if (current && (current.eventId === data.event_id || current.eventId === undefined)) return;
    if (current && !TERMINAL.has(current.status) && !PAUSED.has(current.status)) return;
    setActive({
      eventId: data.event_id,
      userText: undefined,
      text: '',
      tools: [],
      status: 'running',
      lastId: undefined,
    });
    void loadHistory(selected).then(() => follow(selected, data.event_id as string, '0'));
  });

  const createSession = async () => {
    try {
      const created = await must(api.POST('/api/v1/sessions', { body: { channel: 'dashboard', metadata: {} } }));
      sessions.reload();
      setSelected(created.id);
    } catch (error) {
      notify(error);
    }
  };

  const send = async (content: string) => {
    if (!selected || !content.trim()) return;
    const id = selected;
    const controller = new AbortController();
    abort.current = controller;
    setBusy(true);
    setDraft('');
    setActive({ eventId: undefined, userText: content, text: '', tools: [], status: 'accepted', lastId: undefined });
    let requestId: string | undefined;
    try {
      await readStream(
        {
          path: `/api/v1/sessions/${encodeURIComponent(id)}/messages`,
          method: 'POST',
          token,
          body: { content, role: 'user' },
          signal: controller.signal,
          onOpen: (rid) => (requestId = rid),
        },
        apply,
      );
    } catch (error) {
      if (!controller.signal.aborted) {
        const shown = describeError(error);
        setActive((turn) => turn && { ...turn, status: 'failed', error: { requestId, ...shown } });
      }
    } finally {
      if (abort.current === controller) abort.current = undefined;
      setBusy(false);
    }
    if (!controller.signal.aborted) await settle(id);
  };

  const interrupt = () => {
    const eventId = active?.eventId;
    if (!eventId) return;
    if (!live.send({ type: 'interrupt', event_id: eventId })) {
      notify(new Error('The live connection is down; the turn could not be interrupted. Try again in a moment.'));
    }
  };

  const decide = async (decision: 'approve' | 'deny') => {
    const turn = active;
    if (!turn?.eventId || !selected) return;
    const eventId = turn.eventId;
    try {
      const path = decision === 'approve' ? '/api/v1/turns/{event_id}/approve' : '/api/v1/turns/{event_id}/deny';
      const record = await must(api.POST(path, { params: { path: { event_id: eventId } } }));
      setActive({ ...turn, status: record.status, question: undefined, settled: false, text: '', tools: [] });
      // The events after the pause: the last one seen, or from the start when the page did not see the pause.
      await follow(selected, eventId, turn.lastId ?? '0');
    } catch (error) {
      notify(error);
    }
  };

  const running = busy && active !== undefined && !PAUSED.has(active.status) && !TERMINAL.has(active.status);
  const paused = active && PAUSED.has(active.status) ? active : undefined;
  const pendingTool = paused ? paused.tools[paused.tools.length - 1] : undefined;

  return (
    <section aria-labelledby="chat-title">
      <h1 id="chat-title">Chat</h1>
      {sessions.error !== undefined && <ErrorBox error={sessions.error} />}
      <div class="toolbar">
        <div class="field">
          <label for="chat-session">Session</label>
          <select
            id="chat-session"
            value={selected ?? ''}
            onChange={(event) => setSelected(event.currentTarget.value || undefined)}
          >
            {list.length === 0 && <option value="">No sessions yet</option>}
            {selected && !list.some((s) => s.id === selected) && <option value={selected}>{selected}</option>}
            {list.map((s) => (
              <option key={s.id} value={s.id}>
                {s.id} ({s.message_count} {s.message_count === 1 ? 'message' : 'messages'})
              </option>
            ))}
          </select>
        </div>
        <button type="button" class="secondary" onClick={() => void createSession()}>
          New session
        </button>
      </div>

      {historyError !== undefined && <ErrorBox error={historyError} />}
      <div class="chat-log" aria-live="polite" aria-label="Conversation">
        {selected && entries.length === 0 && !active && <Empty>No messages in this session yet. Say something.</Empty>}
        {!selected && <Empty>No session yet: create one with “New session”.</Empty>}
        {historyBubbles(entries, costs, outcomes)}
        {active?.userText && (
          <article class="bubble user" aria-label="user message">
            <div class="meta">You</div>
            <div class="text">{active.userText}</div>
          </article>
        )}
        {active && (
          <article class="bubble assistant" aria-label="reply" data-status={active.status}>
            <div class="meta">
              <span>Agent</span>
              <Badge status={active.status} />
              {active.eventId && costs.get(active.eventId) && (
                <span class="cost">Cost {usd(costs.get(active.eventId)?.total_usd)}</span>
              )}
            </div>
            {!active.settled && active.tools.map((tool) => <ToolCall key={tool.id} tool={tool} />)}
            {!active.settled && active.text && <div class="text">{active.text}</div>}
            {active.error && (
              <div class="error-box" role="alert">
                <strong>{active.error.message}</strong>
                {active.error.requestId && (
                  <span class="request-id">
                    {' '}
                    Request id: <code>{active.error.requestId}</code>
                  </span>
                )}
              </div>
            )}
            {paused?.status === 'waiting_approval' && (
              <div class="pause" role="group" aria-label="Approval needed">
                <p>
                  The agent wants to run <code>{pendingTool?.name ?? 'a tool that needs approval'}</code>. Approve it?
                </p>
                {role === 'admin' ? (
                  <div class="actions">
                    <button type="button" onClick={() => void decide('approve')}>
                      Approve
                    </button>
                    <button type="button" class="danger" onClick={() => void decide('deny')}>
                      Deny
                    </button>
                  </div>
                ) : (
                  <p class="muted">An admin token is needed to approve or deny.</p>
                )}
              </div>
            )}
            {paused?.status === 'waiting_clarification' && (
              <div class="pause" role="group" aria-label="Question from the agent">
                <p>
                  <strong>The agent asks:</strong> {paused.question || 'a question'}
                </p>
                <p class="muted">Your next message answers it.</p>
              </div>
            )}
          </article>
        )}
        <div ref={logEnd} />
      </div>

      <form
        class="composer"
        onSubmit={(event) => {
          event.preventDefault();
          void send(draft);
        }}
      >
        <div class="field">
          <label for="chat-input">{paused?.status === 'waiting_clarification' ? 'Your answer' : 'Message'}</label>
          <textarea
            id="chat-input"
            value={draft}
            disabled={!selected}
            onInput={(event) => setDraft(event.currentTarget.value)}
            onKeyDown={(event) => {
              if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
                event.preventDefault();
                void send(draft);
              }
            }}
          />
        </div>
        <div class="actions">
          <button type="submit" disabled={!selected || busy || !draft.trim()}>
            Send
          </button>
          {running && (
            <button type="button" class="danger" onClick={interrupt} disabled={!active?.eventId}>
              Stop
            </button>
          )}
          <span class="muted">Ctrl+Enter sends.</span>
        </div>
      </form>
    </section>
  );
}
