/**
 * The number of turns waiting for a person (approval or an answer), live: the sidebar's badge and Overview's
 * figure read it. It is read from `GET /turns` (the paused turns, admin) and read again when the live `turns`
 * topic reports a status change or an end. An api token may not list turns: the count is then null (not shown).
 */
import type { PageProps } from './page';
import { must } from './errors';
import { useLive, useLoad, useThrottled } from './ui';

/** The most paused turns counted; more shows as this number and a plus. */
export const PENDING_CAP = 200;

/** Paused turns right now (at most PENDING_CAP), or null while unknown or not readable with this token. */
export function usePendingApprovals({ api, role, live }: Pick<PageProps, 'api' | 'role' | 'live'>): number | null {
  const pending = useLoad(async (): Promise<number | null> => {
    if (role !== 'admin') return null;
    const page = await must(api.GET('/api/v1/turns', { params: { query: { limit: PENDING_CAP } } }));
    return page.items.length;
  }, [api, role]);
  const reload = useThrottled(pending.reload, 400);
  useLive(live, ['turns'], (event) => {
    if (event.event === 'status' || event.event === 'done') reload();
  });
  return pending.data ?? null;
}
