/**
 * The number of turns waiting for a person (approval or an answer), live: the sidebar's badge and Overview's
 * figure read it. The paused turns are read once from `GET /turns` (admin); after that the live `turns` topic
 * keeps the count without asking the API again: a `status` event naming a pause adds its turn, any other
 * status (or the turn's `done`/`error`) of a counted turn removes it. A page that decides a turn says so
 * (`pendingDecided`), so its own badge drops at once, before the event comes back. An api token may not list
 * turns: the count is then null (not shown).
 */
import { useEffect, useState } from 'preact/hooks';
import { PAUSED } from './api';
import { must } from './errors';
import type { PageProps } from './page';
import { useLive, useLoad } from './ui';

/** The most paused turns read at first; more shows as this number and a plus. */
export const PENDING_CAP = 200;

type DecidedListener = (eventId: string) => void;
const decidedListeners = new Set<DecidedListener>();

/** A turn was approved, denied or answered here: every count drops it at once. */
export function pendingDecided(eventId: string): void {
  for (const listener of decidedListeners) listener(eventId);
}

/** Paused turns right now, or null while unknown or not readable with this token. */
export function usePendingApprovals({ api, role, live }: Pick<PageProps, 'api' | 'role' | 'live'>): number | null {
  const first = useLoad(async (): Promise<string[] | null> => {
    if (role !== 'admin') return null;
    const page = await must(api.GET('/api/v1/turns', { params: { query: { limit: PENDING_CAP } } }));
    return page.items.map((turn) => turn.event_id);
  }, [api, role]);
  const [ids, setIds] = useState<ReadonlySet<string> | null>(null);
  useEffect(() => setIds(first.data ? new Set(first.data) : null), [first.data]);

  const change = (eventId: string, paused: boolean) =>
    setIds((current) => {
      if (!current || current.has(eventId) === paused) return current;
      const next = new Set(current);
      if (paused) next.add(eventId);
      else next.delete(eventId);
      return next;
    });

  useEffect(() => {
    const listener: DecidedListener = (eventId) => change(eventId, false);
    decidedListeners.add(listener);
    return () => void decidedListeners.delete(listener);
  }, []);

  useLive(live, ['turns'], (event) => {
    const data = event.data as { event_id?: unknown; status?: unknown };
    if (typeof data.event_id !== 'string') return;
    if (event.event === 'status' && typeof data.status === 'string') change(data.event_id, PAUSED.has(data.status));
    else if (event.event === 'done' || event.event === 'error') change(data.event_id, false);
  });
  return ids?.size ?? null;
}
