/**
 * The MCP client against servers that misbehave (DECISIONS §19): a tool that hangs, huge output, a crash
 * mid-call, garbage on stdout, a server that never initializes, a tools list that changes, a private url
 * without allow_private_targets; the child's environment, secrets in the logs and no child left after close.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/logs/logger.js';
import { openMcpClients } from '../../src/mcp/client/index.js';
import { chatRequests } from '../helpers/fake-openai.js';
import { adminHeaders, testConfig, useHarness } from '../helpers/harness.js';
import { until } from '../helpers/until.js';
import { startHttpMcpServer, type HttpMcpServer } from './fixtures/http-server.js';
import { ask, serverIn, serverView, SILENT_FIXTURE, stdioServer, toolResults } from './fixtures/helpers.js';

/** True while a process with this id exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const ENV_SECRET = 'env-secret-value-0123456789';
const CANARY = 'GATEHOUSE_MCP_TEST_CANARY';

describe('MCP servers that misbehave', () => {
  const rig = useHarness({ fake: true, autoOpen: false });
  let http: HttpMcpServer | null = null;
  /** What a test opened itself, closed after it. */
  const owned: Array<() => Promise<void>> = [];
  const own = (close: () => Promise<void>): void => void owned.push(close);
  afterEach(async () => {
    delete process.env[CANARY];
    await http?.close();
    http = null;
    for (const close of owned.splice(0)) await close();
  });

  it('a tool that hangs ends at timeout_seconds as a tool error and the turn completes', async () => {
    // With timeout_seconds 0.5 the gateway would give initialize min(0.5 s, 30 s) too, which a child node on a
    // loaded machine can miss; so the server is opened here with an explicit initialize wait of its own, and
    // its tool runs in the gateway's agent loop as any tool does.
    const config = testConfig({ mcp: { servers: { files: stdioServer({ timeout_seconds: 0.5 }) } } });
    const logger = createLogger({ level: 'error', stdout: { write: () => undefined } });
    const clients = openMcpClients({ config, logger, clock: systemClock, backoff: { initMs: 20_000 } });
    own(async () => {
      await clients.close();
      rmSync(config.data_dir, { recursive: true, force: true });
    });
    await clients.start();
    const state = () => clients.views().find((v) => v.name === 'files')!.state;
    await until('files ready', () => state() === 'ready', 20_000);
    const h = await rig.open({ tools: [clients.tools.get('mcp__files__hang')!] });
    rig.fake.enqueue({ tool_calls: [{ id: 'h1', name: 'mcp__files__hang', arguments: {} }] }, { content: 'gave up' });
    const started = Date.now();
    const result = await ask(h, 'hang');
    expect(result).toMatchObject({ status: 'completed', response: 'gave up' });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(toolResults(chatRequests(rig.fake)[1]!).h1).toEqual({
      error: 'MCP server files, tool hang: timed out after 0.5 s (timeout_seconds)',
    });
    // The server is still there for the next call.
    expect(state()).toBe('ready');
  });

  it('huge output is cut at max_output_bytes with a note to the model', async () => {
    const h = await rig.open({ config: { mcp: { max_output_bytes: 1000, servers: { files: stdioServer() } } } });
    await serverIn(h, 'files', 'ready');
    rig.fake.enqueue(
      { tool_calls: [{ id: 'b1', name: 'mcp__files__huge', arguments: { bytes: 200_000 } }] },
      { content: 'that was long' },
    );
    expect((await ask(h, 'huge')).status).toBe('completed');
    const result = toolResults(chatRequests(rig.fake)[1]!).b1 as Record<string, unknown>;
    expect(result).toMatchObject({ untrusted_content: true, truncated: true });
    expect(result.content).toBe('x'.repeat(1000));
    expect(result.truncation_note).toBe(
      'The output was 200000 bytes; only the first 1000 bytes are shown (mcp.max_output_bytes).',
    );
  });

  it('a server that crashes mid-call: a tool error, then restarted after a delay and ready again', async () => {
    const h = await rig.open({ config: { mcp: { servers: { files: stdioServer() } } } });
    await serverIn(h, 'files', 'ready');
    rig.fake.enqueue({ tool_calls: [{ id: 'x1', name: 'mcp__files__crash', arguments: {} }] }, { content: 'it died' });
    const result = await ask(h, 'crash');
    expect(result).toMatchObject({ status: 'completed', response: 'it died' });
    expect(toolResults(chatRequests(rig.fake)[1]!).x1).toEqual({
      error: 'MCP server files, tool crash: the connection to the server closed during the call',
    });
    const failed = await serverView(h, 'files');
    expect(['failed', 'connecting', 'ready']).toContain(failed.state);
    const back = await serverIn(h, 'files', 'ready', (v) => v.restarts === 1);
    expect(back.last_error).toBe('the connection closed');

    // Back again, its tools work.
    rig.fake.enqueue(
      { tool_calls: [{ id: 'x2', name: 'mcp__files__echo', arguments: { text: 'again' } }] },
      { content: 'ok' },
    );
    await ask(h, 'again');
    expect(toolResults(chatRequests(rig.fake)[3]!).x2).toMatchObject({ content: 'echo: again' });
  });

  it('garbage on stdout is logged and ignored: the server still answers', async () => {
    const h = await rig.open({
      config: {
        logs: { level: 'info' },
        mcp: { servers: { files: stdioServer({ env: { GARBAGE_AT_START: 'on-please' } }) } },
      },
    });
    await serverIn(h, 'files', 'ready');
    rig.fake.enqueue({ tool_calls: [{ id: 'g1', name: 'mcp__files__garbage', arguments: {} }] }, { content: 'fine' });
    expect((await ask(h, 'garbage')).status).toBe('completed');
    expect(toolResults(chatRequests(rig.fake)[1]!).g1).toMatchObject({ content: 'answered after garbage' });
    const garbage = h.logs.filter((line) => line.includes('not JSON-RPC on stdout'));
    expect(garbage.join('\n')).toContain('this is not json');
    expect(garbage.join('\n')).toContain('garbage before anything');
    expect((await serverView(h, 'files')).state).toBe('ready');
  });

  it('a server that never answers initialize is failed; the gateway answers; health says failing', async () => {
    const h = await rig.open({
      config: {
        mcp: {
          servers: {
            silent: { transport: 'stdio', command: process.execPath, args: [SILENT_FIXTURE], timeout_seconds: 0.3 },
          },
        },
      },
    });
    const view = await serverIn(h, 'silent', 'failed');
    expect(view.last_error).toBe('the server did not answer initialize within 0.3 s');
    expect(view.tools).toEqual([]);
    const health = await h.inject({ method: 'GET', url: '/api/v1/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({
      status: 'degraded',
      components: { mcp: { status: 'failing', message: expect.stringContaining('silent') } },
    });
    // It offers no tool; a model that calls one anyway gets a tool error at once, and the turn completes.
    rig.fake.enqueue({ tool_calls: [{ id: 's1', name: 'mcp__silent__anything', arguments: {} }] }, { content: 'no' });
    expect((await ask(h, 'try')).status).toBe('completed');
    const [offered, answered] = chatRequests(rig.fake);
    expect(offered!.tools!.map((t) => t.function.name).filter((n) => n.startsWith('mcp__'))).toEqual([]);
    expect(toolResults(answered!).s1).toEqual({
      error: expect.stringMatching(/^MCP server silent is not ready \((failed|connecting)/),
    });
  });

  it('tools/list_changed refreshes the tools offered', async () => {
    const h = await rig.open({ config: { mcp: { servers: { files: stdioServer() } } } });
    const before = await serverIn(h, 'files', 'ready');
    expect(before.tools.map((t) => t.name)).not.toContain('late');
    rig.fake.enqueue({ tool_calls: [{ id: 'l1', name: 'mcp__files__add_tool', arguments: {} }] }, { content: 'added' });
    await ask(h, 'add');
    await serverIn(h, 'files', 'ready', (v) => v.tools.some((t) => t.name === 'late'));
    rig.fake.enqueue({ tool_calls: [{ id: 'l2', name: 'mcp__files__late', arguments: {} }] }, { content: 'used it' });
    await ask(h, 'use late');
    const calls = chatRequests(rig.fake);
    expect(calls[2]!.tools!.map((t) => t.function.name)).toContain('mcp__files__late');
    expect(toolResults(calls[3]!).l2).toMatchObject({ content: 'late answer' });
  });

  it('a private url without allow_private_targets is refused and never connected, not even on restart', async () => {
    http = await startHttpMcpServer();
    const h = await rig.open({ config: { mcp: { servers: { web: { transport: 'http', url: http.url } } } } });
    const view = await serverIn(h, 'web', 'failed');
    expect(view.last_error).toContain('refused');
    expect(view.last_error).toContain('127.0.0.1');
    const restarted = await h.inject({ method: 'POST', url: '/api/v1/mcp/servers/web/restart', headers: adminHeaders });
    expect(restarted.statusCode).toBe(200);
    await serverIn(h, 'web', 'failed', (v) => v.restarts === 1);
    expect(http.requests).toEqual([]);
  });

  it('an http server that goes away: a tool error and state failed, then ready again once it is back', async () => {
    http = await startHttpMcpServer();
    const port = Number(new URL(http.url).port);
    const h = await rig.open({
      config: { mcp: { allow_private_targets: true, servers: { web: { transport: 'http', url: http.url } } } },
    });
    await serverIn(h, 'web', 'ready');
    await http.close();
    rig.fake.enqueue(
      { tool_calls: [{ id: 'd1', name: 'mcp__web__lookup', arguments: { key: 'k' } }] },
      { content: 'down' },
    );
    expect((await ask(h, 'lookup')).status).toBe('completed');
    expect(toolResults(chatRequests(rig.fake)[1]!).d1).toEqual({
      error: expect.stringContaining('MCP server web, tool lookup: '),
    });
    expect((await serverView(h, 'web')).state).not.toBe('ready');
    http = await startHttpMcpServer(port);
    const back = await serverIn(h, 'web', 'ready', (v) => v.restarts >= 1);
    expect(back.last_error).not.toBeNull();
  });

  it("the child gets only env and PATH, never the gateway's environment (inherit_env passes it on)", async () => {
    process.env[CANARY] = 'canary-value';
    const h = await rig.open({
      config: {
        mcp: {
          servers: {
            files: stdioServer({ env: { FIXTURE_SECRET: ENV_SECRET } }),
            all: stdioServer({ inherit_env: true, env: { EXTRA: 'extra-value' } }),
          },
        },
      },
    });
    await serverIn(h, 'files', 'ready');
    await serverIn(h, 'all', 'ready');
    rig.fake.enqueue(
      {
        tool_calls: [
          { id: 'e1', name: 'mcp__files__env_keys', arguments: {} },
          { id: 'e2', name: 'mcp__all__env_value', arguments: { name: CANARY } },
          { id: 'e3', name: 'mcp__all__env_value', arguments: { name: 'EXTRA' } },
        ],
      },
      { content: 'seen' },
    );
    await ask(h, 'env');
    const results = toolResults(chatRequests(rig.fake)[1]!) as Record<string, { content: string }>;
    expect(JSON.parse(results.e1!.content)).not.toContain(CANARY);
    expect(JSON.parse(results.e1!.content)).toEqual(['FIXTURE_SECRET', 'PATH']);
    expect(results.e2!.content).toBe('canary-value');
    expect(results.e3!.content).toBe('extra-value');
  });

  it('cwd is the working directory of the child', async () => {
    const h = await rig.open({ config: { mcp: { servers: { files: stdioServer({ cwd: '/tmp' }) } } } });
    await serverIn(h, 'files', 'ready');
    rig.fake.enqueue({ tool_calls: [{ id: 'w1', name: 'mcp__files__cwd', arguments: {} }] }, { content: 'there' });
    await ask(h, 'where');
    expect(toolResults(chatRequests(rig.fake)[1]!).w1).toMatchObject({ content: '/tmp' });
  });

  it("secrets stay out of the logs (the child's stderr is logged, scrubbed) and the routes", async () => {
    const h = await rig.open({
      config: {
        logs: { level: 'debug' },
        mcp: {
          servers: {
            files: stdioServer({ env: { FIXTURE_SECRET: ENV_SECRET, STDERR_LINE: 'starting with key $SECRET' } }),
            down: { transport: 'stdio', command: '/nonexistent/mcp-server', env: { TOKEN: ENV_SECRET } },
          },
        },
      },
    });
    await serverIn(h, 'files', 'ready');
    await serverIn(h, 'down', 'failed');
    const stderr = await until('the stderr line', () => h.logs.find((line) => line.includes('starting with key')));
    expect(JSON.parse(stderr)).toMatchObject({ source: 'mcp', server: 'files', stderr: 'starting with key ***' });
    const list = await h.adminGet('/api/v1/mcp/servers');
    expect(list.body).not.toContain(ENV_SECRET);
    expect(list.json<{ items: Array<{ name: string; last_error: string | null }> }>().items[1]!.last_error).toContain(
      'not found',
    );
    expect(h.logs.join('\n')).not.toContain(ENV_SECRET);
  });

  it('close() ends every child and leaves the servers stopped', async () => {
    const h = await rig.open({ config: { mcp: { servers: { files: stdioServer(), b: stdioServer() } } } });
    await serverIn(h, 'files', 'ready');
    await serverIn(h, 'b', 'ready');
    rig.fake.enqueue(
      {
        tool_calls: [
          { id: 'p1', name: 'mcp__files__pid', arguments: {} },
          { id: 'p2', name: 'mcp__b__pid', arguments: {} },
        ],
      },
      { content: 'pids' },
    );
    await ask(h, 'pids');
    const results = toolResults(chatRequests(rig.fake)[1]!) as Record<string, { content: string }>;
    const pids = [Number(results.p1!.content), Number(results.p2!.content)];
    expect(pids.every(alive)).toBe(true);
    await h.close();
    expect(pids.filter(alive)).toEqual([]);
  });
});
