/**
 * Approvals inbox (`#/approvals`): every paused turn (waiting for approval or for an answer) and every staged
 * skill, with approve and deny. A paused turn shows what it waits on — the tool and its arguments
 * (`Turn.pending_tool_call`), or the question — and its session by title, linking to the Sessions page. Paused
 * turns come from `GET /turns` (admin; every session, oldest first, paged to the inbox's cap); a decision made
 * anywhere (another tab, the terminal chat, the API) reaches the live `turns` topic as the turn's next status,
 * which drops the row at once and reads the inbox again; staged skills reload on a `skills` change. An api token
 * sees the staged skills only, without the actions.
 */
import { useState } from 'preact/hooks';
import { PAUSED, type Session, type Turn } from '../api';
import { must } from '../errors';
import type { PageProps } from '../page';
import { pendingDecided } from '../pending';
import { Badge, ErrorBox, Time, useLive, useLoad, useThrottled } from '../ui';
import { Table } from '../ui/table';
import { PendingCall, SessionLink, sessionTitle } from './approvals/pending-call';

/** The most paused turns the inbox shows (oldest first); the rest wait for a decision on these. */
const INBOX_CAP = 200;

/** A paused turn with the session it belongs to (undefined when the session could not be read). */
interface PausedRow {
  turn: Turn;
  session: Session | undefined;
}

