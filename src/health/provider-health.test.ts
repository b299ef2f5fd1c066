import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { ManualClock } from '../lib/clock.js';
import { ProviderError, type ModelProvider, type ModelResponse } from '../runtime/index.js';
import { ProviderHealth } from './provider-health.js';

const REFUSED = new ProviderError(
  'openai: cannot reach the server (ECONNREFUSED)',
  'network',
  undefined,
  'ECONNREFUSED',
);
const ANSWER: ModelResponse = {
  content: 'hi',
  tool_calls: [],
  usage: { input_tokens: 1, output_tokens: 1 },
  model: 'm',
  finish_reason: 'stop',
};

/** Lets settled promises run their callbacks. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A provider whose probe answers as the test says: `next` is what the next
 * probe does (resolve, reject with an error, or hang until aborted).
 */
function scriptedProvider(type: ModelProvider['type'] = 'openai') {
  const state = {
    probes: 0,
    signals: [] as AbortSignal[],
    next: 'ok' as 'ok' | 'hang' | Error,
    calls: [] as Array<'ok' | Error>,
  };
  const provider: ModelProvider = {
    type,
    model: 'm',
    complete: () => {
      const outcome = state.calls.shift() ?? 'ok';
      return outcome === 'ok' ? Promise.resolve(ANSWER) : Promise.reject(outcome);
    },
    probe: (signal) => {
      state.probes++;
      state.signals.push(signal);
      const next = state.next;
      if (next === 'ok') return Promise.resolve();
      if (next === 'hang') return new Promise<void>(() => undefined);
      return Promise.reject(next);
    },
  };
  return { provider, state };
}

function setUp(type: ModelProvider['type'] = 'openai') {
  const clock = new ManualClock();
  const timers = new ManualTimers();
  const { provider, state } = scriptedProvider(type);
  const lines: Array<{ level: string; msg: string; fields: object }> = [];
  const logger = {
    warn: (fields: object, msg: string) => void lines.push({ level: 'warn', msg, fields }),
    info: (fields: object, msg: string) => void lines.push({ level: 'info', msg, fields }),
  };
  const health = new ProviderHealth({ provider, clock, timers, logger });
  return { clock, timers, provider, state, health, lines, tracked: health.track(provider) };
}

const call = (provider: ModelProvider) =>
  provider.complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }).catch(() => undefined);

describe('ProviderHealth: the probe', () => {
  it('probes on the first check, serves the cached result, and probes again only once a minute', async () => {
    const { clock, state, health } = setUp();
    expect(health.state()).toEqual({ status: 'unknown', message: 'not checked yet' });
    expect(await health.check()).toEqual({ status: 'ok' });
    expect(state.probes).toBe(1);
    for (let i = 0; i < 5; i++) {
      clock.advance(10_000);
      expect(await health.check()).toEqual({ status: 'ok' });
    }
    expect(state.probes).toBe(1); // 50 s later: still the cached result
    clock.advance(9_999);
    await health.check();
    expect(state.probes).toBe(1);
    clock.advance(1);
    await health.check();
    expect(state.probes).toBe(2); // 60 s after the first
  });

  it('a failed probe is failing with the cause; it recovers on the next probe, a minute later', async () => {
    const { clock, state, health, lines } = setUp();
    state.next = REFUSED;
    expect(await health.check()).toEqual({
      status: 'failing',
      message: 'openai: cannot reach the server (ECONNREFUSED)',
    });
    state.next = 'ok'; // the server is back, but the failure is cached until the next probe is due
    clock.advance(30_000);
    expect((await health.check()).status).toBe('failing');
    expect(state.probes).toBe(1);
    clock.advance(30_000);
    expect(await health.check()).toEqual({ status: 'ok' });
    expect(state.probes).toBe(2);
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      'warn model provider failing',
      'info model provider reachable again',
    ]);
    expect(lines[0]!.fields).toMatchObject({ cause: 'openai: cannot reach the server (ECONNREFUSED)' });
  });

  it('a health check waits at most waitMs for a slow probe; the probe times out after timeoutMs', async () => {
    const { timers, state, health } = setUp();
    state.next = 'hang';
    const first = health.check();
    await flush();
    expect(timers.delays()).toEqual([1_000, 5_000]); // the wait, and the probe's timeout
    timers.advance(1_000);
    expect(await first).toEqual({ status: 'unknown', message: 'not checked yet' });
    // A check meanwhile neither starts another probe nor waits past its own bound.
    const second = health.check();
    await flush();
    timers.advance(1_000);
    expect((await second).status).toBe('unknown');
    expect(state.probes).toBe(1);
    timers.advance(3_000);
    expect(health.state()).toEqual({ status: 'failing', message: 'openai: models call timed out after 5 s' });
    expect(state.signals[0]!.aborted).toBe(true); // the timed-out probe was told to stop
    expect(timers.size).toBe(0);
  });

  it('close() ends a probe in flight and starts no more', async () => {
    const { clock, timers, state, health } = setUp();
    state.next = 'hang';
    const pending = health.check();
    await health.close();
    expect(state.signals[0]!.aborted).toBe(true);
    expect(timers.size).toBe(1); // only the check's own wait is left, and it ends with the probe
    expect(await pending).toEqual({ status: 'unknown', message: 'not checked yet' });
    clock.advance(120_000);
    await health.check();
    expect(state.probes).toBe(1);
  });

  it('echo is degraded and never probed; a provider without a probe is judged by its calls', async () => {
    const echo = setUp('echo');
    expect(await echo.health.check()).toEqual({
      status: 'degraded',
      message: 'echo provider: offline answers, no model',
    });
    expect(echo.state.probes).toBe(0);

    const clock = new ManualClock();
    const bare = new ProviderHealth({
      provider: { type: 'openai', model: 'm' },
      clock,
      timers: new ManualTimers(),
    });
    expect(await bare.check()).toEqual({ status: 'ok', message: 'reachability not probed' });
  });
});

