/**
 * The form of one task: every create field (title, description, priority, labels, assignee, source, board,
 * parent task, metadata) and, when editing, status and progress. Creating posts every filled field; editing
 * PATCHes only what changed (an emptied text field becomes `null`, which clears it). The server's validation
 * errors appear at their fields; metadata that is not a JSON object is refused here before sending.
 */
import { useState } from 'preact/hooks';
import type { GatehouseClient } from '../../../../client/index.js';
import { must } from '../../errors';
import { FieldError, fieldProps, parseJsonObject, splitList } from '../../ui/fields';
import { FormFooter, useSubmit, type EditorProps } from '../../ui/form';
import { ALLOWED_NEXT, SOURCES, type Task, type TaskStatus } from './task-model';

/** The editable text of the form, one string per control. */
interface Draft {
  title: string;
  description: string;
  priority: string;
  labels: string;
  assignee: string;
  source: Task['source'];
  board_id: string;
  parent_task_id: string;
  metadata: string;
  status: TaskStatus;
  progress: string;
}

function draftOf(task: Task | undefined): Draft {
  return {
    title: task?.title ?? '',
    description: task?.description ?? '',
    priority: String(task?.priority_value ?? 5),
    labels: task?.labels.join(', ') ?? '',
    assignee: task?.assignee ?? '',
    source: task?.source ?? 'api',
    board_id: task?.board_id ?? '',
    parent_task_id: task?.parent_task_id ?? '',
    metadata: task && Object.keys(task.metadata).length > 0 ? JSON.stringify(task.metadata, null, 2) : '',
    status: task?.status ?? 'pending',
    progress: String(Math.round((task?.progress ?? 0) * 100)),
  };
}

/** Priority text → number (empty → undefined); whether it is an integer 0..10 is the server's to say. */
function parseNumber(text: string): number | undefined {
  return text.trim() === '' ? undefined : Number(text);
}

export interface TaskFormProps extends EditorProps<Task> {
  /** The task to change; absent to create one. */
  task?: Task;
}

/** Create or edit form of a task. */
export function TaskForm({ api, task, onSaved, onCancel }: TaskFormProps) {
  const prefix = task ? `task-edit-${task.id}` : 'task-new';
  const [draft, setDraft] = useState<Draft>(() => draftOf(task));
  const set = (name: keyof Draft) => (event: { currentTarget: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: event.currentTarget.value }));

  const form = useSubmit(async () => {
    const metadata = parseJsonObject(draft.metadata, 'metadata');
    const saved = task ? await patch(api, task, draft, metadata) : await create(api, draft, metadata);
    if (!task) setDraft(draftOf(undefined));
    onSaved(saved);
  });
  const fields = form.fields;

  const text = (name: keyof Draft, label: string, hint?: string) => (
    <div class="field">
      <label for={`${prefix}-${name}`}>
        {label} {hint && <span class="hint">{hint}</span>}
      </label>
      <input
        {...fieldProps(`${prefix}-${name}`, fields[name])}
        type="text"
        autoComplete="off"
        value={draft[name]}
        onInput={set(name)}
      />
      <FieldError id={`${prefix}-${name}`} error={fields[name]} />
    </div>
  );
  const finished = task !== undefined && ALLOWED_NEXT[task.status].length === 0;

  return (
    <form
      class="form-grid task-form"
      aria-label={task ? `Edit task ${task.title}` : 'New task'}
      noValidate
      onSubmit={form.onSubmit}
    >
      <div class="field wide">
        <label for={`${prefix}-title`}>
          Title <span class="hint">(required)</span>
        </label>
        <input
          {...fieldProps(`${prefix}-title`, fields.title)}
          type="text"
          autoComplete="off"
          required
          value={draft.title}
          onInput={set('title')}
        />
        <FieldError id={`${prefix}-title`} error={fields.title} />
      </div>
      <div class="field wide">
        <label for={`${prefix}-description`}>Description</label>
        <textarea
          {...fieldProps(`${prefix}-description`, fields.description)}
          rows={3}
          value={draft.description}
          onInput={set('description')}
        />
        <FieldError id={`${prefix}-description`} error={fields.description} />
      </div>
      <div class="field">
        <label for={`${prefix}-priority`}>
          Priority <span class="hint">(0–10; 5 normal)</span>
        </label>
        <input
          {...fieldProps(`${prefix}-priority`, fields.priority)}
          type="number"
          min={0}
          max={10}
          step={1}
          value={draft.priority}
          onInput={set('priority')}
        />
        <FieldError id={`${prefix}-priority`} error={fields.priority} />
      </div>
      {text('labels', 'Labels', '(comma-separated)')}
      {text('assignee', 'Assignee', '(empty or “agent”: the agent runs it)')}
      <div class="field">
        <label for={`${prefix}-source`}>Source</label>
        <select {...fieldProps(`${prefix}-source`, fields.source)} value={draft.source} onChange={set('source')}>
          {SOURCES.map((source) => (
            <option key={source} value={source}>
              {source}
            </option>
          ))}
        </select>
        <FieldError id={`${prefix}-source`} error={fields.source} />
      </div>
      {text('board_id', 'Board')}
      {text('parent_task_id', 'Parent task id')}
      {task && (
        <>
          <div class="field">
            <label for={`${prefix}-status`}>Status</label>
            <select
              {...fieldProps(`${prefix}-status`, fields.status)}
              value={draft.status}
              disabled={finished}
              onChange={set('status')}
            >
              {[task.status, ...ALLOWED_NEXT[task.status]].map((status) => (
                <option key={status} value={status}>
                  {status}
                </option>
              ))}
            </select>
            <FieldError id={`${prefix}-status`} error={fields.status} />
          </div>
          <div class="field">
            <label for={`${prefix}-progress`}>
              Progress <span class="hint">(%)</span>
            </label>
            <input
              {...fieldProps(`${prefix}-progress`, fields.progress)}
              type="number"
              min={0}
              max={100}
              step={1}
              disabled={finished}
              value={draft.progress}
              onInput={set('progress')}
            />
            <FieldError id={`${prefix}-progress`} error={fields.progress} />
          </div>
        </>
      )}
      <div class="field wide">
        <label for={`${prefix}-metadata`}>
          Metadata <span class="hint">(a JSON object)</span>
        </label>
        <textarea
          {...fieldProps(`${prefix}-metadata`, fields.metadata)}
          class="code"
          rows={3}
          spellcheck={false}
          placeholder='{"ticket": "OPS-12"}'
          value={draft.metadata}
          onInput={set('metadata')}
        />
        <FieldError id={`${prefix}-metadata`} error={fields.metadata} />
      </div>
      <FormFooter state={form} submit={task ? 'Save task' : 'Create task'} onCancel={onCancel} wide />
    </form>
  );
}

