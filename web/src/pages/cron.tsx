/**
 * Cron (`#/cron`): every job, oldest first, with its schedule, prompt, authorisation and next and last runs;
 * create and edit (the next five run times shown as the schedule is typed; errors at the field); authorise,
 * revoke, trigger and delete (admin); the run history of each job. Live: every event of the `cron` topic (a
 * write or a run) reloads the list and the open histories.
 */
import { useState } from 'preact/hooks';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Badge, Empty, ErrorBox, Time, useLive, useLoad, useThrottled } from '../ui';
import { Table } from '../ui/table';
import { ConfirmButton } from '../ui/fields';
import { CronForm, type CronJob } from './cron/cron-form';
import './cron/cron.css';

/** Runs shown per job. */
const RUNS_LIMIT = 20;

/** The run history of one job, reloaded when `version` changes. */
function RunHistory({ api, job, version }: Pick<PageProps, 'api'> & { job: CronJob; version: number }) {
  const runs = useLoad(
    () =>
      must(
        api.GET('/api/v1/cron/{cron_id}/runs', {
          params: { path: { cron_id: job.id }, query: { limit: RUNS_LIMIT } },
        }),
      ).then((d) => d.items),
    [job.id, version],
  );
  if (runs.error !== undefined) return <ErrorBox error={runs.error} />;
  if (runs.data === undefined) return <p class="loading">Loading…</p>;
  return (
    <Table
      rows={runs.data}
      empty="No runs yet."
      caption={`Runs of the job ${job.schedule}, newest first`}
      columns={['Scheduled', 'Trigger', 'Status', 'Started', 'Finished', 'Turn', 'Reason']}
      row={(run) => (
        <tr key={run.id} data-run-id={run.id}>
          <td>
            <Time iso={run.scheduled_at} />
          </td>
          <td>{run.triggered_by}</td>
          <td>
            <Badge status={run.status} />
          </td>
          <td>
            <Time iso={run.started_at} />
          </td>
          <td>
            <Time iso={run.finished_at} />
          </td>
          <td>{run.event_id ? <code>{run.event_id}</code> : '—'}</td>
          <td>{run.reason ?? '—'}</td>
        </tr>
      )}
    />
  );
}

export default function CronPage(props: PageProps) {
  const { api, role, live } = props;
  const admin = role === 'admin';
  const [editing, setEditing] = useState<string | null>(null);
  const [history, setHistory] = useState<ReadonlySet<string>>(new Set());
  const [version, setVersion] = useState(0);
  const [busy, setBusy] = useState(false);

  // The cron API is admin-only (reads too), so an api token loads nothing and is told so.
  const jobs = useLoad(
    () => (admin ? must(api.GET('/api/v1/cron')).then((d) => d.items) : Promise.resolve(undefined)),
    [admin],
  );
  const refresh = useThrottled(() => {
    jobs.reload();
    setVersion((v) => v + 1);
  });
  useLive(live, ['cron'], refresh);

  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await action();
      refresh();
    } catch (error) {
      props.notify(error);
    } finally {
      setBusy(false);
    }
  };
  const path = (job: CronJob) => ({ params: { path: { cron_id: job.id } } });
  const toggleHistory = (job: CronJob) =>
    setHistory((set) => {
      const next = new Set(set);
      if (!next.delete(job.id)) next.add(job.id);
      return next;
    });

  return (
    <section aria-labelledby="cron-title" class="cron-page">
      <h1 id="cron-title">Cron</h1>
      <p class="muted">
        Schedules are five-field cron expressions in UTC. A new or changed job runs only once authorised.
      </p>

      {admin ? (
        <details class="card add-card">
          <summary>New cron job</summary>
          <CronForm api={api} onSaved={refresh} />
        </details>
      ) : (
        <p class="muted">Cron jobs and their runs are shown only to an admin token.</p>
      )}

      {jobs.error !== undefined && <ErrorBox error={jobs.error} />}
      {admin && jobs.data === undefined && jobs.error === undefined && <p class="loading">Loading…</p>}
      {jobs.data !== undefined && jobs.data.length === 0 && <Empty>No cron jobs yet.</Empty>}
      {jobs.data !== undefined && jobs.data.length > 0 && (
        <ul class="card-list cron-jobs" aria-label="Cron jobs">
          {jobs.data.map((job) => (
            <li key={job.id} class="card cron-job" data-cron-id={job.id}>
              <h2>
                <code>{job.schedule}</code>
                <Badge status={job.enabled ? 'enabled' : 'disabled'} />
                <Badge status={job.authorized ? 'authorized' : 'not_authorized'} />
              </h2>
              <p class="cron-prompt">{job.prompt}</p>
              <dl class="cron-meta">
                <dt>Next run</dt>
                <dd>
                  <Time iso={job.next_run} />
                </dd>
                <dt>Last run</dt>
                <dd>
                  <Time iso={job.last_run} />
                </dd>
                <dt>Id</dt>
                <dd>
                  <code>{job.id}</code>
                </dd>
              </dl>
              {editing === job.id ? (
                <CronForm
                  key={job.id}
                  api={api}
                  job={job}
                  onSaved={() => {
                    setEditing(null);
                    refresh();
                  }}
                  onCancel={() => setEditing(null)}
                />
              ) : (
                <span class="actions">
                  {admin && (
                    <>
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Edit job ${job.id}`}
                        onClick={() => setEditing(job.id)}
                      >
                        Edit
                      </button>
                      {job.authorized ? (
                        <button
                          type="button"
                          class="secondary"
                          disabled={busy}
                          aria-label={`Revoke job ${job.id}`}
                          onClick={() => void run(() => must(api.POST('/api/v1/cron/{cron_id}/revoke', path(job))))}
                        >
                          Revoke
                        </button>
                      ) : (
                        <button
                          type="button"
                          disabled={busy}
                          aria-label={`Authorize job ${job.id}`}
                          onClick={() => void run(() => must(api.POST('/api/v1/cron/{cron_id}/authorize', path(job))))}
                        >
                          Authorize
                        </button>
                      )}
                      <button
                        type="button"
                        disabled={busy}
                        aria-label={`Trigger job ${job.id} now`}
                        onClick={() =>
                          void run(async () => {
                            await must(api.POST('/api/v1/cron/{cron_id}/trigger', path(job)));
                            setHistory((set) => new Set(set).add(job.id));
                          })
                        }
                      >
                        Trigger
                      </button>
                    </>
                  )}
                  <button
                    type="button"
                    class="secondary"
                    aria-expanded={history.has(job.id)}
                    aria-label={`${history.has(job.id) ? 'Hide runs' : 'Runs'} of job ${job.id}`}
                    onClick={() => toggleHistory(job)}
                  >
                    {history.has(job.id) ? 'Hide runs' : 'Runs'}
                  </button>
                  {admin && (
                    <ConfirmButton
                      label={`Delete job ${job.id}`}
                      confirmText="Confirm delete"
                      disabled={busy}
                      onConfirm={() => void run(() => must(api.DELETE('/api/v1/cron/{cron_id}', path(job))))}
                    >
                      Delete
                    </ConfirmButton>
                  )}
                </span>
              )}
              {history.has(job.id) && (
                <section class="cron-runs" aria-label={`Run history of job ${job.id}`}>
                  <RunHistory api={api} job={job} version={version} />
                </section>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
