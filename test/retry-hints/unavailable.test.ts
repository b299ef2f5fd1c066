/**
 * 503s for conditions that pass tell the client when to come back (DECISIONS §3): the store unreachable
 * and the idempotency ceiling (spec rule 7) answer `Retry-After` and `details.retry_after_seconds`, the
 * way load shedding's 503s do (ADR 0043). The WebSocket's error frame carries the same details
 * (src/channels/websocket/websocket.frames.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { STORE_UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../src/http/errors.js';
import { CEILING_RETRY_AFTER_SECONDS } from '../../src/idempotency/idempotency.service.js';
import { StoreFaults } from '../../src/store/index.js';
import { echoReply } from '../helpers/fake-openai.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import { msg } from '../routes/builders.js';

interface ErrorBody {
  error: { code: string; details: Record<string, unknown> };
}

/** The retry hint of a 503 as the client sees it: the header and the envelope's details. */
function retryHint(res: { statusCode: number; headers: Record<string, unknown>; json<T>(): T }) {
  const { error } = res.json<ErrorBody>();
  return {
    status: res.statusCode,
    code: error.code,
    header: res.headers['retry-after'],
    details: error.details,
  };
}

describe('503 retry hints', () => {
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  it('storage unreachable: Retry-After and details.retry_after_seconds, then it answers again', async () => {
    const faults = new StoreFaults();
    const h = await rig.open({ storeFaults: faults });
    faults.inject('all');
    const down = await h.message(msg('x', 'c1'), { 'Idempotency-Key': 'k-down' });
    const seconds = STORE_UNAVAILABLE_RETRY_AFTER_SECONDS;
    expect(retryHint(down)).toEqual({
      status: 503,
      code: 'UNAVAILABLE',
      header: String(seconds),
      details: { reason: 'store_unavailable', retry_after_seconds: seconds },
    });
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(5);
    faults.heal();
    expect((await h.message(msg('x', 'c1'), { 'Idempotency-Key': 'k-down' })).statusCode).toBe(202);
  });

  it('the idempotency ceiling (spec rule 7): Retry-After and details.retry_after_seconds', async () => {
    const h: Harness = await rig.open({ limits: { idempotencyCeiling: 1 } });
    expect((await h.message(msg('a', 'c1'), { 'Idempotency-Key': 'k1' })).statusCode).toBe(202);
    const full = await h.message(msg('b', 'c2'), { 'Idempotency-Key': 'k2' });
    const seconds = CEILING_RETRY_AFTER_SECONDS;
    expect(retryHint(full)).toEqual({
      status: 503,
      code: 'UNAVAILABLE',
      header: String(seconds),
      details: { reason: 'idempotency_ceiling', retry_after_seconds: seconds },
    });
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(5);
    await h.internals.messages.idle(5_000);
  });
});
