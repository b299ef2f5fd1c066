/**
 * Health that tells the truth (ADR 0024): a gateway on `provider.type:
 * openai` pointed at the fake OpenAI-compatible server reports the provider
 * failing while the server is down and healthy once it is back (after the
 * next probe, driven by the ManualClock); failed turns say why in the log,
 * without the api key; the report carries version, uptime and components.
 */
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/lib/version.js';
import { chatRequests, echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const START = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const SECRET = 'sk-live-SECRET-health-0123456789';

interface Component {
  status: string;
  message?: string;
}
interface Report {
  status: string;
  message?: string;
  version: string;
  uptime_seconds: number;
  provider: string;
  components: { store: Component; provider: Component; channels: Component; bus: Component };
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Makes the fake reachable on `port` until closed: every connection there is piped to the fake's own port. */
async function forward(port: number, fake: FakeOpenAI): Promise<{ close(): Promise<void> }> {
  const target = Number(new URL(fake.url).port);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('health with an OpenAI-compatible provider', () => {
  let fake: FakeOpenAI | undefined;
  let h: Harness | undefined;
  let forwarder: { close(): Promise<void> } | undefined;

  afterEach(async () => {
    await h?.close();
    await forwarder?.close();
    await fake?.close();
    fake?.verify();
    h = undefined;
    forwarder = undefined;
    fake = undefined;
  });

  /** A gateway on the ManualClock whose provider is the fake behind `port` (down until `forward`). */
  const open = async (port: number) =>
    startHarness({
      clock: START,
      config: {
        provider: {
          type: 'openai',
          base_url: `http://127.0.0.1:${port}/v1`,
          api_key: SECRET,
          model: 'gpt-4o-mini',
          timeout_seconds: 5,
        },
      },
    });
  const health = async () => {
    const res = await h!.inject({ method: 'GET', url: '/api/v1/health' });
    expect(res.statusCode).toBe(200); // degraded is still 200
    return res.json<Report>();
  };
  const modelsCalls = () => fake!.requests.filter((r) => r.method === 'GET' && r.path === '/v1/models').length;

  it('fake down: degraded, the provider failing with ECONNREFUSED; fake back up: healthy after the next probe', async () => {
    fake = await startFakeOpenAI();
    const port = await closedPort();
    h = await open(port);

    const down = await health();
    expect(down).toMatchObject({
      status: 'degraded',
      message: 'provider: openai: cannot reach the server (ECONNREFUSED)',
      provider: 'openai:gpt-4o-mini',
      version: packageVersion(),
      uptime_seconds: 0,
      components: {
        store: { status: 'ok' },
        provider: { status: 'failing', message: 'openai: cannot reach the server (ECONNREFUSED)' },
        channels: { status: 'ok' },
        bus: { status: 'ok' },
      },
    });

    forwarder = await forward(port, fake);
    h.clock.advance(30_000);
    const cached = await health();
    expect(cached.components.provider.status).toBe('failing'); // cached: at most one probe a minute
    expect(cached.uptime_seconds).toBe(30);
    expect(modelsCalls()).toBe(0);

    h.clock.advance(30_000);
    const up = await health();
    expect(up.status).toBe('healthy');
    expect(up.message).toBeUndefined();
    expect(up.components.provider).toEqual({ status: 'ok' });
    expect(up.uptime_seconds).toBe(60);
    expect(modelsCalls()).toBe(1);
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);

    // Many health requests within the minute: still one probe.
    for (let i = 0; i < 5; i++) expect((await health()).status).toBe('healthy');
    expect(modelsCalls()).toBe(1);
    expect(chatRequests(fake)).toHaveLength(0); // the probe is never a model call
  });

  it('a failed turn logs its cause (ECONNREFUSED) and its event id, and no secret', async () => {
    const port = await closedPort();
    h = await open(port);
    const res = await h.message({ platform: 'api', user_id: 'u', chat_id: 'down', text: 'hello', wait: true });
    expect(res.statusCode).toBe(502);
    const eventId = res.json<{ error: { details: { event_id: string } } }>().error.details.event_id;
    expect(eventId).toMatch(/^evt_/);
    const line = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.source === 'turns');
    expect(line).toMatchObject({
      event_id: eventId,
      cause: 'ECONNREFUSED',
      message: 'turn failed: openai: cannot reach the server (ECONNREFUSED)',
    });
    expect(h.logs.join('\n')).not.toContain(SECRET);
    expect(h.logs.join('\n')).not.toMatch(/authorization|bearer/i);
  });

  it('a 401 from the provider is named in the log with the event id; the key it echoes is redacted', async () => {
    fake = await startFakeOpenAI();
    h = await open(Number(new URL(fake.url).port));
    fake.enqueue({ status: 401, body: { error: { message: `Incorrect API key provided: ${SECRET}.` } } });
    const res = await h.message({ platform: 'api', user_id: 'u', chat_id: 'bad-key', text: 'hello', wait: true });
    expect(res.statusCode).toBe(502);
    const eventId = res.json<{ error: { details: { event_id: string } } }>().error.details.event_id;
    const line = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.source === 'turns');
    expect(line).toMatchObject({ event_id: eventId, cause: 'HTTP 401' });
    expect(line!.message).toMatch(/^turn failed: openai: HTTP 401: Incorrect API key provided: \*\*\*/);
    expect(h.logs.join('\n')).not.toContain(SECRET);
    expect(h.logs.join('\n')).not.toContain('SECRET-health');
  });

  it('three failed turns within a minute make the provider failing though /models answers; a success clears it', async () => {
    fake = await startFakeOpenAI();
    h = await open(Number(new URL(fake.url).port));
    expect((await health()).status).toBe('healthy');
    fake.enqueue({ status: 500 }, { status: 500 }, { status: 500 });
    for (let i = 0; i < 3; i++) {
      const res = await h.message({ platform: 'api', user_id: 'u', chat_id: `c${i}`, text: 'hi', wait: true });
      expect(res.statusCode).toBe(502);
    }
    const failing = await health();
    expect(failing.status).toBe('degraded');
    expect(failing.components.provider).toEqual({
      status: 'failing',
      message: 'last 3 model calls failed: openai: HTTP 500', // the upstream's text goes to the log only
    });
    fake.enqueue(echoReply);
    const ok = await h.message({ platform: 'api', user_id: 'u', chat_id: 'ok', text: 'hi', wait: true });
    expect(ok.statusCode).toBe(200);
    expect(await health()).toMatchObject({ status: 'healthy', components: { provider: { status: 'ok' } } });
  });
});

describe('health with the echo provider', () => {
  it('is degraded and says why; the channels and the bus are ok', async () => {
    const h = await startHarness({ clock: START });
    try {
      const res = await h.inject({ method: 'GET', url: '/api/v1/health' });
      expect(res.json()).toMatchObject({
        status: 'degraded',
        message: 'provider: echo provider: offline answers, no model',
        components: {
          store: { status: 'ok' },
          provider: { status: 'degraded', message: 'echo provider: offline answers, no model' },
          channels: { status: 'ok' },
          bus: { status: 'ok', message: 'local (in-process)' },
        },
      });
    } finally {
      await h.close();
    }
  });
});
