/**
 * Logs (`#/logs`, admin): the newest entries (GET /logs, the typed client), then a live tail
 * (GET /logs?follow=true, read by `followStream` of `web/src/sse.ts`). The tail starts after the page's
 * `X-Log-Cursor` and after a drop reconnects with `Last-Event-ID`, so no entry is lost or shown twice
 * (ADR 0017). Level and source filter on the server, the text filter here; pause holds new entries back;
 * export downloads the shown lines as JSONL, built in the page with no server round trip.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { must } from '../errors';
import type { PageProps } from '../page';
import { followStream } from '../sse';
import { ErrorBox, utcText } from '../ui';
import { Table } from '../ui/table';

const LEVELS = ['debug', 'info', 'warning', 'error'] as const;
type Level = (typeof LEVELS)[number];

/** One log entry (the `log` event and a GET /logs item share this shape). */
interface LogLine {
  /** The stream id (`<run>-<n>`) or, for entries of the first page, a key of our own. */
  key: string;
  timestamp: string;
  level: Level;
  source: string;
  message: string;
  metadata: Record<string, unknown>;
}

/** At most this many lines are kept on screen (the oldest go first). */
const MAX_LINES = 1000;
/** At most this many entries are held back while paused. */
const MAX_HELD = 5000;
/** Reconnect backoff after a drop: doubling from 1 s to 15 s. */
const RETRY_START_MS = 1000;
const RETRY_MAX_MS = 15_000;

type TailState = 'connecting' | 'following' | 'reconnecting' | 'stopped';

/** A log entry from an event's JSON, or null when it is not one. */
function lineOf(raw: unknown, key: string): LogLine | null {
  const e = raw as Partial<LogLine> | null;
  if (typeof e?.timestamp !== 'string' || typeof e.message !== 'string' || typeof e.source !== 'string') return null;
  const level = LEVELS.includes(e.level as Level) ? (e.level as Level) : 'info';
  const metadata = e.metadata && typeof e.metadata === 'object' ? e.metadata : {};
  return { key, timestamp: e.timestamp, level, source: e.source, message: e.message, metadata };
}

const timeOfDay = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  fractionalSecondDigits: 3,
});
const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

/** A log time, compact: the time of day in the browser's zone (with ms); the date and UTC on hover. */
function LogTime({ iso }: { iso: string }) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return <span>{iso}</span>;
  return (
    <time
      dateTime={iso}
      title={`${dayFormat.format(date)} · ${utcText(date.toISOString())}`}
      style={{ whiteSpace: 'nowrap' }}
    >
      {timeOfDay.format(date)}
    </time>
  );
}

/** Metadata as one short line (`key=value …`). */
function metadataText(metadata: Record<string, unknown>): string {
  return Object.entries(metadata)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
}

