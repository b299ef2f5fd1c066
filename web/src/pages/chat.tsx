/**
 * Chat (`#/chat`): the user's own conversation. It opens on the newest dashboard session (`#/chat?session=<key>`
 * opens another, `#/chat?new=1` and "New session" start a new one; with none yet, the first message creates
 * it) — never on a cron or channel session unless asked to, whose prompts are not the user's. Send a message and watch the reply stream in token
 * by token (`POST /sessions/{id}/messages` with `Accept: text/event-stream`), tool calls and results inline. A
 * running turn can be interrupted (WebSocket `interrupt` frame); a turn paused for approval shows the tool and
 * its arguments and is approved or denied in place (admin), then followed to its end (`GET /turns/{id}/events`,
 * resumed after the last event seen); decided in another client, the live `turns` topic says so and the card
 * follows the turn on. A question of the agent (`waiting_clarification`) is answered by the next message. Each
 * reply shows its cost. A turn started elsewhere in the open session (another client, the API) is followed live
 * too. Enter sends, Shift+Enter starts a new line; with the gateway unreachable, sending waits with a note.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { PAUSED, TERMINAL, type HistoryEntry, type Message, type Session } from '../api';
import { describeError, must } from '../errors';
import type { PageProps } from '../page';
import { pendingDecided } from '../pending';
import { routeOf } from '../routes';
import { readStream, type StreamEvent } from '../sse';
import { Badge, Empty, ErrorBox, Time, useLive, useLoad, useThrottled, usd } from '../ui';
import { PendingCall, sessionTitle, type PendingCallView } from './approvals/pending-call';
import {
  authorLabel,
  DASHBOARD_CHANNEL,
  isOwnChat,
  isUnreachable,
  pendingCallOf,
  useGatewayReachable,
} from './chat/chat-model';

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
  /** The tool call a turn paused for approval waits on. */
  pendingCall?: PendingCallView;
  /** Decided in another client (approved or denied): said on the card while the turn goes on. */
  decidedElsewhere?: string;
}

type Cost = Message['cost'];

function selectedFromHash(): string | undefined {
  return routeOf(location.hash).query.get('session') ?? undefined;
}

/** `keepTurn` while the session of the message being sent is being created. */
const CREATING = '\u0000creating';

