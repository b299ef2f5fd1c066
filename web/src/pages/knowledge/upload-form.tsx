/**
 * Adding a document: title, source, metadata and the content, pasted or read from a text file up to the
 * server's limit (10 MiB of UTF-8 content, POST /knowledge). The upload goes through the typed client with an
 * `XMLHttpRequest`-backed fetch, so a progress bar shows the bytes sent, then the wait while the server
 * chunks and indexes. Validation errors appear at their fields.
 */
import { useRef, useState } from 'preact/hooks';
import type { components, GatehouseClient } from '../../../../client/index.js';
import { must } from '../../errors';
import { FieldError, fieldProps, LocalFieldError, parseJsonObject } from '../../ui/fields';
import { FormFooter, useSubmit } from '../../ui/form';
import { xhrFetch, type UploadProgress } from './xhr-fetch';

type KnowledgeEntry = components['schemas']['KnowledgeEntry'];

/** The server's cap on a document's content (POST /knowledge answers 413 above it). */
export const MAX_CONTENT_BYTES = 10 * 1024 * 1024;

/** `12.3 KB` style sizes. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export interface UploadFormProps {
  api: GatehouseClient;
  onUploaded: (entry: KnowledgeEntry) => void;
}

/** The upload form with its progress bar. */
export function UploadForm({ api, onUploaded }: UploadFormProps) {
  const [title, setTitle] = useState('');
  const [source, setSource] = useState('');
  const [metadata, setMetadata] = useState('');
  const [content, setContent] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const abort = useRef<AbortController | null>(null);
  const uploading = progress !== null;

  const form = useSubmit(async () => {
    setDone(null);
    try {
      if (file && file.size > MAX_CONTENT_BYTES) {
        throw new LocalFieldError(
          'content',
          `${file.name} is ${formatBytes(file.size)}; the limit is ${formatBytes(MAX_CONTENT_BYTES)}.`,
        );
      }
      const meta = parseJsonObject(metadata, 'metadata');
      const text = file ? await file.text() : content;
      const controller = new AbortController();
      abort.current = controller;
      setProgress({ loaded: 0, total: 1 });
      const entry = await must(
        api.POST('/api/v1/knowledge', {
          body: {
            title,
            content: text,
            ...(source.trim() ? { source: source.trim() } : {}),
            ...(meta ? { metadata: meta } : {}),
          },
          fetch: xhrFetch(setProgress, controller.signal),
        }),
      );
      setTitle('');
      setSource('');
      setMetadata('');
      setContent('');
      setFile(null);
      if (fileInput.current) fileInput.current.value = '';
      setDone(
        `Added “${entry.title}”: ${entry.chunk_count === 1 ? '1 chunk' : `${entry.chunk_count} chunks`}, ` +
          `${formatBytes(entry.size_bytes)}.`,
      );
      onUploaded(entry);
    } finally {
      abort.current = null;
      setProgress(null);
    }
  });
  const fields = form.fields;

  const chooseFile = (chosen: File | null) => {
    form.setError(undefined);
    setFile(chosen);
    if (chosen && !title.trim()) setTitle(chosen.name.replace(/\.[^.]+$/, ''));
    if (chosen && !source.trim()) setSource(chosen.name);
  };

  const percent = progress ? Math.min(100, Math.round((progress.loaded / Math.max(progress.total, 1)) * 100)) : 0;
  const sent = progress !== null && progress.total > 1 && progress.loaded >= progress.total;

  return (
    <form class="form-grid knowledge-upload" aria-label="Add a document" noValidate onSubmit={form.onSubmit}>
      <div class="field">
        <label for="knowledge-title">
          Title <span class="hint">(required)</span>
        </label>
        <input
          {...fieldProps('knowledge-title', fields.title)}
          type="text"
          autoComplete="off"
          value={title}
          onInput={(event) => setTitle(event.currentTarget.value)}
        />
        <FieldError id="knowledge-title" error={fields.title} />
      </div>
      <div class="field">
        <label for="knowledge-source">
          Source <span class="hint">(a path, URL or label)</span>
        </label>
        <input
          {...fieldProps('knowledge-source', fields.source)}
          type="text"
          autoComplete="off"
          value={source}
          onInput={(event) => setSource(event.currentTarget.value)}
        />
        <FieldError id="knowledge-source" error={fields.source} />
      </div>
      <div class="field wide">
        <label for="knowledge-file">
          File <span class="hint">(plain text, up to {formatBytes(MAX_CONTENT_BYTES)}; or paste below)</span>
        </label>
        <div class="actions">
          <input
            id="knowledge-file"
            ref={fileInput}
            type="file"
            accept=".txt,.md,.markdown,.csv,.json,.yaml,.yml,.html,.xml,.log,text/*"
            onChange={(event) => chooseFile(event.currentTarget.files?.[0] ?? null)}
          />
          {file && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                chooseFile(null);
                if (fileInput.current) fileInput.current.value = '';
              }}
            >
              Remove file
            </button>
          )}
        </div>
      </div>
      <div class="field wide">
        <label for="knowledge-content">Content</label>
        <textarea
          {...fieldProps('knowledge-content', fields.content, file ? 'knowledge-content-file' : undefined)}
          rows={6}
          disabled={file !== null}
          value={file ? '' : content}
          placeholder={file ? '' : 'Paste the document’s text'}
          onInput={(event) => setContent(event.currentTarget.value)}
        />
        {file && (
          <span id="knowledge-content-file" class="hint">
            The content is read from {file.name} ({formatBytes(file.size)}).
          </span>
        )}
        <FieldError id="knowledge-content" error={fields.content} />
      </div>
      <div class="field wide">
        <label for="knowledge-metadata">
          Metadata <span class="hint">(optional JSON object)</span>
        </label>
        <textarea
          {...fieldProps('knowledge-metadata', fields.metadata)}
          class="code"
          rows={2}
          spellcheck={false}
          placeholder='{"team": "ops"}'
          value={metadata}
          onInput={(event) => setMetadata(event.currentTarget.value)}
        />
        <FieldError id="knowledge-metadata" error={fields.metadata} />
      </div>
      <FormFooter state={form} submit="Upload" wide>
        {uploading && (
          <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
            Cancel upload
          </button>
        )}
      </FormFooter>
      <div class="wide upload-status" role="status" aria-live="polite">
        {progress && (
          <>
            <progress id="knowledge-progress" max={100} value={percent} aria-label="Upload progress" />
            <span>
              {sent
                ? 'Uploaded; indexing…'
                : `Uploading… ${percent}% (${formatBytes(progress.loaded)} of ${formatBytes(progress.total)})`}
            </span>
          </>
        )}
        {done && <span>{done}</span>}
      </div>
    </form>
  );
}
