/**
 * Tasks (`#/tasks`): a board with one column per status (the newest 100 of each), filtered by priority and
 * board; create with every field (validation errors at the field), edit (fields, status, progress,
 * priority) and cancel (admin). Live: every event of the `tasks` topic carries the task, which moves to its
 * column at once. `#/tasks?id=<id>` marks that task and brings it into view (read on its own when the board's
 * columns or filters leave it out).
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { GatehouseClient } from '../../../client/index.js';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Empty, ErrorBox, useLive, useLoad } from '../ui';
import { usePoll } from '../ui/fields';
import { useFilters } from '../ui/filters';
import { useHashQuery } from '../ui/hash-query';
import { TaskCard } from './tasks/task-card';
import { TaskForm } from './tasks/task-form';
import { newer, PRIORITIES, STATUSES, taskOfEvent, type Task, type TaskStatus } from './tasks/task-model';
import './tasks/tasks.css';

/** Tasks shown per column. */
const COLUMN_LIMIT = 100;
/** A full reload now and then, for events missed while the live feed was down. */
const RESYNC_MS = 30_000;

// A type alias, not an interface, so that it is a `Record<string, string>` for `useFilters`.
type Filters = {
  priority: Task['priority'] | '';
  board: string;
};

/** The newest tasks of every status, one request per column. */
async function loadBoard(api: GatehouseClient, filters: Filters): Promise<Task[]> {
  const columns = await Promise.all(
    STATUSES.map((status) =>
      must(
        api.GET('/api/v1/tasks', {
          params: {
            query: {
              status,
              limit: COLUMN_LIMIT,
              ...(filters.priority ? { priority: filters.priority } : {}),
              ...(filters.board ? { board_id: filters.board } : {}),
            },
          },
        }),
      ),
    ),
  );
  return columns.flatMap((column) => column.items);
}

/** True when `task` belongs on the board under `filters`. */
function matches(task: Task, filters: Filters): boolean {
  return (
    (!filters.priority || task.priority === filters.priority) && (!filters.board || task.board_id === filters.board)
  );
}

export default function TasksPage(props: PageProps) {
  const { api, role, live } = props;
  const admin = role === 'admin';
  const search = useFilters<Filters>({ priority: '', board: '' });
  const filters = search.applied;
  const [seen, setSeen] = useState<ReadonlyMap<string, Task>>(new Map());
  const board = useLoad(() => loadBoard(api, filters), [filters]);
  usePoll(board.reload, RESYNC_MS, true);

  /** Keeps the newest version of a task, whether from a load, a live event or this page's own write. */
  const remember = (task: Task) => setSeen((map) => new Map(map).set(task.id, newer(map.get(task.id), task)));
  useLive(live, ['tasks'], (event) => {
    const task = taskOfEvent(event.data);
    if (task) remember(task);
  });

  // A linked task is read on its own, so it shows even when it is not among its column's newest.
  const linked = useHashQuery().get('id') ?? undefined;
  const [linkError, setLinkError] = useState<unknown>(undefined);
  useEffect(() => {
    setLinkError(undefined);
    if (!linked) return;
    let current = true;
    must(api.GET('/api/v1/tasks/{task_id}', { params: { path: { task_id: linked } } })).then(
      ({ task }) => current && remember(task),
      (error: unknown) => current && setLinkError(error),
    );
    return () => {
      current = false;
    };
  }, [api, linked]);
  const linkedTask = linked ? (seen.get(linked) ?? board.data?.find((task) => task.id === linked)) : undefined;

  const columns = useMemo(() => {
    const byId = new Map<string, Task>();
    for (const task of board.data ?? []) byId.set(task.id, newer(seen.get(task.id), task));
    for (const task of seen.values()) if (!byId.has(task.id)) byId.set(task.id, task);
    const out = new Map<TaskStatus, Task[]>(STATUSES.map((status) => [status, []]));
    for (const task of byId.values()) if (matches(task, filters)) out.get(task.status)?.push(task);
    for (const list of out.values()) list.sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
    return out;
  }, [board.data, seen, filters]);

  const cancel = async (task: Task) => {
    try {
      const { task: cancelled } = await must(
        api.DELETE('/api/v1/tasks/{task_id}', { params: { path: { task_id: task.id } } }),
      );
      remember(cancelled);
    } catch (error) {
      props.notify(error);
    }
  };

  return (
    <section aria-labelledby="tasks-title" class="tasks-page">
      <h1 id="tasks-title">Tasks</h1>

      <form
        class="toolbar"
        aria-label="Filter tasks"
        onSubmit={(event) => {
          event.preventDefault();
          search.submit();
        }}
      >
        <div class="field">
          <label for="tasks-priority">Priority</label>
          <select
            id="tasks-priority"
            value={filters.priority}
            onChange={(event) => search.apply({ priority: event.currentTarget.value as Filters['priority'] })}
          >
            <option value="">Any</option>
            {PRIORITIES.map((priority) => (
              <option key={priority} value={priority}>
                {priority}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="tasks-board">Board</label>
          <input id="tasks-board" type="text" autoComplete="off" placeholder="Every board" {...search.field('board')} />
        </div>
        <button type="submit" class="secondary">
          Filter
        </button>
      </form>

      {admin ? (
        <details class="card add-card">
          <summary>New task</summary>
          <TaskForm api={api} onSaved={remember} />
        </details>
      ) : (
        <p class="muted">Creating, editing and cancelling tasks needs an admin token.</p>
      )}

      {linkError !== undefined && <ErrorBox error={linkError} />}
      {linkedTask && !matches(linkedTask, filters) && (
        <p class="muted" role="status">
          The linked task “{linkedTask.title}” is hidden by the filters.
        </p>
      )}
      {board.error !== undefined && <ErrorBox error={board.error} />}
      {board.data === undefined && board.error === undefined && <p class="loading">Loading…</p>}

      {board.data !== undefined && (
        // Focusable, so the board can be scrolled sideways from the keyboard when its columns overflow.
        <div class="board" role="region" aria-label="Task board" tabIndex={0}>
          {STATUSES.map((status) => {
            const tasks = columns.get(status) ?? [];
            return (
              <section key={status} class={`column column-${status}`} aria-labelledby={`column-${status}`}>
                <h2 id={`column-${status}`}>
                  {status[0]?.toUpperCase()}
                  {status.slice(1)} <span class="count">{tasks.length}</span>
                </h2>
                {tasks.length === 0 ? (
                  <Empty>No {status} tasks.</Empty>
                ) : (
                  <ul class="card-list" aria-label={`${status} tasks`}>
                    {tasks.map((task) => (
                      <TaskCard
                        key={task.id}
                        api={api}
                        task={task}
                        admin={admin}
                        onSaved={remember}
                        onCancelTask={(t) => void cancel(t)}
                        linked={task.id === linked}
                      />
                    ))}
                  </ul>
                )}
              </section>
            );
          })}
        </div>
      )}
    </section>
  );
}