/** `#/chat?new=1`: a new conversation, created with its first message. */
function newFromHash(): boolean {
  return routeOf(location.hash).query.get('new') === '1';
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
function historyBubbles(
  entries: HistoryEntry[],
  costs: Map<string, Cost>,
  outcomes: Map<string, string>,
  own: boolean,
  sentTexts: Map<string, string>,
  /** The call waiting for approval: shown once, in the approval card, not here. */
  waitingCallId: string | undefined,
) {
  const results = new Map<string, HistoryEntry>();
  // A turn's cost is shown once, on its last assistant message.
  const lastOfTurn = new Map<string, string>();
  for (const entry of entries)
    if (entry.role === 'assistant' && entry.event_id) lastOfTurn.set(entry.event_id, entry.id);
  for (const entry of entries) if (entry.role === 'tool' && entry.tool_call_id) results.set(entry.tool_call_id, entry);
  // A chat command (`/status`, `/new`) keeps only its answer: the text sent from here is shown before it.
  const userTurns = new Set(entries.filter((entry) => entry.role === 'user' && entry.event_id).map((e) => e.event_id));
  const shownSent = new Set<string>();
  return entries
    .filter((entry) => entry.role !== 'tool' && entry.role !== 'system')
    .flatMap((entry) => {
      const sent =
        entry.role === 'assistant' && entry.event_id && !userTurns.has(entry.event_id) && !shownSent.has(entry.event_id)
          ? sentTexts.get(entry.event_id)
          : undefined;
      if (sent !== undefined && entry.event_id) shownSent.add(entry.event_id);
      const before =
        sent === undefined
          ? []
          : [
              <article key={`sent-${entry.id}`} class="bubble user" aria-label="user message">
                <div class="meta">
                  <span>{authorLabel('user', own)}</span>
                </div>
                <div class="text">{sent}</div>
              </article>,
            ];
      const tools: ToolView[] = (entry.tool_calls ?? [])
        .map((call) => {
          const result = results.get(call.id);
          return { ...call, result: result?.content, hasResult: result !== undefined };
        })
        .filter((tool) => tool.hasResult || tool.id !== waitingCallId);
      if (entry.role === 'assistant' && tools.length === 0 && !entry.content && (entry.tool_calls ?? []).length > 0) {
        return before; // nothing of it left to show but the waiting call
      }
      const cost =
        entry.event_id && lastOfTurn.get(entry.event_id) === entry.id ? costs.get(entry.event_id) : undefined;
      return [
        ...before,
        <article key={entry.id} class={`bubble ${entry.role}`} aria-label={`${entry.role} message`}>
          <div class="meta">
            <span>{authorLabel(entry.role, own)}</span>
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
        </article>,
      ];
    });
}

export default function ChatPage({ api, token, role, live, notify }: PageProps) {
  const sessions = useLoad(
    () => must(api.GET('/api/v1/sessions', { params: { query: { limit: 100, status: 'active' } } })),
    [api],
  );
  const [selected, setSelected] = useState<string | undefined>(selectedFromHash);
  /** No session of the user's own yet: the first message creates one. */
  const [startNew, setStartNew] = useState(false);
  const [entries, setEntries] = useState<HistoryEntry[]>([]);
  const [historyError, setHistoryError] = useState<unknown>(undefined);
  const [active, setActive] = useState<ActiveTurn>();
  const [costs, setCosts] = useState(() => new Map<string, Cost>());
  const [outcomes, setOutcomes] = useState(() => new Map<string, string>());
  /** What was sent from here, by turn: a chat command's history keeps only its answer. */
  const [sentTexts, setSentTexts] = useState(() => new Map<string, string>());
  const [draft, setDraft] = useState('');
  const [busy, setBusy] = useState(false);
  const activeRef = useRef<ActiveTurn | undefined>(undefined);
  activeRef.current = active;
  const abort = useRef<AbortController | undefined>(undefined);
  const logEnd = useRef<HTMLDivElement>(null);
  /** Sessions this page created (the user's own even before the list shows them). */
  const created = useRef(new Set<string>());
  /**
   * The session just created for the message being sent (`CREATING` while the server has not answered): opening
   * it, or the page choosing a session meanwhile (the list arriving after the message was sent), must not drop
   * the turn on screen nor cut its request.
   */
  const keepTurn = useRef<string | undefined>(undefined);
  /** A decision made here is under way: the live `turns` topic's echo of it is not another client's. */
  const deciding = useRef(false);
  const { reachable, markDown } = useGatewayReachable(live);
  /** Creating a session is under way (`#/chat?new=1` is read once). */
  const creating = useRef(false);

  /** A new dashboard session, opened at once. */
  const createSession = async () => {
    if (creating.current) return;
    creating.current = true;
    try {
      const made = await must(api.POST('/api/v1/sessions', { body: { channel: DASHBOARD_CHANNEL, metadata: {} } }));
      created.current.add(made.id);
      sessions.reload();
      setStartNew(false);
      setSelected(made.id);
    } catch (error) {
      if (isUnreachable(error)) markDown();
      else notify(error);
    } finally {
      creating.current = false;
    }
  };

  const list: Session[] = sessions.data?.items ?? [];
  const current = list.find((s) => s.id === selected);
  // Unknown sessions (not in the list yet) are the user's only when this page created them.
  const own = current ? isOwnChat(current) : selected === undefined || created.current.has(selected);

  // The user's own newest conversation when none is chosen (or a new one when asked); never a cron or channel
  // session.
  useEffect(() => {
    if (selected || startNew || !sessions.data || keepTurn.current === CREATING) return;
    if (newFromHash()) {
      void createSession();
      return;
    }
    const mine = list.find((s) => isOwnChat(s));
    if (mine) setSelected(mine.id);
    else setStartNew(true);
  }, [selected, startNew, sessions.data]);

  // The address names the session (or a new one): followed when it changes while the page is open.
  useEffect(() => {
    const onHash = () => {
      if (routeOf(location.hash).route.name !== 'chat') return;
      const key = selectedFromHash();
      if (key !== undefined) {
        setStartNew(false);
        setSelected(key);
      } else if (newFromHash()) {
        void createSession();
      }
    };
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  // Back online: read the sessions again.
  const wasReachable = useRef(reachable);
  useEffect(() => {
    if (reachable && !wasReachable.current) sessions.reload();
    wasReachable.current = reachable;
  }, [reachable]);

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
        if (isUnreachable(error)) markDown();
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
        case 'status': {
          if (typeof data.status === 'string') next.status = data.status;
          // A pause carries the waiting Message: the call it waits on.
          const message = data.message as Message | undefined;
          if (message && PAUSED.has(next.status)) next.pendingCall = pendingCallOf(message) ?? turn.pendingCall;
          break;
        }
        case 'done': {
          const message = data as unknown as Message;
          next.status = message.status;
          if (PAUSED.has(message.status)) {
            next.question = message.content;
            next.pendingCall = pendingCallOf(message) ?? turn.pendingCall;
          }
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
    const here = routeOf(location.hash).route.name === 'chat';
    if (!selected) {
      if (keepTurn.current === CREATING) return; // the message being sent makes the session
      abort.current?.abort();
      setActive(undefined);
      setEntries([]);
      setHistoryError(undefined);
      return;
    }
    // Only while the address is still this page's: a navigation away may already have set another one.
    if (here && location.hash !== `#/chat?session=${encodeURIComponent(selected)}`) {
      history.replaceState(history.state, '', `#/chat?session=${encodeURIComponent(selected)}`);
    }
    if (keepTurn.current === selected) {
      keepTurn.current = undefined; // created for the message being sent: its turn stays on screen
      return;
    }
    abort.current?.abort();
    setActive(undefined);
    setEntries([]);
    void loadHistory(selected);
    if (role !== 'admin') return;
    api
      .GET('/api/v1/sessions/{session_id}/turns', { params: { path: { session_id: selected }, query: { limit: 1 } } })
      .then(({ data }) => {
        const last = data?.items[0];
        if (last && PAUSED.has(last.status) && !activeRef.current) {
          const call = last.pending_tool_call;
          setActive({
            eventId: last.event_id,
            userText: undefined,
            text: '',
            tools: [],
            status: last.status,
            lastId: undefined,
            question: last.status === 'waiting_clarification' ? (last.response ?? undefined) : undefined,
            ...(call ? { pendingCall: { id: call.id, name: call.name, arguments: call.arguments } } : {}),
          });
        }
      })
      .catch((error: unknown) => (isUnreachable(error) ? markDown() : notify(error)));
  }, [selected, startNew, api, role, loadHistory, notify]);
  useEffect(() => () => abort.current?.abort(), []);

  useEffect(() => {
    logEnd.current?.scrollIntoView({ block: 'nearest' });
  }, [entries, active]);

  // Live: the list of sessions, turns of the open session started elsewhere, and a pause decided elsewhere.
  const reloadSessions = useThrottled(sessions.reload, 400);
  useLive(live, ['sessions', 'turns'], (event) => {
    const data = event.data as { id?: unknown; event_id?: unknown; status?: unknown; resolution?: unknown };
    if (event.topic === 'turns') {
      const turn = activeRef.current;
      if (!selected || !turn || deciding.current || event.event !== 'status') return;
      if (turn.eventId !== data.event_id || !PAUSED.has(turn.status)) return;
      if (typeof data.status !== 'string' || PAUSED.has(data.status)) return;
      // Approved, denied or answered in another client (a tab, the terminal chat, the API): follow the rest.
      const verb = data.resolution === 'deny' ? 'Denied' : data.resolution === 'answer' ? 'Answered' : 'Approved';
      setActive({
        ...turn,
        status: data.status,
        question: undefined,
        settled: false,
        text: '',
        tools: [],
        decidedElsewhere: `${verb} in another client.`,
      });
      void follow(selected, data.event_id as string, turn.lastId ?? '0');
      return;
    }
    reloadSessions();
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

  const send = async (content: string) => {
    if (!content.trim() || !reachable) return;
    const controller = new AbortController();
    abort.current = controller;
    setBusy(true);
    setDraft('');
    setActive({ eventId: undefined, userText: content, text: '', tools: [], status: 'accepted', lastId: undefined });
    let requestId: string | undefined;
    let id = selected;
    try {
      if (!id) {
        keepTurn.current = CREATING;
        const session = await must(
          api.POST('/api/v1/sessions', { body: { channel: DASHBOARD_CHANNEL, metadata: {} } }),
        ).finally(() => {
          if (keepTurn.current === CREATING) keepTurn.current = undefined;
        });
        id = session.id;
        created.current.add(id);
        keepTurn.current = id;
        setStartNew(false);
        setSelected(id);
        sessions.reload();
      }
      await readStream(
        {
          path: `/api/v1/sessions/${encodeURIComponent(id)}/messages`,
          method: 'POST',
          token,
          body: { content, role: 'user' },
          signal: controller.signal,
          onOpen: (rid) => (requestId = rid),
        },
        (event) => {
          if (event.event === 'accepted') {
            const eventId = String((event.data as { event_id?: unknown }).event_id);
            setSentTexts((map) => new Map(map).set(eventId, content));
          }
          apply(event);
        },
      );
    } catch (error) {
      if (!controller.signal.aborted) {
        if (isUnreachable(error)) {
          // Not sent: the text goes back to the box and the note says why.
          markDown();
          setDraft(content);
          setActive(undefined);
        } else {
          const shown = describeError(error);
          setActive((turn) => turn && { ...turn, status: 'failed', error: { requestId, ...shown } });
        }
      }
    } finally {
      if (abort.current === controller) abort.current = undefined;
      setBusy(false);
    }
    if (!controller.signal.aborted && id) await settle(id);
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
    deciding.current = true;
    try {
      const path = decision === 'approve' ? '/api/v1/turns/{event_id}/approve' : '/api/v1/turns/{event_id}/deny';
      const record = await must(api.POST(path, { params: { path: { event_id: eventId } } }));
      pendingDecided(eventId);
      setActive({ ...turn, status: record.status, question: undefined, settled: false, text: '', tools: [] });
      deciding.current = false;
      // The events after the pause: the last one seen, or from the start when the page did not see the pause.
      await follow(selected, eventId, turn.lastId ?? '0');
    } catch (error) {
      notify(error);
    } finally {
      deciding.current = false;
    }
  };

  const running = busy && active !== undefined && !PAUSED.has(active.status) && !TERMINAL.has(active.status);
  const paused = active && PAUSED.has(active.status) ? active : undefined;
  const lastTool = paused ? paused.tools[paused.tools.length - 1] : undefined;
  const pendingCall = paused?.pendingCall ?? lastTool;
  const sessionsError = sessions.error !== undefined && !(isUnreachable(sessions.error) && !reachable);
  const shownHistoryError = historyError !== undefined && !(isUnreachable(historyError) && !reachable);

  return (
    <section aria-labelledby="chat-title">
      <h1 id="chat-title">Chat</h1>
      {sessionsError && <ErrorBox error={sessions.error} />}
      <div class="toolbar">
        <div class="field">
          <label for="chat-session">Session</label>
          <select
            id="chat-session"
            value={selected ?? ''}
            title={selected ?? 'A new session, created with the first message'}
            onChange={(event) => {
              const key = event.currentTarget.value;
              if (!key) return;
              setStartNew(false);
              setSelected(key);
            }}
          >
            {!selected && <option value="">New session (starts with your first message)</option>}
            {selected && !current && <option value={selected}>{selected}</option>}
            {list.map((s) => (
              <option key={s.id} value={s.id} title={s.id}>
                {sessionTitle(s, s.id)}
                {isOwnChat(s) ? '' : ` (${s.channel})`} · {s.message_count}{' '}
                {s.message_count === 1 ? 'message' : 'messages'}
              </option>
            ))}
          </select>
        </div>
        <button type="button" class="secondary" disabled={!reachable} onClick={() => void createSession()}>
          New session
        </button>
      </div>
      {selected && !own && (
        <p class="muted">
          This is a {current?.channel ?? 'another'} session, not your own conversation: what you send goes to it.
        </p>
      )}

      {shownHistoryError && <ErrorBox error={historyError} />}
      <div class="chat-log" aria-live="polite" aria-label="Conversation">
        {selected && entries.length === 0 && !active && <Empty>No messages in this session yet. Say something.</Empty>}
        {!selected && !active && <Empty>A new conversation: your first message starts it.</Empty>}
        {historyBubbles(
          entries,
          costs,
          outcomes,
          own,
          sentTexts,
          paused?.status === 'waiting_approval' ? paused.pendingCall?.id : undefined,
        )}
        {active?.userText && (
          <article class="bubble user" aria-label="user message">
            <div class="meta">{authorLabel('user', own)}</div>
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
            {active.decidedElsewhere && <p class="muted">{active.decidedElsewhere}</p>}
            {!active.settled &&
              active.tools
                // The call waiting for approval is shown once, in the approval card below.
                .filter((tool) => tool.hasResult || paused?.status !== 'waiting_approval' || !paused.pendingCall)
                .map((tool) => <ToolCall key={tool.id} tool={tool} />)}
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
                {pendingCall ? (
                  <>
                    <p>The agent wants to run this tool. Approve it?</p>
                    <PendingCall call={pendingCall} idPrefix={`chat-${paused.eventId ?? 'pending'}`} />
                  </>
                ) : (
                  <p>The agent wants to run a tool that needs approval. Approve it?</p>
                )}
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
            aria-describedby="chat-hint"
            onInput={(event) => setDraft(event.currentTarget.value)}
            onKeyDown={(event) => {
              // Enter sends; Shift+Enter (and Enter while an input method composes) makes a new line.
              if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
                event.preventDefault();
                if (!busy) void send(draft);
              }
            }}
          />
        </div>
        <div class="actions">
          <button type="submit" disabled={busy || !draft.trim() || !reachable}>
            Send
          </button>
          {running && (
            <button type="button" class="danger" onClick={interrupt} disabled={!active?.eventId}>
              Stop
            </button>
          )}
          <span id="chat-hint" class="muted" role="status">
            {reachable
              ? 'Enter sends, Shift+Enter starts a new line.'
              : 'The gateway cannot be reached: sending waits until it is back.'}
          </span>
        </div>
      </form>
    </section>
  );
}
