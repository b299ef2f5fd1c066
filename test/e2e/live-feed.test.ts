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

type Frame = { type: string; topic?: string; event?: string; data?: Record<string, unknown> };

/** An admin WebSocket subscribed to `topics`, and a wait for the first frame (seen or coming) that matches. */
async function subscriber(base: string, topics: string[]) {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/ws`, { headers: { 'x-api-token': ADMIN_TOKEN } });
  const frames: Frame[] = [];
  const waitFor = (pred: (f: Frame) => boolean) =>
    new Promise<Frame>((resolve) => {
      const found = frames.find(pred);
      if (found) return resolve(found);
      const onMessage = (raw: WebSocket.RawData) => {
        const frame = JSON.parse(text(raw)) as Frame;
        if (pred(frame)) {
          ws.off('message', onMessage);
          resolve(frame);
        }
      };
      ws.on('message', onMessage);
    });
  ws.on('message', (raw) => frames.push(JSON.parse(text(raw)) as Frame));
  await waitFor((f) => f.type === 'auth_ok');
  ws.send(JSON.stringify({ type: 'subscribe', topics }));
  await waitFor((f) => f.type === 'subscribed');
  return { ws, frames, waitFor };
}

describe('WebSocket live feed: sessions and cron topics', () => {
  const t = useHarness({ roomyLimits: false, scope: 'all' });
  let base: string;
  beforeAll(async () => {
    base = await t.gateway.listen();
  });

  it('streams session and cron changes to a subscriber', async () => {
    const { ws, waitFor } = await subscriber(base, ['sessions', 'cron']);

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

describe('WebSocket live feed: memory, knowledge and config topics', () => {
  const t = useHarness({ roomyLimits: false, scope: 'all' });
  let base: string;
  beforeAll(async () => {
    base = await t.gateway.listen();
  });

  const send = (method: string, url: string, payload?: unknown) =>
    fetch(`${base}${url}`, {
      method,
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
    });

  it('streams memory writes, knowledge writes and config changes', async () => {
    const { ws, waitFor } = await subscriber(base, ['memory', 'knowledge', 'config']);

    const entry = (await (await send('POST', '/api/v1/memory', { content: 'likes tea', tags: ['pref'] })).json()) as {
      id: string;
    };
    const created = await waitFor((f) => f.topic === 'memory' && f.event === 'created');
    expect(created.data).toMatchObject({ id: entry.id, content: 'likes tea', tags: ['pref'] });
    await send('PUT', `/api/v1/memory/${entry.id}`, { content: 'likes green tea' });
    const updated = await waitFor((f) => f.topic === 'memory' && f.event === 'updated');
    expect(updated.data).toMatchObject({ id: entry.id, content: 'likes green tea' });
    expect((await send('DELETE', `/api/v1/memory/${entry.id}`)).status).toBe(200);
    expect((await waitFor((f) => f.topic === 'memory' && f.event === 'deleted')).data).toEqual({ id: entry.id });

    const doc = (await (
      await send('POST', '/api/v1/knowledge', { title: 'Guide', content: 'Gates open at nine.' })
    ).json()) as {
      id: string;
    };
    expect((await waitFor((f) => f.topic === 'knowledge' && f.event === 'created')).data).toMatchObject({
      id: doc.id,
      title: 'Guide',
    });
    await send('POST', `/api/v1/knowledge/${doc.id}/reindex`, {});
    expect((await waitFor((f) => f.topic === 'knowledge' && f.event === 'reindexed')).data?.id).toBe(doc.id);

    expect((await send('PATCH', '/api/v1/config', { logs: { level: 'debug' } })).status).toBe(200);
    const changed = await waitFor((f) => f.topic === 'config' && f.event === 'updated');
    expect(changed.data?.changed).toContain('logs.level');
    ws.close();
  });
});
