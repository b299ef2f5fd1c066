/**
 * One task on the board: title, priority (word and value), progress, assignee, labels, source, times, its
 * result or error; for an admin Edit (the full form in place) and Cancel (asked twice). The card a link opens
 * is marked and brought into view.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { GatehouseClient } from '../../../../client/index.js';
import { Time } from '../../ui';
import { ConfirmButton } from '../../ui/fields';
import { TaskForm } from './task-form';
import { isFinished, type Task } from './task-model';

export interface TaskCardProps {
  api: GatehouseClient;
  task: Task;
  admin: boolean;
  onSaved: (task: Task) => void;
  onCancelTask: (task: Task) => void;
  /** Opened by a link (`#/tasks?id=`): marked, scrolled into view and focused. */
  linked?: boolean;
}

/** A task card; editing replaces its body with the form. */
export function TaskCard({ api, task, admin, onSaved, onCancelTask, linked = false }: TaskCardProps) {
  const [editing, setEditing] = useState(false);
  const card = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (!linked) return;
    card.current?.scrollIntoView({ block: 'center', inline: 'center' });
    card.current?.focus({ preventScroll: true });
  }, [linked]);
  const percent = Math.round(task.progress * 100);
  const titleId = `task-${task.id}-title`;
  return (
    <li
      ref={card}
      class={`card task-card priority-${task.priority}${linked ? ' linked' : ''}`}
      data-id={task.id}
      aria-labelledby={titleId}
      aria-current={linked ? 'true' : undefined}
      tabIndex={linked ? -1 : undefined}
    >
      <h3 id={titleId} class="task-title">
        {task.title}
      </h3>
      {editing ? (
        <TaskForm
          api={api}
          task={task}
          onSaved={(saved) => {
            setEditing(false);
            onSaved(saved);
          }}
          onCancel={() => setEditing(false)}
        />
      ) : (
        <>
          <div class="task-line">
            <span class={`priority priority-${task.priority}`} title={`Priority ${task.priority_value} of 10`}>
              {task.priority} · {task.priority_value}
            </span>
            <span class="muted">{task.assignee ? `Assignee: ${task.assignee}` : 'Agent task'}</span>
          </div>
          <div class="task-progress">
            <progress max={100} value={percent} aria-label={`Progress of ${task.title}`} />
            <span>{percent}%</span>
          </div>
          {task.description && <p class="task-description">{task.description}</p>}
          {task.labels.length > 0 && (
            <ul class="task-labels" aria-label="Labels">
              {task.labels.map((label) => (
                <li key={label}>{label}</li>
              ))}
            </ul>
          )}
          <dl class="task-meta">
            <dt>Created</dt>
            <dd>
              <Time iso={task.created_at} />
            </dd>
            {task.started_at && (
              <>
                <dt>Started</dt>
                <dd>
                  <Time iso={task.started_at} />
                </dd>
              </>
            )}
            {task.finished_at && (
              <>
                <dt>Finished</dt>
                <dd>
                  <Time iso={task.finished_at} />
                </dd>
              </>
            )}
            <dt>Source</dt>
            <dd>{task.source}</dd>
            {task.board_id && (
              <>
                <dt>Board</dt>
                <dd>{task.board_id}</dd>
              </>
            )}
            {task.parent_task_id && (
              <>
                <dt>Parent</dt>
                <dd>
                  <code>{task.parent_task_id}</code>
                </dd>
              </>
            )}
            <dt>Id</dt>
            <dd>
              <code>{task.id}</code>
            </dd>
          </dl>
          {task.error && <p class="task-error">Error: {task.error}</p>}
          {task.result && <p class="task-result">Result: {task.result}</p>}
          {admin && (
            <div class="actions">
              <button
                type="button"
                class="secondary"
                aria-label={`Edit task ${task.title}`}
                onClick={() => setEditing(true)}
              >
                Edit
              </button>
              {!isFinished(task) && (
                <ConfirmButton
                  label={`Cancel task ${task.title}`}
                  confirmText="Confirm cancel"
                  onConfirm={() => onCancelTask(task)}
                >
                  Cancel task
                </ConfirmButton>
              )}
            </div>
          )}
        </>
      )}
    </li>
  );
}