export default function LogsPage({ api, token, role }: PageProps) {
  const [level, setLevel] = useState<Level>('info');
  const [source, setSource] = useState('');
  const [appliedSource, setAppliedSource] = useState('');
  const [text, setText] = useState('');
  const [paused, setPaused] = useState(false);
  const [lines, setLines] = useState<LogLine[]>([]);
  const [held, setHeld] = useState<LogLine[]>([]);
  const [state, setState] = useState<TailState>('connecting');
  const [error, setError] = useState<unknown>(undefined);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;

  // The server-side filter changed: load the newest page, then follow from there.
  useEffect(() => {
    if (role !== 'admin') return;
    const controller = new AbortController();
    const { signal } = controller;
    const query = { level, ...(appliedSource ? { source: appliedSource } : {}) };
    setLines([]);
    setHeld([]);
    setError(undefined);
    setState('connecting');

    const add = (entry: LogLine) => {
      if (pausedRef.current) setHeld((h) => [...h, entry].slice(-MAX_HELD));
      else setLines((l) => [...l, entry].slice(-MAX_LINES));
    };

    const run = async () => {
      // The follow continues exactly after the first page (nothing logged in between is missed or shown twice).
      let cursor: string | undefined;
      try {
        const call = api.GET('/api/v1/logs', { params: { query: { ...query, limit: 200 } } });
        const page = await must(call);
        cursor = (await call).response.headers.get('x-log-cursor') ?? undefined;
        const items = typeof page === 'string' ? [] : page.items; // a string only for the stream variant
        const first = items
          .map((item, i) => lineOf(item, `page-${i}`))
          .filter((l): l is LogLine => l !== null)
          .reverse(); // the page is newest first; the view reads top to bottom
        setLines(first.slice(-MAX_LINES));
      } catch (failure) {
        if (signal.aborted) return;
        setError(failure);
      }
      const params = new URLSearchParams({ follow: 'true', level });
      if (appliedSource) params.set('source', appliedSource);
      let unnamed = 0;
      await followStream(
        {
          path: `/api/v1/logs?${params.toString()}`,
          token,
          signal,
          ...(cursor !== undefined ? { lastEventId: cursor } : {}),
          retryMs: { first: RETRY_START_MS, max: RETRY_MAX_MS },
          onConnect: () => {
            setState('following');
            setError(undefined);
          },
          onDrop: (failure) => {
            if (failure !== undefined) setError(failure);
            setState('reconnecting');
          },
        },
        (event) => {
          if (event.event !== 'log') return;
          const line = lineOf(event.data, event.id ?? `live-${++unnamed}`);
          if (line) add(line);
        },
      );
    };
    void run();
    return () => {
      controller.abort();
      setState('stopped');
    };
  }, [api, token, role, level, appliedSource]);

  const resume = () => {
    setPaused(false);
    setLines((l) => [...l, ...held].slice(-MAX_LINES));
    setHeld([]);
  };

  const needle = text.trim().toLowerCase();
  const shown = useMemo(
    () =>
      needle
        ? lines.filter(
            (l) =>
              l.message.toLowerCase().includes(needle) ||
              l.source.toLowerCase().includes(needle) ||
              metadataText(l.metadata).toLowerCase().includes(needle),
          )
        : lines,
    [lines, needle],
  );

  const exportShown = () => {
    const jsonl = shown
      .map((l) =>
        JSON.stringify({
          timestamp: l.timestamp,
          level: l.level,
          source: l.source,
          message: l.message,
          metadata: l.metadata,
        }),
      )
      .join('\n');
    const url = URL.createObjectURL(new Blob([jsonl + (jsonl ? '\n' : '')], { type: 'application/x-ndjson' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = `gatehouse-logs-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };

  if (role !== 'admin') {
    return (
      <section aria-labelledby="logs-title">
        <h1 id="logs-title">Logs</h1>
        <p class="card">Reading the logs needs an admin token. This token may not read them.</p>
      </section>
    );
  }

  const stateText: Record<TailState, string> = {
    connecting: 'Connecting…',
    following: paused ? `Paused (${held.length} new)` : 'Following',
    reconnecting: 'Reconnecting…',
    stopped: 'Stopped',
  };

  return (
    <section aria-labelledby="logs-title">
      <h1 id="logs-title">Logs</h1>
      <form
        class="toolbar"
        aria-label="Log filters"
        onSubmit={(e) => {
          e.preventDefault();
          setAppliedSource(source.trim());
        }}
      >
        <div class="field">
          <label for="logs-level">Minimum level</label>
          <select id="logs-level" value={level} onChange={(e) => setLevel(e.currentTarget.value as Level)}>
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="logs-source">Source</label>
          <input
            id="logs-source"
            placeholder="any (e.g. http, turns)"
            autoComplete="off"
            value={source}
            onInput={(e) => setSource(e.currentTarget.value)}
            onBlur={() => setAppliedSource(source.trim())}
          />
        </div>
        <button type="submit" class="secondary">
          Apply
        </button>
        <div class="field">
          <label for="logs-text">Text</label>
          <input
            id="logs-text"
            type="search"
            placeholder="filter the shown lines"
            autoComplete="off"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </div>
        <div class="actions">
          {paused ? (
            <button type="button" onClick={resume}>
              Resume
            </button>
          ) : (
            <button type="button" class="secondary" onClick={() => setPaused(true)}>
              Pause
            </button>
          )}
          <button type="button" class="secondary" onClick={exportShown} disabled={shown.length === 0}>
            Export shown ({shown.length})
          </button>
          <button type="button" class="secondary" onClick={() => setLines([])} disabled={lines.length === 0}>
            Clear
          </button>
        </div>
      </form>
      <p role="status" class="muted" data-testid="logs-state">
        {stateText[state]} · {shown.length} of {lines.length} lines shown
      </p>
      {error !== undefined && <ErrorBox error={error} />}
      <Table
        rows={shown}
        empty={
          lines.length === 0
            ? 'No log entries at this level yet. New ones appear here as they are written.'
            : 'No shown line matches the text filter.'
        }
        region="Log entries (scrolls sideways on narrow screens)"
        label="Log entries, oldest first"
        testId="log-lines"
        minWidth="36rem"
        columns={['Time', 'Level', 'Source', 'Message']}
        row={(l) => (
          <tr key={l.key}>
            <td>
              <LogTime iso={l.timestamp} />
            </td>
            <td>
              <span
                class={`badge badge-${l.level === 'warning' ? 'degraded' : l.level === 'error' ? 'error' : 'level'}`}
              >
                {l.level}
              </span>
            </td>
            <td>
              <code style={{ whiteSpace: 'nowrap' }}>{l.source}</code>
            </td>
            <td>
              {l.message}
              {Object.keys(l.metadata).length > 0 && (
                <div class="muted">
                  <code>{metadataText(l.metadata)}</code>
                </div>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}
