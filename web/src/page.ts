/**
 * What every dashboard page receives from the shell (web/src/main.tsx). A page is a Preact component in
 * `web/src/pages/<name>.tsx` exporting `default function <Name>Page(props: PageProps)`, loaded lazily by
 * the route table (`web/src/routes.ts`, hash routes `#/<name>`), so each page is its own chunk.
 */
import type { GatehouseClient } from '../../client/index.js';

/** A live event of the WebSocket feed (`{type: "event", topic, event, data}`, DECISIONS §5). */
export interface LiveEvent {
  topic: string;
  event: string;
  data: unknown;
}

/** The shell's one WebSocket, shared by every page; it subscribes to topics as pages ask. */
export interface LiveFeed {
  /** Listens to `topic` (`turns`, `sessions`, `tasks`, `cron`, `skills`, `channels`, `logs`, `memory`, `knowledge`, `config`); returns the unsubscribe. */
  subscribe(topic: string, listener: (event: LiveEvent) => void): () => void;
  /** True while the socket is open and authenticated. */
  readonly connected: boolean;
  /** Sends a client frame (e.g. `{type: 'interrupt', event_id}`); false when the socket is not signed in. */
  send(frame: { type: string } & Record<string, unknown>): boolean;
}

/** The props of every page. */
export interface PageProps {
  /** The typed API client with the signed-in token (`client/`, generated from the OpenAPI document). */
  api: GatehouseClient;
  /** The signed-in token (for the SSE streams read with fetch, which the typed client does not cover). */
  token: string;
  /** `admin` sees every action; `api` sees what it may read, admin actions hidden or disabled. */
  role: 'admin' | 'api';
  live: LiveFeed;
  /** Shows an error: the envelope's message and request id, or the error's text. */
  notify: (error: unknown) => void;
}
