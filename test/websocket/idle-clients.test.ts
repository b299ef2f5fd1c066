/**
 * The idle cost of WebSocket clients (issue: 19,000 authenticated, subscribed
 * clients on one process at ≤ 8 KB each): many real clients stay open and
 * subscribed, all still get the live feed, closing them leaves nothing
 * behind, `limits.streams.websocket_max_connections` caps them, and the
 * built gateway's heap per client stays under the bound.
 */
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { measureWebSocketClients } from '../../bench/ws-clients.js';
import { useCleanups } from '../helpers/cleanups.js';
import { ADMIN_TOKEN, API_TOKEN, useHarness } from '../helpers/harness.js';

const rig = useHarness({ autoOpen: false });
const cleanup = useCleanups();

const CLIENTS = 500;
const WAIT = { timeout: 30_000, interval: 50 };

/** An authenticated client subscribed to `memory`; counts the live-feed events it gets. */
async function subscribed(url: string, counter: { events: number }): Promise<WebSocket> {
  const socket = new WebSocket(`${url}/api/v1/ws`, { headers: { 'x-api-token': API_TOKEN } });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  cleanup(async () => {
    if (socket.readyState === WebSocket.CLOSED) return;
    socket.terminate();
    await closed;
  });
  await new Promise<void>((resolve, reject) => {
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string };
      if (frame.type === 'auth_ok') socket.send(JSON.stringify({ type: 'subscribe', topics: ['memory'] }));
      else if (frame.type === 'subscribed') resolve();
      else if (frame.type === 'event') counter.events++;
      else reject(new Error(`unexpected frame ${frame.type}`));
    });
    socket.once('error', reject);
  });
  return socket;
}

/** The HTTP status an upgrade is refused with (rejects when it is accepted). */
function refusedStatus(url: string): Promise<number> {
  const socket = new WebSocket(`${url}/api/v1/ws`, { headers: { 'x-api-token': API_TOKEN } });
  return new Promise((resolve, reject) => {
    socket.once('open', () => {
      socket.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    socket.once('error', () => undefined);
    socket.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
  });
}

describe('websocket: idle clients', () => {
  it('500 subscribed clients all get a broadcast; one more is refused; closing them leaves nothing', async () => {
    const harness = await rig.open({
      config: {
        limits: {
          streams: { websocket_max_connections: CLIENTS },
          // The test process's own load must not shed the broadcast's write.
          overload: { memory_watermark_mb: null, max_event_loop_delay_ms: null },
        },
      },
    });
    const url = (await harness.gateway.listen()).replace(/^http/, 'ws');
    const { websocket, bus } = harness.internals;
    const counter = { events: 0 };
    const sockets: WebSocket[] = [];
    for (let i = 0; i < CLIENTS; i += 100) {
      sockets.push(...(await Promise.all(Array.from({ length: 100 }, () => subscribed(url, counter)))));
    }
    expect(websocket.clientCount()).toBe(CLIENTS);
    expect(await refusedStatus(url)).toBe(503);

    const created = await harness.inject({
      method: 'POST',
      url: '/api/v1/memory',
      headers: { 'x-api-token': ADMIN_TOKEN },
      payload: { content: 'for every client' },
    });
    expect(created.statusCode, created.body).toBe(201);
    await vi.waitFor(() => expect(counter.events).toBe(CLIENTS), WAIT);

    await Promise.all(
      sockets.map(
        (socket) =>
          new Promise<void>((resolve) => {
            socket.once('close', () => resolve());
            socket.close();
          }),
      ),
    );
    await vi.waitFor(() => expect(harness.gateway.app.websocketServer.clients.size).toBe(0), WAIT);
    expect(websocket.clientCount()).toBe(0);
    expect(bus.hasListeners('memory')).toBe(false);
  });

  it('the built gateway holds at most 8 KiB of heap per idle, subscribed client, and gives it back', async () => {
    const clients = 2000;
    const result = await measureWebSocketClients({ clients });
    expect(result.broadcastReceived).toBe(clients);
    expect(result.perClient.heap).toBeLessThanOrEqual(8 * 1024);
    // Closed: the heap is back where it was before the clients, give or take a fixed MB (code, caches).
    expect(result.closed.heapUsed - result.before.heapUsed).toBeLessThan(clients * 1024);
  }, 180_000);
});
