/**
 * The cluster projection (bench/projection.ts, ADR 0046): its inputs come from a bench JSON's (p) figures, and
 * the cluster takes the least of what its gateways, its database and its bus can carry.
 */
import { describe, expect, it } from 'vitest';
import { inputsFrom, project } from '../../bench/projection.js';

const figure = (id: string, value: number) => ({ id, backend: 'postgres', value });

describe('the cluster projection', () => {
  it('reads its inputs from the highest rates measured', () => {
    const figures = [
      figure('ordinary.fresh.r60.main_thread_ms_per_turn', 3),
      figure('ordinary.fresh.r240.main_thread_ms_per_turn', 2),
      figure('ordinary.fresh.r240.server.postgres_ms_per_turn', 1.4),
      figure('ordinary.fresh.r60.server.postgres_ms_per_turn', 9),
      figure('ordinary.cluster.redis.r120.ratio_same_load', 1.1),
      figure('ordinary.cluster.redis.one_half.r60.cpu_ms_per_turn', 3.5),
      figure('ordinary.cluster.redis.two.r120.cpu_ms_per_turn', 3.8),
      figure('ordinary.cluster.redis.two.r120.server.redis-server_ms_per_turn', 0.1),
      { id: 'ordinary.fresh.r480.main_thread_ms_per_turn', backend: 'sqlite', value: 1 },
    ];
    expect(inputsFrom(figures, 'redis')).toEqual({
      rate: 240,
      mainMs: 2,
      dbMs: 1.4,
      peerMs: expect.closeTo(0.3, 9) as number,
      busMs: 0.1,
      bus: 'redis',
    });
    expect(() => inputsFrom(figures, 'nats')).toThrow(/no cluster comparison over nats/);
    expect(() => inputsFrom([], 'redis')).toThrow(/no \(p\) rates on PostgreSQL/);
  });

  it('takes the least of gateways, database and bus, and names it', () => {
    const rows = project({ rate: 240, mainMs: 2, dbMs: 1, peerMs: 0.2, busMs: 0.1, bus: 'redis' }, 8);
    // One gateway: 750 ms of its main thread each second ÷ 2 ms; no bus; the database 5 600 ÷ 1.
    expect(rows[0]).toMatchObject({ gateways: 1, turnsPerS: 375, bottleneck: 'gateways', busBound: Infinity });
    // Eight: each runs an eighth of the turns and hears of the other seven eighths (0.2 ms a peer).
    const eight = rows[3]!;
    expect(eight.gatewayBound).toBeCloseTo(750 / (2 / 8 + (0.2 * 7) / 8), 6);
    expect(eight.databaseBound).toBeCloseTo(5_600, 6);
    expect(eight.busBound).toBeCloseTo(700 / (0.05 * 8), 6);
    expect(eight.turnsPerS).toBe(Math.min(eight.gatewayBound, eight.databaseBound, eight.busBound));
    expect(eight.bottleneck).toBe('bus');
    expect(project({ rate: 240, mainMs: 0.5, dbMs: 4, peerMs: 0, busMs: 0.001, bus: 'nats' }, 8)[3]!.bottleneck).toBe(
      'database',
    );
  });
});