export default function ApprovalsPage({ api, role, live, notify }: PageProps) {
  const isAdmin = role === 'admin';
  const [deciding, setDeciding] = useState<string>();

  const paused = useLoad(async (): Promise<PausedRow[] | undefined> => {
    if (!isAdmin) return undefined;
    const page = await must(api.GET('/api/v1/turns', { params: { query: { limit: INBOX_CAP } } }));
    // Each session once, for its title; a session that cannot be read shows by its key.
    const keys = [...new Set(page.items.map((turn) => turn.session_key))];
    const sessions = new Map<string, Session>();
    await Promise.all(
      keys.map(async (key) => {
        const { data } = await api.GET('/api/v1/sessions/{session_id}', { params: { path: { session_id: key } } });
        if (data) sessions.set(key, data);
      }),
    );
    return page.items.map((turn) => ({ turn, session: sessions.get(turn.session_key) }));
  }, [api, isAdmin]);
  // Turns decided since the inbox was read (here or in another client): hidden until the next read.
  const [decided, setDecided] = useState<ReadonlySet<string>>(() => new Set());
  const hide = (eventId: string) => setDecided((set) => new Set(set).add(eventId));
  const rows = paused.data?.filter((row) => !decided.has(row.turn.event_id));
  const staged = useLoad(() => must(api.GET('/api/v1/skills', { params: { query: { status: 'staged' } } })), [api]);

  const reloadTurns = useThrottled(paused.reload, 400);
  const reloadSkills = useThrottled(staged.reload, 400);
  useLive(live, ['turns', 'skills'], (event) => {
    if (event.topic === 'skills') {
      reloadSkills();
      return;
    }
    const data = event.data as { event_id?: unknown; status?: unknown };
    if (event.event !== 'status' && event.event !== 'done' && event.event !== 'error') return;
    // A listed turn that moved on was decided (or ended) elsewhere: off the list at once, then read again.
    const listed = typeof data.event_id === 'string' && paused.data?.some((row) => row.turn.event_id === data.event_id);
    const pausedNow = typeof data.status === 'string' && PAUSED.has(data.status);
    if (listed && !pausedNow) hide(data.event_id as string);
    if (pausedNow && typeof data.event_id === 'string' && decided.has(data.event_id)) {
      // Resumed and paused again on its next call: shown again.
      const eventId = data.event_id;
      setDecided((set) => new Set([...set].filter((id) => id !== eventId)));
    }
    if (listed || pausedNow) reloadTurns();
  });

  const act = async (key: string, run: () => Promise<unknown>, after: () => void) => {
    setDeciding(key);
    try {
      await run();
      after();
    } catch (error) {
      notify(error);
    } finally {
      setDeciding(undefined);
    }
  };
  const decideTurn = (turn: Turn, decision: 'approve' | 'deny') =>
    act(
      `${decision}:${turn.event_id}`,
      () =>
        must(
          api.POST(decision === 'approve' ? '/api/v1/turns/{event_id}/approve' : '/api/v1/turns/{event_id}/deny', {
            params: { path: { event_id: turn.event_id } },
          }),
        ),
      () => {
        hide(turn.event_id);
        pendingDecided(turn.event_id);
        paused.reload();
      },
    );
  const decideSkill = (id: string, decision: 'approve' | 'deny') =>
    act(
      `${decision}:${id}`,
      () =>
        must(
          api.POST(decision === 'approve' ? '/api/v1/skills/{skill_id}/approve' : '/api/v1/skills/{skill_id}/disable', {
            params: { path: { skill_id: id } },
          }),
        ),
      staged.reload,
    );

  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Approvals</h1>
      <h2>Paused turns</h2>
      {!isAdmin && <p class="muted">An admin token is needed to see paused turns and to decide them.</p>}
      {isAdmin && (
        <>
          {paused.error !== undefined && <ErrorBox error={paused.error} />}
          <Table
            rows={rows}
            empty="No turn is waiting for approval or an answer."
            caption="Turns waiting for a person, oldest first"
            columns={['Session', 'Status', 'Tool or question', 'Waiting since', { label: 'Actions', hidden: true }]}
            row={({ turn, session }) => {
              const title = sessionTitle(session, turn.session_key);
              const call = turn.pending_tool_call;
              const tool = call?.name ?? turn.current_tool ?? 'tool';
              return (
                <tr key={turn.event_id} data-event-id={turn.event_id}>
                  <td>
                    <SessionLink sessionKey={turn.session_key} title={title} />
                    <div class="muted">
                      <code>{turn.event_id}</code>
                    </div>
                  </td>
                  <td>
                    <Badge status={turn.status} />
                  </td>
                  <td>
                    {turn.status !== 'waiting_approval' ? (
                      (turn.response ?? 'a question')
                    ) : call ? (
                      <PendingCall call={call} idPrefix={`approval-${turn.event_id}`} />
                    ) : (
                      <code>{tool}</code>
                    )}
                  </td>
                  <td>
                    <Time iso={turn.updated_at} />
                  </td>
                  <td>
                    {turn.status === 'waiting_approval' ? (
                      <span class="actions">
                        <button
                          type="button"
                          aria-label={`Approve ${tool} in ${title}`}
                          disabled={deciding !== undefined}
                          onClick={() => void decideTurn(turn, 'approve')}
                        >
                          Approve
                        </button>
                        <button
                          type="button"
                          class="danger"
                          aria-label={`Deny ${tool} in ${title}`}
                          disabled={deciding !== undefined}
                          onClick={() => void decideTurn(turn, 'deny')}
                        >
                          Deny
                        </button>
                      </span>
                    ) : (
                      <a href={`#/chat?session=${encodeURIComponent(turn.session_key)}`}>Answer in chat</a>
                    )}
                  </td>
                </tr>
              );
            }}
          />
        </>
      )}

      <h2>Staged skills</h2>
      {!isAdmin && <p class="muted">An admin token is needed to approve or deny a staged skill.</p>}
      {staged.error !== undefined && <ErrorBox error={staged.error} />}
      <Table
        rows={staged.data?.items}
        empty="No skill is waiting for approval."
        caption="Skills proposed by the agent, waiting for approval"
        columns={['Skill', 'Version', 'Revises', 'Proposed', { label: 'Actions', hidden: true }]}
        row={(skill) => (
          <tr key={skill.id} data-skill-id={skill.id}>
            <td>
              <strong>{skill.name}</strong>
              <div class="muted">{skill.description}</div>
            </td>
            <td>{skill.version}</td>
            <td>{skill.evolved_from ? <code>{skill.evolved_from}</code> : '—'}</td>
            <td>
              <Time iso={skill.created_at} />
            </td>
            <td>
              {isAdmin ? (
                <span class="actions">
                  <button
                    type="button"
                    aria-label={`Approve skill ${skill.name}`}
                    disabled={deciding !== undefined}
                    onClick={() => void decideSkill(skill.id, 'approve')}
                  >
                    Approve
                  </button>
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Deny skill ${skill.name}`}
                    disabled={deciding !== undefined}
                    onClick={() => void decideSkill(skill.id, 'deny')}
                  >
                    Deny
                  </button>
                </span>
              ) : (
                <span class="muted">—</span>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}
