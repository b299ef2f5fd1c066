/**
 * `gatehouse mcp list` and `gatehouse mcp restart`: the table and its colours, the line of an empty list and the
 * restart line as formatting; the requests and errors against a scripted API; then against a real gateway (the
 * in-process harness listening on a port) with a stdio MCP server of its own (`fixtures/mcp-server.mjs`, tools
 * `echo` and `add`) and one that fails at start. The command line runs in-process (`runCli`), so no build is
 * needed.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/index.js';
import {
  formatMcpServers,
  formatRestarted,
  LAST_ERROR_WIDTH,
  NO_MCP_SERVERS,
  shorten,
  type McpServerInfo,
} from '../../src/cli/commands/mcp.js';
import { ADMIN_TOKEN, API_TOKEN, useHarness } from '../helpers/harness.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'mcp-server.mjs');

/** How a run of the command line ended. */
interface Run {
  code: number | 'serving';
  stdout: string;
  stderr: string;
}

/** Runs `gatehouse <args>` in-process with an empty environment and captured output. */
async function gatehouse(args: string[], options: { tty?: boolean } = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    out: (text) => void (stdout += text),
    err: (text) => void (stderr += text),
    env: {},
    cwd: tmpdir(),
    stdoutIsTTY: options.tty ?? false,
    stdinIsTTY: false,
  });
  return { code, stdout, stderr };
}

/** A server as the API answers it, with `patch` over plausible defaults. */
function server(patch: Partial<McpServerInfo> & { name: string }): McpServerInfo {
  return {
    transport: 'stdio',
    state: 'ready',
    tools: [],
    last_error: null,
    restarts: 0,
    connected_at: '2026-11-28T02:00:00.000Z',
    command: 'node',
    url: null,
    ...patch,
  };
}

/** `n` tools of server `name`. */
function tools(name: string, n: number): McpServerInfo['tools'] {
  return Array.from({ length: n }, (_, i) => ({
    name: `tool${i}`,
    exposed_as: `mcp__${name}__tool${i}`,
    description: `Tool ${i}.`,
    approval: 'never' as const,
  }));
}

describe('gatehouse mcp: formatting', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('a table of name, transport, state, tools and last error, its columns under their headers', () => {
    const longError = `spawn ENOENT:\n  ${'x'.repeat(100)}`;
    const text = formatMcpServers(
      [
        server({ name: 'files', tools: tools('files', 3) }),
        server({
          name: 'search-web',
          transport: 'http',
          state: 'failed',
          command: null,
          url: 'https://mcp.example.com/mcp',
          last_error: longError,
          restarts: 4,
        }),
        server({ name: 'db', state: 'connecting' }),
      ],
      false,
    );
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME +TRANSPORT +STATE +TOOLS +LAST ERROR$/);
    expect(lines[1]).toMatch(/^files +stdio +ready +3$/);
    expect(lines[2]).toMatch(/^search-web +http +failed +0 +spawn ENOENT: x+…$/);
    expect(lines[3]).toMatch(/^db +stdio +connecting +0$/);
    expect(lines[4]).toBe('gatehouse mcp restart <name> connects a server again');
    expect(lines).toHaveLength(5);
    for (const [header, cell] of [
      ['TRANSPORT', 'stdio'],
      ['STATE', 'ready'],
      ['TOOLS', '3'],
    ] as const) {
      expect(lines[1]!.indexOf(cell)).toBe(lines[0]!.indexOf(header));
    }
    expect(lines[2]!.indexOf('spawn')).toBe(lines[0]!.indexOf('LAST ERROR'));
    // The last error is on one line and cut to its width, the cut marked.
    const shown = lines[2]!.slice(lines[0]!.indexOf('LAST ERROR'));
    expect(shown).toHaveLength(LAST_ERROR_WIDTH);
    expect(shown.endsWith('…')).toBe(true);
    expect(text).not.toMatch(/ +\n/);
  });

  it('on a terminal the state is coloured (green ready, yellow connecting, red failed), the rest plain', () => {
    // styleText colours only for a terminal: the test's output is none, so colour is forced here.
    vi.stubEnv('FORCE_COLOR', '1');
    const text = formatMcpServers(
      [
        server({ name: 'a', state: 'ready' }),
        server({ name: 'b', state: 'connecting' }),
        server({ name: 'c', state: 'failed', last_error: 'boom' }),
        server({ name: 'd', state: 'stopped' }),
      ],
      true,
    );
    const lines = text.split('\n');
    expect(lines[1]).toContain('\u001b[32mready');
    expect(lines[2]).toContain('\u001b[33mconnecting');
    expect(lines[3]).toContain('\u001b[31mfailed');
    expect(lines[4]).toContain('\u001b[2mstopped');
    // Colour does not move the columns: without the codes it is the plain table.
    expect(stripVTControlCharacters(text)).toBe(
      formatMcpServers(
        [
          server({ name: 'a', state: 'ready' }),
          server({ name: 'b', state: 'connecting' }),
          server({ name: 'c', state: 'failed', last_error: 'boom' }),
          server({ name: 'd', state: 'stopped' }),
        ],
        false,
      ),
    );
  });

  it('no servers: one line saying where to add one', () => {
    expect(formatMcpServers([], false)).toBe(`${NO_MCP_SERVERS}\n`);
    expect(NO_MCP_SERVERS).toBe('No MCP servers: add one under mcp.servers in gatehouse.yaml');
  });

  it('shorten: one line, cut with … at the width; short text as is', () => {
    expect(shorten('  a\n\tb  ', 10)).toBe('a b');
    expect(shorten('abcdefghij', 10)).toBe('abcdefghij');
    expect(shorten('abcdefghijk', 10)).toBe('abcdefghi…');
  });

  it('the restart line: state, tools, restarts and the last error', () => {
    expect(formatRestarted(server({ name: 'files', tools: tools('files', 1), restarts: 1 }), false)).toBe(
      'Restarted files: ready, 1 tool, 1 restart\n',
    );
    expect(
      formatRestarted(server({ name: 'db', state: 'failed', restarts: 2, last_error: 'exited with code 1' }), false),
    ).toBe('Restarted db: failed, 0 tools, 2 restarts\n  last error: exited with code 1\n');
  });
});

