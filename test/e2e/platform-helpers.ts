/**
 * What the end-to-end tests of the chat-platform channels (Telegram, Slack)
 * share: a home whose gateway runs one platform against its fake, the
 * channel's view in GET /channels, and the turns of one chat's session.
 */
import { afterEach } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import type { FakeOpenAI } from '../helpers/fake-openai.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  call,
  e2eHome,
  pollUntil,
  removeE2EHomes,
  type E2EHome,
  type Running,
} from './helpers.js';

/** Fakes to close after each test (registered by `closeAfterEach`), with every gateway killed. */
export function closeAfterEach(): Array<{ close(): Promise<void> }> {
  const fakes: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    killAllNow();
    await Promise.all(fakes.splice(0).map((f) => f.close()));
    removeE2EHomes();
  });
  return fakes;
}

/** A home whose gateway runs `channels` (one platform against its fake), auth mode open unless `auth` says. */
export function platformHome(
  openai: FakeOpenAI,
  channels: Record<string, unknown>,
  auth: Record<string, unknown> = {},
): E2EHome {
  return e2eHome(openai, {
    gateway: { port: 0, auth: { api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN], mode: 'open', ...auth } },
    channels,
  });
}

/** One channel as GET /channels shows it. */
export interface ChannelView {
  name: string;
  enabled: boolean;
  connected: boolean;
  messages_today: number;
  last_message_at: string | null;
  error: string | null;
  last_connected_at: string | null;
  uptime_seconds: number;
}

/** The channel `name` in GET /channels (throws when it is not there). */
export async function channelView(url: string, name: string): Promise<ChannelView> {
  const res = await call<{ items: ChannelView[] }>(url, 'GET', '/api/v1/channels', { token: API_TOKEN });
  const found = res.body.items.find((c) => c.name === name);
  if (!found) throw new Error(`no ${name} channel in GET /channels`);
  return found;
}

/** Waits until the channel `name` reports `connected`. */
export async function channelConnected(running: Running, name: string): Promise<void> {
  await pollUntil(`${name} connected`, async () =>
    (await channelView(running.url, name)).connected ? true : undefined,
  );
}

/** The turns of the session of one platform chat (none while the session does not exist). */
export async function chatTurns(
  url: string,
  platform: string,
  chatId: string | number,
): Promise<Array<{ event_id: string; status: string }>> {
  const key = encodeURIComponent(`gateway:${platform}:${chatId}`);
  const res = await call<{ items: Array<{ event_id: string; status: string }> }>(
    url,
    'GET',
    `/api/v1/sessions/${key}/turns`,
    { token: ADMIN_TOKEN },
  );
  return res.status === 200 ? res.body.items : [];
}
