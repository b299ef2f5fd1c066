/**
 * Cron (`#/cron`): every job, oldest first, with its schedule (and the schedule in plain English), prompt,
 * authorisation and next and last runs — or, for a job that will not run, why not (then Trigger is disabled
 * with that reason); `#/cron?id=<id>` scrolls to and marks one job;
 * create and edit (the next five run times shown as the schedule is typed; errors at the field); authorise,
 * revoke, trigger and delete (admin); the run history of each job. Live: every event of the `cron` topic (a
 * write or a run) reloads the list and the open histories.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Badge, Empty, ErrorBox, Time, useLive, useLoad, useThrottled } from '../ui';
import { Table } from '../ui/table';
import { ConfirmButton } from '../ui/fields';
import { CronForm, type CronJob } from './cron/cron-form';
import { describeSchedule } from './cron/describe';
import { useHashQuery } from '../ui/hash-query';
import './cron/cron.css';

/**
 * Why `job` will not run on its schedule, or null when it will. Unauthorised jobs are skipped under the
 * standard and extended profiles only (DECISIONS §9); `profile` is null until the configuration is read.
 */
export function blockedReason(job: CronJob, profile: string | null): string | null {
  if (!job.authorized && profile !== 'minimal') {
    return 'Not authorised: it will not run (each run is skipped) until an admin authorises it.';
  }
  if (!job.enabled) return 'Disabled: it will not run on its schedule until it is enabled.';
  return null;
}

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
  // The security profile decides whether an unauthorised job is skipped; a failure to read it assumes it is.
  const profile = useLoad(
    () =>
      admin
        ? must(api.GET('/api/v1/config')).then(
            (config) => (config as { security?: { profile?: string } }).security?.profile ?? null,
          )
        : Promise.resolve(null),
    [admin],
  );
  const linked = useHashQuery().get('id') ?? undefined;
  const linkedCard = useRef<HTMLLIElement | null>(null);
  const jobsShown = jobs.data !== undefined;
  useEffect(() => {
    if (!linked || !jobsShown) return;
    linkedCard.current?.scrollIntoView({ block: 'center' });
    linkedCard.current?.focus({ preventScroll: true });
  }, [linked, jobsShown]);
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
      {linked && jobs.data !== undefined && !jobs.data.some((job) => job.id === linked) && (
        <p class="muted" role="status">
          No cron job <code>{linked}</code>: it may have been deleted.
        </p>
      )}
      {jobs.data !== undefined && jobs.data.length > 0 && (
        <ul class="card-list cron-jobs" aria-label="Cron jobs">
          {jobs.data.map((job) => {
            const plain = describeSchedule(job.schedule);
            const blocked = blockedReason(job, profile.data ?? null);
            const isLinked = job.id === linked;
            return (
              <li
                key={job.id}
                class={isLinked ? 'card cron-job linked' : 'card cron-job'}
                data-cron-id={job.id}
                aria-current={isLinked ? 'true' : undefined}
                tabIndex={isLinked ? -1 : undefined}
                ref={isLinked ? linkedCard : undefined}
              >
                <h2>
                  <code>{job.schedule}</code>
                  {plain && <span class="cron-plain">{plain}</span>}
                  <Badge status={job.enabled ? 'enabled' : 'disabled'} />
                  <Badge status={job.authorized ? 'authorized' : 'not_authorized'} />
                </h2>
                <p class="cron-prompt">{job.prompt}</p>
                <dl class="cron-meta">
                  {blocked ? (
                    <>
                      <dt>Won’t run</dt>
                      <dd id={`cron-blocked-${job.id}`} class="cron-blocked">
                        {blocked}
                      </dd>
                    </>
                  ) : (
                    <>
                      <dt>Next run</dt>
                      <dd>
                        <Time iso={job.next_run} />
                      </dd>
                    </>
                  )}
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
                            onClick={() =>
                              void run(() => must(api.POST('/api/v1/cron/{cron_id}/authorize', path(job))))
                            }
                          >
                            Authorize
                          </button>
                        )}
                        <button
                          type="button"
                          disabled={busy || blocked !== null}
                          aria-label={`Trigger job ${job.id} now`}
                          aria-describedby={blocked ? `cron-blocked-${job.id}` : undefined}
                          title={blocked ?? undefined}
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
            );
          })}
        </ul>
      )}
    </section>
  );
}
