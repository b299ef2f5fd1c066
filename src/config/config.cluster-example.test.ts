import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyEnvironment, readConfigFile } from './config.load.js';
import { configSchema } from './config.schema.js';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'cluster', 'gatehouse.yaml');

describe('examples/cluster/gatehouse.yaml', () => {
  it('validates with the environment compose.yaml gives each gateway, on PostgreSQL and Redis', () => {
    const raw = readConfigFile(EXAMPLE);
    applyEnvironment(raw, {
      DATABASE_URL: 'postgres://gatehouse:gatehouse@postgres:5432/gatehouse',
      REDIS_URL: 'redis://redis:6379',
      GATEHOUSE_HOST: '0.0.0.0',
      GATEHOUSE_DATA_DIR: '/data',
    });
    const config = configSchema.parse(raw);
    expect(config.storage).toMatchObject({
      driver: 'postgres',
      url: 'postgres://gatehouse:gatehouse@postgres:5432/gatehouse',
    });
    expect(config.bus).toMatchObject({ driver: 'redis', url: 'redis://redis:6379' });
    expect(config.cluster.takeover_after_ms).toBe(10_000);
  });

  it('NATS_URL and REDIS_URL fill only an unset url of their own driver', () => {
    const nats: Record<string, unknown> = { bus: { driver: 'nats' } };
    applyEnvironment(nats, { NATS_URL: 'nats://bus:4222', REDIS_URL: 'redis://r:6379' });
    expect(nats.bus).toEqual({ driver: 'nats', url: 'nats://bus:4222' });
    const given: Record<string, unknown> = { bus: { driver: 'redis', url: 'redis://mine:6379' } };
    applyEnvironment(given, { REDIS_URL: 'redis://other:6379' });
    expect(given.bus).toEqual({ driver: 'redis', url: 'redis://mine:6379' });
    const local: Record<string, unknown> = { bus: { driver: 'local' } };
    applyEnvironment(local, { REDIS_URL: 'redis://other:6379', NATS_URL: 'nats://bus:4222' });
    expect(local.bus).toEqual({ driver: 'local' });
  });
});