describe('ProviderHealth: the turns’ model calls', () => {
  it('three failed calls in a row within a minute are failing; a success clears them', async () => {
    const { state, health, tracked } = setUp();
    await health.check(); // probe: ok
    state.calls.push(REFUSED, REFUSED);
    await call(tracked);
    await call(tracked);
    expect(health.state()).toEqual({ status: 'ok' }); // two are not enough
    state.calls.push(REFUSED);
    await call(tracked);
    expect(health.state()).toEqual({
      status: 'failing',
      message: 'last 3 model calls failed: openai: cannot reach the server (ECONNREFUSED)',
    });
    await call(tracked); // succeeds
    expect(health.state()).toEqual({ status: 'ok' });
  });

  it('failures older than a minute no longer count; aborted calls and foreign errors never do', async () => {
    const { clock, state, health, tracked } = setUp();
    await health.check();
    state.calls.push(REFUSED, REFUSED, REFUSED);
    for (let i = 0; i < 3; i++) await call(tracked);
    expect(health.state().status).toBe('failing');
    clock.advance(59_999);
    expect(health.state().status).toBe('failing');
    clock.advance(1);
    expect(health.state().status).toBe('ok');

    const aborted = new ProviderError('openai: call aborted', 'aborted');
    state.calls.push(aborted, aborted, aborted);
    for (let i = 0; i < 3; i++) await call(tracked);
    expect(health.state().status).toBe('ok');
    // Nor do errors that are not the provider's (a stream callback's own error passed through).
    const foreign = new Error('event hub closed');
    state.calls.push(foreign, foreign, foreign);
    for (let i = 0; i < 3; i++) await call(tracked);
    expect(health.state().status).toBe('ok');
  });

  it('a successful call shows the server reachable again before the next probe', async () => {
    const { state, health, tracked } = setUp();
    state.next = REFUSED;
    expect((await health.check()).status).toBe('failing');
    await call(tracked);
    expect(health.state()).toEqual({ status: 'ok' });
  });

  it('the tracked provider answers and fails as the provider does, and keeps its probe', async () => {
    const { state, tracked } = setUp();
    expect(tracked.type).toBe('openai');
    expect(await tracked.complete({ messages: [], tools: [] })).toBe(ANSWER);
    state.calls.push(REFUSED);
    await expect(tracked.complete({ messages: [], tools: [] })).rejects.toBe(REFUSED);
    await tracked.probe!(new AbortController().signal);
    expect(state.probes).toBe(1);
  });
});
