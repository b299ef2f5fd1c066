/**
 * Skills (`#/skills`): every skill by name, newest version first, filtered by status; adding one (admin; an
 * api token is told why it cannot); the SKILL.md of the chosen one (as text); for a staged revision, a line diff against the skill it evolved from; approve, enable
 * and disable (admin). Live: every event of the `skills` topic reloads the list and the open skill.
 */
import { useMemo, useState } from 'preact/hooks';
import type { GatehouseClient } from '../../../client/index.js';
import type { Skill } from '../api';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Badge, ErrorBox, Time, useLive, useLoad, useThrottled } from '../ui';
import { Table } from '../ui/table';
import { lineDiff } from './skills/line-diff';
import { SkillForm } from './skills/skill-form';
import './skills/skills.css';

type Status = Skill['status'];
type Action = 'approve' | 'enable' | 'disable';

const STATUSES: readonly Status[] = ['active', 'staged', 'disabled'];

/** The actions open to a skill in `status` (the server's status table decides; these are the ones it allows). */
function actionsOf(status: Status): Action[] {
  if (status === 'staged') return ['approve', 'disable'];
  if (status === 'disabled') return ['enable'];
  return ['disable'];
}

const ACTION_LABEL: Record<Action, string> = { approve: 'Approve', enable: 'Enable', disable: 'Disable' };

/** The skill `id` with its SKILL.md, and the skill it evolved from (when there is one). */
async function loadDetail(api: GatehouseClient, id: string) {
  const skill = await must(api.GET('/api/v1/skills/{skill_id}', { params: { path: { skill_id: id } } }));
  const parent = skill.evolved_from
    ? await must(api.GET('/api/v1/skills/{skill_id}', { params: { path: { skill_id: skill.evolved_from } } })).catch(
        () => null,
      )
    : null;
  return { skill, parent };
}

