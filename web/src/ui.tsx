/**
 * Small building blocks every page uses, so the dashboard reads the same everywhere: times in the browser's
 * zone with UTC on hover, money, empty states, inline errors (message and request id), status badges, and
 * hooks for loading data and for following live topics.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError, retryDelayMs } from './errors';
import type { LiveEvent, LiveFeed } from './page';

const localFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** `2026-11-23 14:05:09 UTC` for an ISO time. */
export function utcText(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** A point in time in the browser's zone; hovering shows it in UTC. `null` shows a dash. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span aria-label="none">—</span>;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return <span>{iso}</span>;
  const utc = utcText(date.toISOString());
  return (
    <time dateTime={iso} title={utc}>
      {localFormat.format(date)}
    </time>
  );
}

/** Dollars with enough digits for the small costs of single replies (`$0.000123`). */
export function usd(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) return '—';
  if (amount === 0) return '$0.00';
  if (Math.abs(amount) < 0.01) return `$${amount.toPrecision(3)}`;
  return `$${amount.toFixed(2)}`;
}

/** The empty state of a list. */
export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** An inline error: the envelope's message and, for API errors, the request id. */
export function ErrorBox({ error }: { error: unknown }) {
  const text = describeError(error);
  return (
    <div class="error-box" role="alert">
      <strong>{text.message}</strong>
      {text.requestId && (
        <span class="request-id">
          {' '}
          Request id: <code>{text.requestId}</code>
        </span>
      )}
    </div>
  );
}

/** A status word as a coloured badge (`completed`, `waiting_approval`, `failed`, …). */
export function Badge({ status }: { status: string }) {
  return <span class={`badge badge-${status.replace(/[^a-z_]/g, '')}`}>{status.replace(/_/g, ' ')}</span>;
}

/** The state of a load: the data once there, the error of the last attempt, and whether one is running. */
export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again (keeps the old data on screen meanwhile). */
  reload: () => void;
}

/**
 * Runs `load` now and whenever `deps` change; `reload()` runs it again. Answers that arrive after a newer load
 * started are dropped, so a slow answer never overwrites a fresh one. A failure that names a wait (429,
 * `Retry-After`) loads again by itself once the wait has passed (`retryDelayMs`).
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const generation = useRef(0);
  const retry = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(() => {
    const mine = ++generation.current;
    clearTimeout(retry.current);
    setState((s) => ({ ...s, loading: true }));
    loadRef.current().then(
      (data) => {
        if (mine === generation.current) setState({ data, error: undefined, loading: false });
      },
      (error: unknown) => {
        if (mine !== generation.current) return;
        setState((s) => ({ ...s, error, loading: false }));
        const wait = retryDelayMs(error);
        if (wait !== undefined) retry.current = setTimeout(reload, wait);
      },
    );
  }, []);
  useEffect(() => () => clearTimeout(retry.current), []);
  useEffect(reload, deps);
  return { ...state, reload };
}

/** Listens to live `topics` while the component is mounted; `handler` may change between renders. */
export function useLive(live: LiveFeed, topics: readonly string[], handler: (event: LiveEvent) => void): void {
  const handlerRef = useRef(handler);
  handlerRef.current = handler;
  const key = topics.join(',');
  useEffect(() => {
    const offs = key.split(',').map((topic) => live.subscribe(topic, (event) => handlerRef.current(event)));
    return () => offs.forEach((off) => off());
  }, [live, key]);
}

/** Re-renders every second while `active`, answering the current time in ms (countdowns, uptimes). */
export function useNow(active = true): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}

/**
 * Calls `fn` at most once per `ms` (trailing), so a burst of live events makes one reload, not fifty.
 * Stable across renders.
 */
export function useThrottled(fn: () => void, ms = 300): () => void {
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return useCallback(() => {
    if (timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      fnRef.current();
    }, ms);
  }, [ms]);
}
