/**
 * Deep links into a page: the query of its hash route (`#/sessions?key=…&turn=…`, `#/tasks?id=…`,
 * `#/cron?id=…`), followed while the page stays open (the shell keeps a page mounted when only its query
 * changes, so a page reads the query itself), and written back when the user opens something so the address
 * can be copied and shared.
 */
import { useEffect, useState } from 'preact/hooks';
import { routeOf } from '../routes';

/** The current hash route's query, updated on every `hashchange`. */
export function useHashQuery(): URLSearchParams {
  const [query, setQuery] = useState(() => routeOf(location.hash).query);
  useEffect(() => {
    const onChange = () => setQuery(routeOf(location.hash).query);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return query;
}

/**
 * Replaces the address with `#/<page>?<params>` (no history entry, no `hashchange`), only while the address is
 * still this page's: a navigation away may already have set another one.
 */
export function replaceHashQuery(page: string, params: Record<string, string | undefined>): void {
  if (routeOf(location.hash).route.name !== page) return;
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') query.set(name, value);
  const text = query.toString();
  const hash = `#/${page}${text ? `?${text}` : ''}`;
  if (location.hash !== hash) history.replaceState(history.state, '', hash);
}
