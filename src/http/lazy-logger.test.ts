import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { LazyChildLogger } from './lazy-logger.js';

function capture(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('LazyChildLogger', () => {
  it('makes the child only when something logs, and then logs with its bindings', async () => {
    const { logger, lines } = capture();
    const child = vi.spyOn(logger, 'child');
    const lazy = new LazyChildLogger(logger, { reqId: 'req_1' }, {});
    expect(lazy.level).toBe('info');
    lazy.debug('below the level');
    expect(child).toHaveBeenCalledTimes(1); // a call through it makes it, even below the level
    lazy.warn({ detail: 1 }, 'something happened');
    lazy.error('and again');
    expect(child).toHaveBeenCalledTimes(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toMatchObject([
      { level: 40, reqId: 'req_1', detail: 1, msg: 'something happened' },
      { level: 50, reqId: 'req_1', msg: 'and again' },
    ]);
  });

  it('costs nothing when unused', () => {
    const { logger } = capture();
    const child = vi.spyOn(logger, 'child');
    const lazy = new LazyChildLogger(logger, { reqId: 'req_2' }, { level: 'warn' });
    expect(lazy.level).toBe('warn');
    expect(child).not.toHaveBeenCalled();
    lazy.child({ more: true }).info('from a grandchild');
    // The request's child first, then the grandchild (made through the inherited, spied method).
    expect(child.mock.calls).toEqual([
      [{ reqId: 'req_2' }, { level: 'warn' }],
      [{ more: true }, undefined],
    ]);
  });
});