/** POST /tasks with every filled field. */
async function create(api: GatehouseClient, draft: Draft, metadata: Record<string, unknown> | undefined) {
  const priority = parseNumber(draft.priority);
  const labels = splitList(draft.labels);
  const { task } = await must(
    api.POST('/api/v1/tasks', {
      body: {
        title: draft.title,
        source: draft.source,
        ...(draft.description.trim() ? { description: draft.description } : {}),
        ...(priority !== undefined ? { priority } : {}),
        ...(labels.length > 0 ? { labels } : {}),
        ...(draft.assignee.trim() ? { assignee: draft.assignee.trim() } : {}),
        ...(draft.board_id.trim() ? { board_id: draft.board_id.trim() } : {}),
        ...(draft.parent_task_id.trim() ? { parent_task_id: draft.parent_task_id.trim() } : {}),
        ...(metadata ? { metadata } : {}),
      },
    }),
  );
  return task;
}

/** PATCH /tasks/{id} with the fields that differ from the task as loaded. */
async function patch(api: GatehouseClient, task: Task, draft: Draft, metadata: Record<string, unknown> | undefined) {
  const before = draftOf(task);
  const changed = (name: keyof Draft) => draft[name] !== before[name];
  const nullable = (value: string) => (value.trim() === '' ? null : value.trim());
  const priority = parseNumber(draft.priority);
  const progress = parseNumber(draft.progress);
  const body = {
    ...(changed('title') ? { title: draft.title } : {}),
    ...(changed('description') ? { description: draft.description.trim() === '' ? null : draft.description } : {}),
    ...(changed('priority') && priority !== undefined ? { priority } : {}),
    ...(changed('labels') ? { labels: splitList(draft.labels) } : {}),
    ...(changed('assignee') ? { assignee: nullable(draft.assignee) } : {}),
    ...(changed('source') ? { source: draft.source } : {}),
    ...(changed('board_id') ? { board_id: nullable(draft.board_id) } : {}),
    ...(changed('parent_task_id') ? { parent_task_id: nullable(draft.parent_task_id) } : {}),
    ...(changed('metadata') ? { metadata: metadata ?? {} } : {}),
    ...(changed('status') ? { status: draft.status } : {}),
    ...(changed('progress') && progress !== undefined ? { progress: progress / 100 } : {}),
  };
  if (Object.keys(body).length === 0) return task;
  const saved = await must(api.PATCH('/api/v1/tasks/{task_id}', { params: { path: { task_id: task.id } }, body }));
  return saved.task;
}
