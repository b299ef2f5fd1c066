/**
 * Knowledge (`#/knowledge`): the documents of the knowledge base, newest first, or ranked by a search with
 * each document's score and its matching chunks, the query's words highlighted; filters by source and by
 * metadata; upload (paste or a file, with upload progress), reindex and delete (admin). The list, or the
 * search shown (it has no side effects), follows the live `knowledge` topic.
 */
import { useMemo, useState } from 'preact/hooks';
import type { components } from '../../../client/index.js';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Empty, ErrorBox, Time, useLoad } from '../ui';
import { ConfirmButton, FieldError, fieldErrorsOf, fieldProps } from '../ui/fields';
import { SearchForm, useFilters } from '../ui/filters';
import { useLiveReload } from '../ui/live-reload';
import { Highlighted, queryTokens } from '../ui/highlight';
import { formatBytes, UploadForm } from './knowledge/upload-form';
import './knowledge/knowledge.css';

type KnowledgeItem = components['schemas']['KnowledgeItem'];

/** Documents listed (the API's maximum). */
const LIST_LIMIT = 100;

/** The number of results a search asks for when the field holds no whole number from 1 to 100. */
const DEFAULT_TOP_K = 10;

export default function KnowledgePage(props: PageProps) {
  const { api, role, live } = props;
  const admin = role === 'admin';
  // `metadata` is a JSON object of metadata equalities, as typed (the server validates it).
  const search = useFilters({ query: '', source: '', metadata: '' });
  const filters = search.applied;
  const [topKText, setTopKText] = useState(String(DEFAULT_TOP_K));
  const [topK, setTopK] = useState(DEFAULT_TOP_K);
  const [busyId, setBusyId] = useState<string | null>(null);

  const list = useLoad(
    () =>
      must(
        api.GET('/api/v1/knowledge', {
          params: {
            query: {
              ...(filters.query ? { query: filters.query, top_k: topK } : { limit: LIST_LIMIT }),
              ...(filters.source ? { source: filters.source } : {}),
              ...(filters.metadata ? { filter: filters.metadata } : {}),
            },
          },
        }),
      ),
    [filters, topK],
  );
  useLiveReload(live, ['knowledge'], list.reload);
  const terms = useMemo(() => queryTokens(filters.query), [filters.query]);
  const searching = filters.query !== '';
  const queryErrors = fieldErrorsOf(list.error);

  const act = async (item: KnowledgeItem, action: 'reindex' | 'delete') => {
    setBusyId(item.id);
    try {
      if (action === 'reindex') {
        await must(api.POST('/api/v1/knowledge/{id}/reindex', { params: { path: { id: item.id } } }));
      } else {
        await must(api.DELETE('/api/v1/knowledge/{id}', { params: { path: { id: item.id } } }));
      }
      list.reload();
    } catch (error) {
      props.notify(error);
    } finally {
      setBusyId(null);
    }
  };

  const items = list.data?.items;
  return (
    <section aria-labelledby="knowledge-title-heading" class="knowledge-page">
      <h1 id="knowledge-title-heading">Knowledge</h1>

      {admin ? (
        <details class="card add-card">
          <summary>Add a document</summary>
          <UploadForm api={api} onUploaded={() => list.reload()} />
        </details>
      ) : (
        <p class="muted">Uploading, reindexing and deleting documents needs an admin token.</p>
      )}

      <SearchForm
        label="Search knowledge"
        filters={search}
        onSubmit={() => {
          const typed = Number.parseInt(topKText, 10);
          setTopK(Number.isInteger(typed) && typed >= 1 && typed <= 100 ? typed : DEFAULT_TOP_K);
        }}
      >
        <div class="field">
          <label for="knowledge-query">Search</label>
          <input id="knowledge-query" type="search" placeholder="Words to look for" {...search.field('query')} />
        </div>
        <div class="field">
          <label for="knowledge-source-filter">Source</label>
          <input
            id="knowledge-source-filter"
            type="text"
            autoComplete="off"
            placeholder="Any source"
            {...search.field('source')}
          />
        </div>
        <div class="field">
          <label for="knowledge-metadata-filter">Metadata</label>
          <input
            {...fieldProps('knowledge-metadata-filter', queryErrors.filter)}
            type="text"
            autoComplete="off"
            spellcheck={false}
            placeholder='{"team": "ops"}'
            {...search.field('metadata')}
          />
          <FieldError id="knowledge-metadata-filter" error={queryErrors.filter} />
        </div>
        <div class="field">
          <label for="knowledge-top-k">Results</label>
          <input
            id="knowledge-top-k"
            type="number"
            min={1}
            max={100}
            value={topKText}
            class="narrow"
            onInput={(event) => setTopKText(event.currentTarget.value)}
          />
        </div>
      </SearchForm>

      {list.error !== undefined && <ErrorBox error={list.error} />}
      <p class="muted" role="status">
        {items === undefined
          ? 'Loading…'
          : searching
            ? `${items.length} matching documents, best first`
            : `${items.length} documents, newest first`}
      </p>

      {items !== undefined && items.length === 0 && (
        <Empty>
          {searching || filters.source || filters.metadata
            ? 'No document matches. Try other words, or clear the filters.'
            : 'No documents yet. An admin can add one above; the agent searches them when it answers.'}
        </Empty>
      )}

      {items !== undefined && items.length > 0 && (
        <ul class="card-list" aria-label="Documents">
          {items.map((item) => (
            <li key={item.id} class="card knowledge-item" data-id={item.id}>
              <div class="knowledge-head">
                <h2 class="knowledge-doc-title">
                  <Highlighted text={item.title} terms={terms} />
                </h2>
                {item.score !== undefined && (
                  <span class="knowledge-score">
                    Score {Math.round(item.score * 100)}%
                    <meter min={0} max={1} value={item.score} aria-label={`Score ${item.score.toFixed(2)}`} />
                  </span>
                )}
              </div>
              <div class="knowledge-meta">
                <span>
                  Source <code>{item.source}</code>
                </span>
                <span>{item.chunk_count === 1 ? '1 chunk' : `${item.chunk_count} chunks`}</span>
                <span>{formatBytes(item.size_bytes)}</span>
                <span>
                  Indexed <Time iso={item.indexed_at} />
                </span>
                {Object.keys(item.metadata).length > 0 && (
                  <span>
                    Metadata <code>{JSON.stringify(item.metadata)}</code>
                  </span>
                )}
              </div>
              {item.matches && item.matches.length > 0 && (
                <ol class="knowledge-matches" aria-label={`Matching chunks of ${item.title}`}>
                  {item.matches.map((match) => (
                    <li key={match.chunk}>
                      <span class="chunk-number">Chunk {match.chunk + 1}</span>
                      <blockquote>
                        <Highlighted text={match.text} terms={terms} />
                      </blockquote>
                    </li>
                  ))}
                </ol>
              )}
              {admin && (
                <div class="actions">
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Reindex ${item.title}`}
                    disabled={busyId === item.id}
                    onClick={() => void act(item, 'reindex')}
                  >
                    {busyId === item.id ? 'Working…' : 'Reindex'}
                  </button>
                  <ConfirmButton
                    label={`Delete ${item.title}`}
                    confirmText="Confirm delete"
                    disabled={busyId === item.id}
                    onConfirm={() => void act(item, 'delete')}
                  >
                    Delete
                  </ConfirmButton>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