/** One request the scripted API saw. */
interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
}

describe('gatehouse mcp against a scripted API', () => {
  let api: Server;
  let url: string;
  const seen: Seen[] = [];
  let servers: McpServerInfo[] = [];
  /** How many GETs of a server after its restart still see it connecting. */
  const connectingReads = 2;
  let pendingReads = 0;

  /** Answers like the gateway: the list, a restart (404 for an unknown name), 403 for the api token. */
  function answer(request: IncomingMessage): { status: number; body: unknown } {
    if (request.headers.authorization !== `Bearer ${ADMIN_TOKEN}`) {
      return { status: 403, body: { error: { code: 'FORBIDDEN', message: 'admin only', request_id: 'req_1' } } };
    }
    if (request.method === 'GET' && request.url === '/api/v1/mcp/servers')
      return { status: 200, body: { items: servers } };
    const one = /^\/api\/v1\/mcp\/servers\/([^/]+)(\/restart)?$/.exec(request.url ?? '');
    const found = one && servers.find((s) => s.name === decodeURIComponent(one[1]!));
    if (one && !found) return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'no such server' } } };
    if (request.method === 'POST' && one?.[2] && found) {
      // Like the gateway: the answer is the server reconnecting; GET shows it connected after `connectingReads`.
      found.restarts += 1;
      pendingReads = connectingReads;
      return { status: 200, body: { ...found, state: 'connecting', tools: [] } };
    }
    if (request.method === 'GET' && one && !one[2] && found) {
      if (pendingReads > 0) {
        pendingReads -= 1;
        return { status: 200, body: { ...found, state: 'connecting', tools: [] } };
      }
      return { status: 200, body: found };
    }
    return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'no route' } } };
  }

  beforeAll(async () => {
    api = createServer((request, response) => {
      seen.push({ method: request.method ?? '', url: request.url ?? '', authorization: request.headers.authorization });
      request.resume();
      request.on('end', () => {
        const { status, body } = answer(request);
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => api.listen({ host: '127.0.0.1', port: 0 }, resolve));
    url = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => api.close(resolve));
  });

  it('list: GET /mcp/servers with the token; the table; --json prints the body as it came', async () => {
    servers = [server({ name: 'files', tools: tools('files', 2) })];
    seen.length = 0;
    const run = await gatehouse(['mcp', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    expect(seen).toEqual([{ method: 'GET', url: '/api/v1/mcp/servers', authorization: `Bearer ${ADMIN_TOKEN}` }]);
    expect(run.stdout).toMatch(/^NAME +TRANSPORT +STATE +TOOLS +LAST ERROR\nfiles +stdio +ready +2\n$/);

    const json = await gatehouse(['mcp', 'list', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ items: servers });

    // `gatehouse mcp` alone lists them too.
    const bare = await gatehouse(['mcp', '--url', url, '--token', ADMIN_TOKEN]);
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stdout).toBe(run.stdout);
  });

  it('list with no servers: the line saying how to add one; --json an empty list', async () => {
    servers = [];
    const run = await gatehouse(['mcp', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${NO_MCP_SERVERS}\n`);
    const json = await gatehouse(['mcp', 'list', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(JSON.parse(json.stdout)).toEqual({ items: [] });
  });

  it('restart: POST /mcp/servers/<name>/restart (the name encoded), then the server once connected; --json', async () => {
    servers = [server({ name: 'files', tools: tools('files', 2), restarts: 1 })];
    seen.length = 0;
    const run = await gatehouse(['mcp', 'restart', 'files', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /api/v1/mcp/servers/files/restart',
      ...Array<string>(connectingReads + 1).fill('GET /api/v1/mcp/servers/files'),
    ]);
    expect(seen.every((r) => r.authorization === `Bearer ${ADMIN_TOKEN}`)).toBe(true);
    expect(run.stdout).toBe('Restarted files: ready, 2 tools, 2 restarts\n');

    const json = await gatehouse(['mcp', 'restart', 'files', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(JSON.parse(json.stdout)).toEqual({ ...servers[0], state: 'ready', restarts: 3 });

    // --no-wait: the answer of the restart itself.
    seen.length = 0;
    const now = await gatehouse(['mcp', 'restart', 'files', '--no-wait', '--url', url, '--token', ADMIN_TOKEN]);
    expect(now.code, now.stderr).toBe(0);
    expect(seen).toHaveLength(1);
    expect(now.stdout).toBe('Restarted files: connecting, 0 tools, 4 restarts\n');

    seen.length = 0;
    const odd = await gatehouse(['mcp', 'restart', 'a/b c', '--url', url, '--token', ADMIN_TOKEN]);
    expect(seen[0]?.url).toBe('/api/v1/mcp/servers/a%2Fb%20c/restart');
    expect(odd.code).toBe(1);
  });

  it('restart of a server that comes back failed: its error, exit 1', async () => {
    servers = [server({ name: 'db', state: 'failed', last_error: 'connect ECONNREFUSED 127.0.0.1:5432' })];
    const run = await gatehouse(['mcp', 'restart', 'db', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      'Restarted db: failed, 0 tools, 1 restart\n  last error: connect ECONNREFUSED 127.0.0.1:5432\n',
    );
    expect(run.stderr).toBe('gatehouse: db did not connect after the restart\n');
  });

  it('restart of an unknown name: says so and how to list them, exit 1; a missing name is a usage error', async () => {
    servers = [server({ name: 'files' })];
    const run = await gatehouse(['mcp', 'restart', 'nope', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('gatehouse: no MCP server is named "nope" (gatehouse mcp list shows them)\n');
    const missing = await gatehouse(['mcp', 'restart', '--url', url, '--token', ADMIN_TOKEN]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument 'name'");
  });

  it('an api token: the refusal with the admin hint, exit 1', async () => {
    for (const args of [
      ['mcp', 'list'],
      ['mcp', 'restart', 'files'],
    ]) {
      const run = await gatehouse([...args, '--url', url, '--token', API_TOKEN]);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe('gatehouse: FORBIDDEN: admin only (this needs an admin token) [request req_1]\n');
    }
  });

  it('help: mcp among the commands; mcp --help names list and restart', async () => {
    const top = await gatehouse(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^\s+mcp\b.*MCP servers/m);
    const help = await gatehouse(['mcp', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^\s+list\b/m);
    expect(help.stdout).toMatch(/^\s+restart\b.*<name>/m);
    const list = await gatehouse(['mcp', 'help', 'list']);
    expect(list.stdout).toMatch(/--json/);
    expect(list.stdout).toMatch(/--url <url>/);
  });
});

describe('gatehouse mcp against a gateway with no MCP servers', () => {
  const t = useHarness({});

  it('list says how to add one; an api token is refused', async () => {
    const url = await t.gateway.listen();
    const run = await gatehouse(['mcp', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${NO_MCP_SERVERS}\n`);
    const api = await gatehouse(['mcp', 'list', '--url', url, '--token', API_TOKEN]);
    expect(api.code).toBe(1);
    expect(api.stderr).toContain('(this needs an admin token)');
    const unknown = await gatehouse(['mcp', 'restart', 'files', '--url', url, '--token', ADMIN_TOKEN]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('gatehouse: no MCP server is named "files" (gatehouse mcp list shows them)\n');
  });
});

describe('gatehouse mcp against a gateway with a working and a failing stdio server', () => {
  const t = useHarness({
    config: {
      mcp: {
        servers: {
          files: { transport: 'stdio', command: process.execPath, args: [FIXTURE], approval: { add: 'always' } },
          broken: { transport: 'stdio', command: process.execPath, args: [FIXTURE, '--fail', 'no database here'] },
        },
      },
    },
  });

  /** The servers through the command's --json, once `files` is ready. */
  async function readyServers(url: string): Promise<McpServerInfo[]> {
    let items: McpServerInfo[] = [];
    await expect
      .poll(
        async () => {
          const run = await gatehouse(['mcp', 'list', '--json', '--url', url, '--token', ADMIN_TOKEN]);
          items = (JSON.parse(run.stdout) as { items: McpServerInfo[] }).items;
          return items.find((s) => s.name === 'files')?.state;
        },
        { timeout: 15_000, interval: 200 },
      )
      .toBe('ready');
    return items;
  }

  it('list: files ready with its two tools, broken failed with its error; the table shows both', async () => {
    const url = await t.gateway.listen();
    const items = await readyServers(url);
    const files = items.find((s) => s.name === 'files');
    expect(files).toMatchObject({ transport: 'stdio', state: 'ready', last_error: null, url: null });
    expect(files?.tools.map((tool) => [tool.exposed_as, tool.approval]).sort()).toEqual([
      ['mcp__files__add', 'always'],
      ['mcp__files__echo', 'never'],
    ]);
    await expect
      .poll(async () => {
        const run = await gatehouse(['mcp', 'list', '--url', url, '--token', ADMIN_TOKEN]);
        return run.stdout;
      })
      .toMatch(/\nbroken +stdio +(failed|connecting) +0 +\S/);

    const broken = await gatehouse(['mcp', 'list', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    const brokenView = (JSON.parse(broken.stdout) as { items: McpServerInfo[] }).items.find((s) => s.name === 'broken');
    expect(brokenView).toMatchObject({ transport: 'stdio', tools: [], connected_at: null });
    expect(brokenView?.last_error).toEqual(expect.any(String));

    const run = await gatehouse(['mcp', 'list', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME +TRANSPORT +STATE +TOOLS +LAST ERROR$/);
    const rows = lines.slice(1).filter((line) => !line.startsWith('gatehouse mcp restart'));
    expect(rows.find((line) => line.startsWith('files'))).toMatch(/^files +stdio +ready +2$/);
    expect(rows).toHaveLength(2);
  });

  it('restart: files comes back ready with its tools and one more restart; an unknown name is named', async () => {
    const url = await t.gateway.listen();
    const before = (await readyServers(url)).find((s) => s.name === 'files')!;
    const run = await gatehouse(['mcp', 'restart', 'files', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(run.code, run.stderr).toBe(0);
    const after = JSON.parse(run.stdout) as McpServerInfo;
    expect(after).toMatchObject({ name: 'files', state: 'ready', restarts: before.restarts + 1, last_error: null });
    expect(after.tools).toHaveLength(2);

    const text = await gatehouse(['mcp', 'restart', 'files', '--url', url, '--token', ADMIN_TOKEN]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe(`Restarted files: ready, 2 tools, ${before.restarts + 2} restarts\n`);

    const unknown = await gatehouse(['mcp', 'restart', 'nope', '--url', url, '--token', ADMIN_TOKEN]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('gatehouse: no MCP server is named "nope" (gatehouse mcp list shows them)\n');
  });
});
