/**
 * Approvals inbox (`#/approvals`): every paused turn (waiting for approval or for an answer) and every staged
 * skill, with approve and deny. Paused turns come from `GET /turns` (admin; every session, oldest first, paged
 * to the inbox's cap) and reload when the live `turns` topic reports a status change; staged skills reload on
 * a `skills` change. An api token sees the staged skills only, without the actions.
 */
import { useState } from 'preact/hooks';
import type { Turn } from '../api';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Badge, ErrorBox, Time, useLive, useLoad, useThrottled } from '../ui';
import { Table } from '../ui/table';

/** The most paused turns the inbox shows (oldest first); the rest wait for a decision on these. */
const INBOX_CAP = 200;

export default function ApprovalsPage({ api, role, live, notify }: PageProps) {
  const isAdmin = role === 'admin';
  const [deciding, setDeciding] = useState<string>();

  const paused = useLoad(async (): Promise<Turn[] | undefined> => {
    if (!isAdmin) return undefined;
    const page = await must(api.GET('/api/v1/turns', { params: { query: { limit: INBOX_CAP } } }));
    return page.items;
  }, [api, isAdmin]);
  const staged = useLoad(() => must(api.GET('/api/v1/skills', { params: { query: { status: 'staged' } } })), [api]);

  const reloadTurns = useThrottled(paused.reload, 400);
  const reloadSkills = useThrottled(staged.reload, 400);
  useLive(live, ['turns', 'skills'], (event) => {
    if (event.topic === 'skills') reloadSkills();
    else if (event.event === 'status' || event.event === 'done') reloadTurns();
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
      paused.reload,
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
            rows={paused.data}
            empty="No turn is waiting for approval or an answer."
            caption="Turns waiting for a person, oldest first"
            columns={['Session', 'Status', 'Tool or question', 'Waiting since', { label: 'Actions', hidden: true }]}
            row={(turn) => (
              <tr key={turn.event_id} data-event-id={turn.event_id}>
                <td>
                  <a href={`#/chat?session=${encodeURIComponent(turn.session_key)}`}>{turn.session_key}</a>
                  <div class="muted">
                    <code>{turn.event_id}</code>
                  </div>
                </td>
                <td>
                  <Badge status={turn.status} />
                </td>
                <td>
                  {turn.status === 'waiting_approval' ? (
                    <code>{turn.current_tool ?? 'a tool'}</code>
                  ) : (
                    (turn.response ?? 'a question')
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
                        aria-label={`Approve ${turn.current_tool ?? 'tool'} in ${turn.session_key}`}
                        disabled={deciding !== undefined}
                        onClick={() => void decideTurn(turn, 'approve')}
                      >
                        Approve
                      </button>
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Deny ${turn.current_tool ?? 'tool'} in ${turn.session_key}`}
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
            )}
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
