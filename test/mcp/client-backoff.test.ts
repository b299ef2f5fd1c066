/**
 * The restart policy of an MCP server (DECISIONS §19) on injected timers and clock: 1 s doubling to 60 s,
 * reset after a stable minute; close() leaves no timer and kills a child that ignores SIGTERM; the bound on an
 * http server's answers. Real child processes and sockets.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/harness.js';
import { ManualTimers } from '../helpers/manual-timers.js';
import { until } from '../helpers/until.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/logs/logger.js';
import { openMcpClients, type McpClients } from '../../src/mcp/client/index.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { boundedFetch } from '../../src/mcp/client/mcp-connection.js';
import { SILENT_FIXTURE, stdioServer } from './fixtures/helpers.js';

describe('the restart backoff of an MCP server', () => {
  let clients: McpClients | null = null;
  const timers = new ManualTimers();
  const clock = new ManualClock();
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', stdout: { write: (line) => void lines.push(line) } });
  afterEach(async () => {
    await clients?.close();
    clients = null;
  });

  const open = (servers: Record<string, unknown>) => {
    const config = testConfig({ mcp: { servers } });
    clients = openMcpClients({ config, logger, clock, timers });
    return clients;
  };
  const state = (c: McpClients, name = 'files') => c.views().find((v) => v.name === name)!;

  it('a server that cannot start: 1 s, 2 s, 4 s … up to 60 s between attempts; close leaves no timer', async () => {
    const c = open({ files: { transport: 'stdio', command: '/nonexistent/mcp-server' } });
    await c.start();
    const seen: number[] = [];
    for (let attempt = 0; attempt < 9; attempt++) {
      await until('a retry scheduled', () => timers.size === 1 && state(c).state === 'failed');
      seen.push(timers.delays()[0]!);
      timers.advance(timers.delays()[0]!);
    }
    expect(seen).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    expect(state(c).restarts).toBe(9);
    expect(state(c).last_error).toBe('cannot start /nonexistent/mcp-server: not found');
    await c.close();
    expect(timers.size).toBe(0);
    expect(state(c).state).toBe('stopped');
  });

  it('a crash after a stable minute starts the backoff again at 1 s', async () => {
    const c = open({ files: stdioServer() });
    await c.start();
    const crash = async () => {
      await until('ready', () => state(c).state === 'ready');
      const tool = c.tools.get('mcp__files__crash')!;
      await expect(
        tool.run({}, { sessionKey: 's', eventId: 'e', signal: new AbortController().signal }),
      ).rejects.toThrow('closed during the call');
      await until('a retry scheduled', () => timers.size === 1);
      const delay = timers.delays()[0]!;
      timers.advance(delay);
      return delay;
    };
    expect(await crash()).toBe(1_000);
    expect(await crash()).toBe(2_000);
    await until('ready', () => state(c).state === 'ready');
    clock.advance(60_000);
    expect(await crash()).toBe(1_000);
  });

  it('a call to a server that is not ready is a tool error at once', async () => {
    const c = open({ files: stdioServer() });
    await c.start();
    await until('ready', () => state(c).state === 'ready');
    const echo = c.tools.get('mcp__files__echo')!;
    await c.close();
    await expect(
      echo.run({ text: 'x' }, { sessionKey: 's', eventId: 'e', signal: new AbortController().signal }),
    ).rejects.toThrow('MCP server files is not ready (stopped)');
    expect(c.tools.list()).toEqual([]);
  });

  it('a call is aborted with the turn, and nothing stays pending', async () => {
    const c = open({ files: stdioServer({ timeout_seconds: 60 }) });
    await c.start();
    await until('ready', () => state(c).state === 'ready');
    const abort = new AbortController();
    const call = c.tools.get('mcp__files__hang')!.run({}, { sessionKey: 's', eventId: 'e', signal: abort.signal });
    abort.abort();
    await expect(call).rejects.toThrow('interrupted');
    expect(state(c).state).toBe('ready');
  });

  it('an explicit initialize wait (initMs) replaces min(timeout_seconds, maxInitMs)', async () => {
    const silent = { transport: 'stdio', command: process.execPath, args: [SILENT_FIXTURE], timeout_seconds: 0.3 };
    const config = testConfig({ mcp: { servers: { silent } } });
    const c = (clients = openMcpClients({ config, logger, clock, timers, backoff: { initMs: 20_000 } }));
    await c.start();
    await until('the initialize deadline', () => timers.delays().includes(20_000));
    expect(state(c, 'silent').state).toBe('connecting');
    timers.advance(20_000);
    await until('failed', () => state(c, 'silent').state === 'failed');
    expect(state(c, 'silent').last_error).toBe('the server did not answer initialize within 20 s');
  });

  it('close() sends SIGTERM, then SIGKILL after the grace to a child that ignores it', async () => {
    const c = open({
      stubborn: {
        transport: 'stdio',
        command: process.execPath,
        args: [SILENT_FIXTURE],
        env: { IGNORE_SIGTERM: 'yes-please' },
      },
    });
    await c.start();
    const said = await until('the child ignores SIGTERM', () => lines.find((l) => l.includes('ignoring SIGTERM')));
    const pid = Number(/pid (\d+)/.exec(said)![1]);
    let closed = false;
    const closing = c.close().then(() => (closed = true));
    await until('the kill timer', () => timers.delays().includes(2_000));
    expect(closed).toBe(false);
    expect(alive(pid)).toBe(true);
    timers.advance(2_000);
    await closing;
    expect(alive(pid)).toBe(false);
    expect(timers.size).toBe(0);
  });

  it("an http server's answer to a POST over the bound fails; a GET stream is left alone", async () => {
    const server = createServer((req, res) => res.end('z'.repeat(5_000)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const bounded = boundedFetch(fetch, 1_000);
      const post = await bounded(url, { method: 'POST', body: '{}' });
      await expect(post.text()).rejects.toThrow();
      expect((await (await bounded(url, { method: 'GET' })).text()).length).toBe(5_000);
      expect((await (await boundedFetch(fetch, 10_000)(url, { method: 'POST', body: '{}' })).text()).length).toBe(
        5_000,
      );
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

/** True while a process with this id exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
