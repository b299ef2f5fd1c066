import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ADMIN_TOKEN, adminHeaders, useHarness } from '../helpers/harness.js';

/** A WebSocket frame's text. */
const text = (raw: WebSocket.RawData): string =>
  Buffer.isBuffer(raw)
    ? raw.toString('utf8')
    : Array.isArray(raw)
      ? Buffer.concat(raw).toString('utf8')
      : Buffer.from(raw).toString('utf8');

describe('WebSocket live feed: sessions and cron topics', () => {
  const t = useHarness({ roomyLimits: false, scope: 'all' });
  let base: string;
  beforeAll(async () => {
    base = await t.gateway.listen();
  });

  it('streams session and cron changes to a subscriber', async () => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/ws`, { headers: { 'x-api-token': ADMIN_TOKEN } });
    const frames: Array<{ type: string; topic?: string; event?: string; data?: Record<string, unknown> }> = [];
    const waitFor = (pred: (f: (typeof frames)[number]) => boolean) =>
      new Promise<(typeof frames)[number]>((resolve) => {
        const found = frames.find(pred);
        if (found) return resolve(found);
        const onMessage = (raw: WebSocket.RawData) => {
          const frame = JSON.parse(text(raw)) as (typeof frames)[number];
          if (pred(frame)) {
            ws.off('message', onMessage);
            resolve(frame);
          }
        };
        ws.on('message', onMessage);
      });
    ws.on('message', (raw) => frames.push(JSON.parse(text(raw)) as (typeof frames)[number]));
    await waitFor((f) => f.type === 'auth_ok');
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['sessions', 'cron'] }));
    await waitFor((f) => f.type === 'subscribed');

    const post = (url: string, payload: unknown) =>
      fetch(`${base}${url}`, {
        method: 'POST',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
    const session = (await (await post('/api/v1/sessions', { channel: 'web' })).json()) as { id: string };
    const created = await waitFor((f) => f.topic === 'sessions' && f.event === 'created');
    expect(created.data?.id).toBe(session.id);

    await post('/api/v1/message', { platform: 'cli', user_id: 'u', chat_id: 'feed', text: 'hi' });
    const updated = await waitFor((f) => f.topic === 'sessions' && f.event === 'updated');
    expect(updated.data?.id).toBe('gateway:cli:feed');

    const job = (await (await post('/api/v1/cron', { schedule: '0 9 * * *', prompt: 'report' })).json()) as {
      id: string;
    };
    expect((await waitFor((f) => f.topic === 'cron' && f.event === 'created')).data?.id).toBe(job.id);
    await post(`/api/v1/cron/${job.id}/authorize`, {});
    const authorized = await waitFor((f) => f.topic === 'cron' && f.event === 'authorized');
    expect(authorized.data).toMatchObject({ id: job.id, authorized: true });
    ws.close();
  });
});