export default function SkillsPage(props: PageProps) {
  const { api, role, live } = props;
  const admin = role === 'admin';
  const [status, setStatus] = useState<Status | ''>('');
  const [selected, setSelected] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [adding, setAdding] = useState(false);

  const list = useLoad(
    () => must(api.GET('/api/v1/skills', { params: { query: status ? { status } : {} } })).then((d) => d.items),
    [status],
  );
  const detail = useLoad(() => (selected ? loadDetail(api, selected) : Promise.resolve(undefined)), [selected]);
  const refresh = useThrottled(() => {
    list.reload();
    if (selected) detail.reload();
  });
  useLive(live, ['skills'], refresh);

  const act = async (skill: Skill, action: Action) => {
    setBusy(true);
    try {
      const path = { skill_id: skill.id };
      if (action === 'approve') await must(api.POST('/api/v1/skills/{skill_id}/approve', { params: { path } }));
      if (action === 'enable') await must(api.POST('/api/v1/skills/{skill_id}/enable', { params: { path } }));
      if (action === 'disable') await must(api.POST('/api/v1/skills/{skill_id}/disable', { params: { path } }));
      list.reload();
      if (selected) detail.reload();
    } catch (error) {
      props.notify(error);
    } finally {
      setBusy(false);
    }
  };

  const shown = detail.data?.skill.id === selected ? detail.data : undefined;
  const diff = useMemo(
    () => (shown?.parent ? lineDiff(shown.parent.skill_md, shown.skill.skill_md) : undefined),
    [shown],
  );
  const items = list.data;

  return (
    <section aria-labelledby="skills-title" class="skills-page">
      <h1 id="skills-title">Skills</h1>

      <div class="toolbar">
        <div class="field">
          <label for="skills-status">Status</label>
          <select
            id="skills-status"
            value={status}
            onChange={(event) => setStatus(event.currentTarget.value as Status | '')}
          >
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      </div>
      {admin ? (
        <details class="card add-card" open={adding} onToggle={(event) => setAdding(event.currentTarget.open)}>
          <summary>Add a skill</summary>
          <SkillForm
            api={api}
            onSaved={(saved) => {
              setAdding(false);
              setSelected(saved.id);
              list.reload();
            }}
            onCancel={() => setAdding(false)}
          />
        </details>
      ) : (
        <p class="muted" id="skills-admin-note">
          Adding, approving, enabling and disabling skills needs an admin token; this one is an api token, which may
          read skills only.
        </p>
      )}

      {list.error !== undefined && <ErrorBox error={list.error} />}
      {items === undefined && list.error === undefined && <p class="loading">Loading…</p>}
      <Table
        rows={items}
        empty={
          status
            ? `No ${status} skills.`
            : admin
              ? 'No skills yet. The agent proposes them, or add one with “Add a skill” above.'
              : 'No skills yet. The agent proposes them, or an admin adds them.'
        }
        caption="Skills by name, newest version first"
        columns={['Name', 'Version', 'Status', 'Description', 'Uses', 'Last used', 'Actions']}
        row={(skill) => (
          <tr key={skill.id} data-skill-id={skill.id} class={skill.id === selected ? 'selected' : undefined}>
            <td>{skill.name}</td>
            <td>{skill.version}</td>
            <td>
              <Badge status={skill.status} />
            </td>
            <td>{skill.description}</td>
            <td>{skill.use_count}</td>
            <td>
              <Time iso={skill.last_used} />
            </td>
            <td>
              <span class="actions">
                <button
                  type="button"
                  class="secondary"
                  aria-label={`View skill ${skill.name} version ${skill.version}`}
                  aria-pressed={skill.id === selected}
                  onClick={() => setSelected(skill.id === selected ? null : skill.id)}
                >
                  View
                </button>
                {admin &&
                  actionsOf(skill.status).map((action) => (
                    <button
                      key={action}
                      type="button"
                      class={action === 'disable' ? 'danger' : undefined}
                      disabled={busy}
                      aria-label={`${ACTION_LABEL[action]} skill ${skill.name} version ${skill.version}`}
                      onClick={() => void act(skill, action)}
                    >
                      {ACTION_LABEL[action]}
                    </button>
                  ))}
              </span>
            </td>
          </tr>
        )}
      />

      {selected && (
        <section class="card skill-detail" aria-labelledby="skill-detail-title">
          {detail.error !== undefined && <ErrorBox error={detail.error} />}
          {!shown && detail.error === undefined && <p class="loading">Loading…</p>}
          {shown && (
            <>
              <h2 id="skill-detail-title">
                {shown.skill.name} <span class="muted">version {shown.skill.version}</span>{' '}
                <Badge status={shown.skill.status} />
              </h2>
              <p class="muted">
                Created <Time iso={shown.skill.created_at} />, updated <Time iso={shown.skill.updated_at} />
                {shown.skill.category ? `, category ${shown.skill.category}` : ''}
              </p>
              {shown.parent && diff && (
                <>
                  <h3>
                    Changes from version {shown.parent.version} <Badge status={shown.parent.status} />
                  </h3>
                  <p class="muted">
                    {diff.filter((l) => l.kind === 'added').length} lines added,{' '}
                    {diff.filter((l) => l.kind === 'removed').length} removed.
                  </p>
                  <pre class="skill-diff" aria-label={`Changes from version ${shown.parent.version}`} tabIndex={0}>
                    {diff.map((line, index) => (
                      <span key={index} class={`diff-${line.kind}`}>
                        {line.kind === 'added' ? '+ ' : line.kind === 'removed' ? '- ' : '  '}
                        {line.text}
                      </span>
                    ))}
                  </pre>
                </>
              )}
              {shown.skill.evolved_from && !shown.parent && (
                <p class="muted">The skill it evolved from ({shown.skill.evolved_from}) is gone.</p>
              )}
              <h3>SKILL.md</h3>
              <pre class="skill-md" aria-label={`SKILL.md of ${shown.skill.name}`} tabIndex={0}>
                {shown.skill.skill_md}
              </pre>
            </>
          )}
        </section>
      )}
    </section>
  );
}
