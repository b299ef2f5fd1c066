/**
 * The form of one cron job: schedule (with its next five run times in UTC and local time, computed as it is
 * typed), prompt and enabled. Creating posts every field; editing PUTs only what changed (a new schedule or
 * prompt withdraws the job's authorisation, which the form says). The server's errors appear at their fields.
 */
import { useMemo, useState } from 'preact/hooks';
import type { Schemas } from '../../api';
import { must } from '../../errors';
import { utcText } from '../../ui';
import { FieldError, fieldProps } from '../../ui/fields';
import { FormFooter, useSubmit, type EditorProps } from '../../ui/form';
import { nextRuns } from './next-runs';

export type CronJob = Schemas['CronJob'];

const localFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** The next five run times of `schedule`, as a live region under its field. */
function NextRunsPreview({ id, schedule }: { id: string; schedule: string }) {
  const result = useMemo(() => nextRuns(schedule, 5, new Date()), [schedule]);
  return (
    <div id={id} class="hint" aria-live="polite">
      {result.ok ? (
        <>
          <span>Next five runs (UTC, and your local time):</span>
          <ol class="next-runs">
            {result.times.map((time) => (
              <li key={time.getTime()}>
                {utcText(time.toISOString())} — {localFormat.format(time)}
              </li>
            ))}
          </ol>
        </>
      ) : (
        <span>{result.error}</span>
      )}
    </div>
  );
}

export interface CronFormProps extends EditorProps<CronJob> {
  /** The job to change; absent to create one. */
  job?: CronJob;
}

/** Create or edit form of a cron job. */
export function CronForm({ api, job, onSaved, onCancel }: CronFormProps) {
  const prefix = job ? `cron-edit-${job.id}` : 'cron-new';
  const [schedule, setSchedule] = useState(job?.schedule ?? '0 9 * * 1-5');
  const [prompt, setPrompt] = useState(job?.prompt ?? '');
  const [enabled, setEnabled] = useState(job?.enabled ?? true);
  const withdraws = job !== undefined && job.authorized && (schedule.trim() !== job.schedule || prompt !== job.prompt);

  const form = useSubmit(async () => {
    let saved: CronJob;
    if (job) {
      const body = {
        ...(schedule.trim() !== job.schedule ? { schedule } : {}),
        ...(prompt !== job.prompt ? { prompt } : {}),
        ...(enabled !== job.enabled ? { enabled } : {}),
      };
      saved =
        Object.keys(body).length === 0
          ? job
          : await must(api.PUT('/api/v1/cron/{cron_id}', { params: { path: { cron_id: job.id } }, body }));
    } else {
      saved = await must(api.POST('/api/v1/cron', { body: { schedule, prompt, enabled } }));
      setPrompt('');
    }
    onSaved(saved);
  });
  const fields = form.fields;

  return (
    <form
      class="form-grid cron-form"
      aria-label={job ? `Edit cron job ${job.schedule}` : 'New cron job'}
      noValidate
      onSubmit={form.onSubmit}
    >
      <div class="field">
        <label for={`${prefix}-schedule`}>
          Schedule <span class="hint">(five fields, UTC)</span>
        </label>
        <input
          {...fieldProps(`${prefix}-schedule`, fields.schedule, `${prefix}-next`)}
          type="text"
          class="code"
          autoComplete="off"
          spellcheck={false}
          value={schedule}
          onInput={(event) => setSchedule(event.currentTarget.value)}
        />
        <FieldError id={`${prefix}-schedule`} error={fields.schedule} />
        <NextRunsPreview id={`${prefix}-next`} schedule={schedule} />
      </div>
      <div class="field wide">
        <label for={`${prefix}-prompt`}>
          Prompt <span class="hint">(required: what the agent is asked on each run)</span>
        </label>
        <textarea
          {...fieldProps(`${prefix}-prompt`, fields.prompt)}
          rows={3}
          value={prompt}
          onInput={(event) => setPrompt(event.currentTarget.value)}
        />
        <FieldError id={`${prefix}-prompt`} error={fields.prompt} />
      </div>
      <div class="field wide">
        <span class="check">
          <input
            {...fieldProps(`${prefix}-enabled`, fields.enabled)}
            type="checkbox"
            checked={enabled}
            onChange={(event) => setEnabled(event.currentTarget.checked)}
          />
          <label for={`${prefix}-enabled`}>Enabled</label>
        </span>
        <FieldError id={`${prefix}-enabled`} error={fields.enabled} />
      </div>
      {withdraws && <p class="wide muted">Saving a new schedule or prompt withdraws this job’s authorisation.</p>}
      <FormFooter state={form} submit={job ? 'Save job' : 'Create job'} onCancel={onCancel} wide />
    </form>
  );
}
