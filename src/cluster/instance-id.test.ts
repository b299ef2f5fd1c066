import { describe, expect, it } from 'vitest';
import { instanceIdOf } from './instance-id.js';

describe('instanceIdOf', () => {
  it('is stable for one host, data dir and port, and differs when any of them does', () => {
    const base = { configured: null, dataDir: '/srv/gatehouse/data', port: 18789, host: 'node-1' };
    const id = instanceIdOf(base);
    expect(id).toMatch(/^gw_[0-9a-f]{20}$/);
    expect(instanceIdOf({ ...base })).toBe(id);
    expect(instanceIdOf({ ...base, dataDir: '/srv/gatehouse/data/' })).toBe(id); // resolved
    expect(instanceIdOf({ ...base, host: 'node-2' })).not.toBe(id);
    expect(instanceIdOf({ ...base, dataDir: '/srv/other' })).not.toBe(id);
    expect(instanceIdOf({ ...base, port: 18790 })).not.toBe(id);
  });

  it('uses the configured name as given', () => {
    expect(instanceIdOf({ configured: 'eu-1', dataDir: '/x', port: 1 })).toBe('eu-1');
  });
});
