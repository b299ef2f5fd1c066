/**
 * Memory (`#/memory`): the agent's memory entries, newest first, or ranked by a search with each entry's
 * relevance score; a tag filter; add, edit and delete (admin). The list follows the live `memory` topic; a
 * search is never repeated unasked (it moves `last_accessed`): a change while one is shown offers to search again.
 */
import { useMemo, useState } from 'preact/hooks';
import type { components } from '../../../client/index.js';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Empty, ErrorBox, Time, useLoad } from '../ui';
import { ConfirmButton } from '../ui/fields';
import { SearchForm, useFilters } from '../ui/filters';
import { useLiveReload } from '../ui/live-reload';
import { Highlighted, queryTokens } from '../ui/highlight';
import { MemoryEditor } from './memory/memory-editor';
import './memory/memory.css';

type MemoryEntry = components['schemas']['MemoryEntry'];

/** Entries per page. */
const PAGE_SIZE = 50;

export default function MemoryPage(props: PageProps) {
  const { api, role, live } = props;
  const admin = role === 'admin';
  const [offset, setOffset] = useState(0);
  const search = useFilters({ query: '', tag: '' }, () => setOffset(0));
  const filters = search.applied;
  const [editing, setEditing] = useState<string | null>(null);

  const list = useLoad(
    () =>
      must(
        api.GET('/api/v1/memory', {
          params: {
            query: {
              limit: PAGE_SIZE,
              offset,
              ...(filters.query ? { query: filters.query } : {}),
              ...(filters.tag ? { tag: filters.tag } : {}),
            },
          },
        }),
      ),
    [filters, offset],
  );
  const { stale } = useLiveReload(live, ['memory'], list.reload, filters.query !== '' || editing !== null);
  const terms = useMemo(() => queryTokens(filters.query), [filters.query]);

  const remove = async (entry: MemoryEntry) => {
    try {
      await must(api.DELETE('/api/v1/memory/{id}', { params: { path: { id: entry.id } } }));
      list.reload();
    } catch (error) {
      props.notify(error);
    }
  };

  const data = list.data;
  const searching = filters.query !== '';
  return (
    <section aria-labelledby="memory-title" class="memory-page">
      <h1 id="memory-title">Memory</h1>

      <SearchForm label="Search memory" filters={search}>
        <div class="field">
          <label for="memory-query">Search</label>
          <input id="memory-query" type="search" placeholder="Words to look for" {...search.field('query')} />
        </div>
        <div class="field">
          <label for="memory-tag">Tag</label>
          <input id="memory-tag" type="text" placeholder="Any tag" autoComplete="off" {...search.field('tag')} />
        </div>
      </SearchForm>

      {admin ? (
        <details class="card add-card">
          <summary>Add an entry</summary>
          <MemoryEditor api={api} onSaved={search.clear} />
        </details>
      ) : (
        <p class="muted">Adding, editing and deleting entries needs an admin token.</p>
      )}

      {list.error !== undefined && <ErrorBox error={list.error} />}

      <p class="muted" role="status">
        {data === undefined
          ? 'Loading…'
          : `${searching ? 'Matches' : 'Entries'}${filters.tag ? ` tagged “${filters.tag}”` : ''}: ${data.total}` +
            (searching ? ', best first' : ', newest first')}
      </p>

      {stale && searching && (
        <p class="card memory-stale" role="status">
          Entries changed since this search.{' '}
          <button type="button" class="secondary" onClick={list.reload}>
            Search again
          </button>
        </p>
      )}

      {data !== undefined && data.items.length === 0 && (
        <Empty>
          {searching || filters.tag
            ? 'No entry matches. Try other words, or clear the filters.'
            : 'No memory entries yet. The agent saves what it learns here; an admin can add entries above.'}
        </Empty>
      )}

      {data !== undefined && data.items.length > 0 && (
        <ul class="card-list" aria-label="Memory entries">
          {data.items.map((entry) => (
            <li key={entry.id} class="card memory-entry" data-id={entry.id}>
              {editing === entry.id ? (
                <MemoryEditor
                  api={api}
                  entry={entry}
                  onSaved={() => {
                    setEditing(null);
                    list.reload();
                  }}
                  onCancel={() => setEditing(null)}
                />
              ) : (
                <>
                  {searching && (
                    <div class="memory-score">
                      <span>Relevance {Math.round(entry.relevance_score * 100)}%</span>
                      <meter
                        min={0}
                        max={1}
                        value={entry.relevance_score}
                        aria-label={`Relevance ${entry.relevance_score.toFixed(2)}`}
                      />
                    </div>
                  )}
                  <p class="memory-content">
                    <Highlighted text={entry.content} terms={terms} />
                  </p>
                  <div class="memory-meta">
                    {entry.tags.length > 0 && (
                      <ul class="tags" aria-label="Tags">
                        {entry.tags.map((tag) => (
                          <li key={tag}>
                            <button
                              type="button"
                              class="tag"
                              aria-label={`Show entries tagged ${tag}`}
                              aria-pressed={filters.tag === tag}
                              onClick={() =>
                                search.apply({ tag: filters.tag === tag ? '' : tag, query: filters.query })
                              }
                            >
                              #{tag}
                            </button>
                          </li>
                        ))}
                      </ul>
                    )}
                    {entry.key !== null && (
                      <span>
                        Key <code>{entry.key}</code>
                      </span>
                    )}
                    <span>
                      Created <Time iso={entry.created_at} />
                    </span>
                    <span>
                      Last used <Time iso={entry.last_accessed} />
                    </span>
                  </div>
                  {admin && (
                    <div class="actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Edit entry: ${preview(entry.content)}`}
                        onClick={() => setEditing(entry.id)}
                      >
                        Edit
                      </button>
                      <ConfirmButton
                        label={`Delete entry: ${preview(entry.content)}`}
                        confirmText="Confirm delete"
                        onConfirm={() => void remove(entry)}
                      >
                        Delete
                      </ConfirmButton>
                    </div>
                  )}
                </>
              )}
            </li>
          ))}
        </ul>
      )}

      {data !== undefined && data.total > PAGE_SIZE && (
        <nav class="actions pager" aria-label="Memory pages">
          <button
            type="button"
            class="secondary"
            disabled={offset === 0}
            onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}
          >
            Previous
          </button>
          <span>
            {offset + 1}–{Math.min(offset + PAGE_SIZE, data.total)} of {data.total}
          </span>
          <button
            type="button"
            class="secondary"
            disabled={offset + PAGE_SIZE >= data.total}
            onClick={() => setOffset(offset + PAGE_SIZE)}
          >
            Next
          </button>
        </nav>
      )}
    </section>
  );
}

/** The first words of an entry, to name it in button labels. */
function preview(content: string): string {
  const flat = content.replace(/\s+/g, ' ').trim();
  return flat.length > 40 ? `${flat.slice(0, 40)}…` : flat;
}
