/**
 * The hash-route table (`#/<name>`, ADR 0020): every page of the dashboard, in navigation order. Each page is
 * loaded with a dynamic `import()`, so it is its own chunk and the first screen loads only the shell and the
 * page it shows. Adding a page is one line here plus its file in `pages/`.
 */
import type { ComponentType } from 'preact';
import type { PageProps } from './page';

/** A page module: its default export is the page component. */
export interface PageModule {
  default: ComponentType<PageProps>;
}

/** One route: `#/<name>`, its navigation label, and its lazy loader. */
export interface Route {
  name: string;
  title: string;
  load: () => Promise<PageModule>;
}

/** Every page; the first is the default (`#/` and unknown names). */
export const routes: readonly Route[] = [
  { name: 'overview', title: 'Overview', load: () => import('./pages/overview') },
  { name: 'chat', title: 'Chat', load: () => import('./pages/chat') },
  { name: 'sessions', title: 'Sessions', load: () => import('./pages/sessions') },
  { name: 'agents', title: 'Agents', load: () => import('./pages/agents') },
  { name: 'approvals', title: 'Approvals', load: () => import('./pages/approvals') },
  { name: 'memory', title: 'Memory', load: () => import('./pages/memory') },
  { name: 'knowledge', title: 'Knowledge', load: () => import('./pages/knowledge') },
  { name: 'tasks', title: 'Tasks', load: () => import('./pages/tasks') },
  { name: 'skills', title: 'Skills', load: () => import('./pages/skills') },
  { name: 'cron', title: 'Cron', load: () => import('./pages/cron') },
  { name: 'channels', title: 'Channels', load: () => import('./pages/channels') },
  { name: 'mcp', title: 'MCP servers', load: () => import('./pages/mcp') },
  { name: 'subscriptions', title: 'Subscriptions', load: () => import('./pages/subscriptions') },
  { name: 'analytics', title: 'Analytics', load: () => import('./pages/analytics') },
  { name: 'config', title: 'Config', load: () => import('./pages/config') },
  { name: 'logs', title: 'Logs', load: () => import('./pages/logs') },
  { name: 'pairing', title: 'Pairing', load: () => import('./pages/pairing') },
];

/** The route named by a location hash (`#/chat?x=1` → chat), or the default one. */
export function routeOf(hash: string): { route: Route; query: URLSearchParams } {
  const match = /^#\/([a-z0-9-]+)(?:\?(.*))?$/.exec(hash);
  const route = routes.find((r) => r.name === match?.[1]) ?? routes[0];
  if (!route) throw new Error('the route table is empty');
  return { route, query: new URLSearchParams(match?.[2] ?? '') };
}
