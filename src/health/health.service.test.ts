import { describe, expect, it } from 'vitest';
import { healthReport, type ComponentHealth, type HealthProbes, type MemoryHealth } from './health.service.js';

const OK: ComponentHealth = { status: 'ok' };
const MEMORY_OK: MemoryHealth = { status: 'ok', measure: 'rss', value_mb: 90, watermark_mb: 300, shedding: false };

/** Probes of a healthy gateway, with `overrides`. */
function probes(overrides: Partial<HealthProbes> = {}): HealthProbes {
  return {
    pingStore: () => Promise.resolve(),
    isDraining: () => false,
    provider: () => 'openai:gpt-4o-mini',
    providerHealth: () => Promise.resolve(OK),
    channels: () => ({ websocket: 'connected' }),
    bus: () => ({ status: 'ok', message: 'local (in-process)' }),
    mcp: () => OK,
    memory: () => MEMORY_OK,
    instanceId: () => 'gw_a',
    peers: () => null,
    wsClients: () => 2,
    sessionCounts: () => Promise.resolve({ active: 1, total: 3 }),
    version: () => '1.2.3',
    uptimeSeconds: () => 61.9,
    ...overrides,
  };
}

describe('healthReport', () => {
  it('healthy: every component ok, with version, whole seconds of uptime, and no message', async () => {
    expect(await healthReport(probes())).toEqual({
      status: 'healthy',
      server_running: true,
      active_channels: { websocket: 'connected' },
      ws_clients: 2,
      provider: 'openai:gpt-4o-mini',
      media_cache_mb: 0,
      active_sessions: 1,
      total_sessions: 3,
      version: '1.2.3',
      uptime_seconds: 61,
      instance_id: 'gw_a',
      components: {
        store: OK,
        provider: OK,
        channels: OK,
        bus: { status: 'ok', message: 'local (in-process)' },
        mcp: OK,
        memory: MEMORY_OK,
      },
    });
  });

  it('memory above the watermark degrades the report (not unhealthy), naming it', async () => {
    const shedding: MemoryHealth = {
      status: 'degraded',
      message: 'rss 310 MB above the watermark of 300 MB: new work is refused',
      measure: 'rss',
      value_mb: 310,
      watermark_mb: 300,
      shedding: true,
    };
    const report = await healthReport(probes({ memory: () => shedding }));
    expect(report.status).toBe('degraded');
    expect(report.message).toBe('memory: rss 310 MB above the watermark of 300 MB: new work is refused');
    expect(report.components.memory).toEqual(shedding);
    expect(report.error).toBeUndefined();
  });

  it('MCP servers not ready degrade the report, naming them', async () => {
    const notReady: ComponentHealth = { status: 'degraded', message: 'not ready: files failed' };
    const report = await healthReport(probes({ mcp: () => notReady }));
    expect(report.status).toBe('degraded');
    expect(report.message).toBe('mcp: not ready: files failed');
    expect(report.components.mcp).toEqual(notReady);
  });

  it('degraded names the failing component: an unreachable provider', async () => {
    const failing: ComponentHealth = { status: 'failing', message: 'openai: cannot reach the server (ECONNREFUSED)' };
    const report = await healthReport(probes({ providerHealth: () => Promise.resolve(failing) }));
    expect(report.status).toBe('degraded');
    expect(report.message).toBe('provider: openai: cannot reach the server (ECONNREFUSED)');
    expect(report.components.provider).toEqual(failing);
    expect(report.error).toBeUndefined();
  });

  it('degraded on the echo provider and on a channel in error (DECISIONS §9), naming both', async () => {
    const report = await healthReport(
      probes({
        providerHealth: () =>
          Promise.resolve({ status: 'degraded', message: 'echo provider: offline answers, no model' }),
        channels: () => ({ websocket: 'connected', webhook: 'error' }),
      }),
    );
    expect(report.status).toBe('degraded');
    expect(report.components.channels).toEqual({ status: 'failing', message: 'webhook reports an error' });
    expect(report.message).toBe(
      'provider: echo provider: offline answers, no model; channels: webhook reports an error',
    );
  });

  it('an unknown provider (not checked yet) and a disconnected channel do not degrade', async () => {
    const report = await healthReport(
      probes({
        providerHealth: () => Promise.resolve({ status: 'unknown', message: 'not checked yet' }),
        channels: () => ({ websocket: 'connected', webhook: 'disconnected' }),
      }),
    );
    expect(report.status).toBe('healthy');
  });

  it('a shared bus whose connection is lost degrades, naming it; its peers are listed', async () => {
    const lost: ComponentHealth = { status: 'failing', message: 'redis: connection lost (ECONNRESET); reconnecting' };
    const peers = [{ instance_id: 'gw_b', version: '1.2.3', last_seen_seconds: 4 }];
    const report = await healthReport(probes({ bus: () => lost, peers: () => peers }));
    expect(report.status).toBe('degraded');
    expect(report.message).toBe('bus: redis: connection lost (ECONNRESET); reconnecting');
    expect(report.components.bus).toEqual(lost);
    expect(report.peers).toEqual(peers);
    expect(report.instance_id).toBe('gw_a');
  });

  it('the local bus lists no peers at all', async () => {
    expect(await healthReport(probes())).not.toHaveProperty('peers');
  });

  it('unhealthy when the store is unreachable: zero sessions, the store failing, the error envelope', async () => {
    let counted = false;
    const report = await healthReport(
      probes({
        pingStore: () => Promise.reject(new Error('SQLITE_FULL')),
        sessionCounts: () => {
          counted = true;
          return Promise.resolve({ active: 9, total: 9 });
        },
      }),
    );
    expect(report).toMatchObject({
      status: 'unhealthy',
      message: 'store: store unreachable or refusing writes',
      active_sessions: 0,
      total_sessions: 0,
      components: { store: { status: 'failing' } },
      error: { code: 'UNAVAILABLE', message: 'store unreachable' },
    });
    expect(counted).toBe(false);
  });

  it('unhealthy while draining, whatever the components say', async () => {
    const report = await healthReport(probes({ isDraining: () => true }));
    expect(report).toMatchObject({
      status: 'unhealthy',
      message: 'gateway is shutting down',
      server_running: false,
      error: { code: 'UNAVAILABLE', message: 'gateway is shutting down' },
    });
  });
});
