/**
 * `gatehouse whoami` and `gatehouse agents` against a real gateway: the in-process harness listening on a port,
 * the command line run in-process (`runCli`) with its output captured, so no build is needed.
 */
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/index.js';
import { ADMIN_TOKEN, useHarness } from '../helpers/harness.js';

const ALICE_TOKEN = 'alice-token-0123456789abcdef';

const CONFIG = {
  agents: { main: {}, support: { tools: { allow: ['knowledge_*'], deny: [] } } },
  gateway: { auth: { principals: [{ id: 'alice', tokens: [ALICE_TOKEN], agents: ['main'] }] } },
};

/** How a run of the command line ended. */
interface Run {
  code: number | 'serving';
  stdout: string;
  stderr: string;
}

/** Runs `gatehouse <args>` in-process with an empty environment and captured output. */
async function gatehouse(args: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    out: (text) => void (stdout += text),
    err: (text) => void (stderr += text),
    env: {},
    cwd: tmpdir(),
    stdoutIsTTY: false,
    stdinIsTTY: false,
  });
  return { code, stdout, stderr };
}

/** A URL nothing listens on at the moment (a port bound, then released). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe('gatehouse whoami and agents against a running gateway', () => {
  const t = useHarness({ config: CONFIG });

  it('whoami: the principal, role and agents of the token; --json prints the body', async () => {
    const url = await t.gateway.listen();
    const alice = await gatehouse(['whoami', '--url', url, '--token', ALICE_TOKEN]);
    expect(alice.code, alice.stderr).toBe(0);
    expect(alice.stdout).toBe('principal  alice\nrole       api\nagents     main\n');

    const admin = await gatehouse(['whoami', '--url', url, '--token', ADMIN_TOKEN]);
    expect(admin.code, admin.stderr).toBe(0);
    expect(admin.stdout).toMatch(/^role {7}admin$/m);
    expect(admin.stdout).toMatch(/^agents {5}main, support$/m);

    const json = await gatehouse(['whoami', '--json', '--url', url, '--token', ALICE_TOKEN]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ principal: 'alice', role: 'api', agents: ['main'] });
  });

  it('agents: a table of the agents the token may use, the default marked; --json prints the body', async () => {
    const url = await t.gateway.listen();
    const sent = await t.message(
      { platform: 'web', user_id: 'u', chat_id: 'c', text: 'hello', wait: true },
      { 'x-api-token': ALICE_TOKEN },
    );
    expect(sent.statusCode).toBe(200);

    const json = await gatehouse(['agents', '--json', '--url', url, '--token', ADMIN_TOKEN]);
    expect(json.code, json.stderr).toBe(0);
    const { items } = JSON.parse(json.stdout) as { items: Array<{ id: string; tools: string[]; default: boolean }> };
    expect(items.map((a) => [a.id, a.default])).toEqual([
      ['main', true],
      ['support', false],
    ]);
    const [main, support] = items;
    expect(support!.tools.length).toBeGreaterThan(0);
    expect(support!.tools.every((name) => name.startsWith('knowledge_'))).toBe(true);
    expect(main!.tools.length).toBeGreaterThan(support!.tools.length);

    const admin = await gatehouse(['agents', '--url', url, '--token', ADMIN_TOKEN]);
    expect(admin.code, admin.stderr).toBe(0);
    const lines = admin.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +PROVIDER +MODEL +TOOLS +SESSIONS$/);
    expect(lines[1]).toMatch(new RegExp(`^main \\* +echo +\\S+ +${main!.tools.length} +1$`));
    expect(lines[2]).toMatch(new RegExp(`^support +echo +\\S+ +${support!.tools.length} +0$`));
    expect(lines[3]).toBe('* the default agent (of sessions no binding matches)');
    expect(lines).toHaveLength(4);
    // The columns line up under their headers.
    expect(lines[1]!.indexOf('echo')).toBe(lines[0]!.indexOf('PROVIDER'));
    expect(lines[2]!.indexOf('echo')).toBe(lines[0]!.indexOf('PROVIDER'));

    const alice = await gatehouse(['agents', '--url', url, '--token', ALICE_TOKEN]);
    expect(alice.code, alice.stderr).toBe(0);
    expect(alice.stdout).toMatch(/\nmain \* +echo /);
    expect(alice.stdout).not.toContain('support');
  });

  it('a refused token and a gateway that is down: the message on stderr, exit 1', async () => {
    const url = await t.gateway.listen();
    for (const command of ['whoami', 'agents']) {
      const refused = await gatehouse([command, '--url', url, '--token', 'not-a-token-0123456789']);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(/^gatehouse: UNAUTHORIZED: .*\(pass --token or set GATEHOUSE_TOKEN\)/);
    }
    const down = await deadUrl();
    for (const command of ['whoami', 'agents']) {
      const run = await gatehouse([command, '--json', '--url', down, '--token', ALICE_TOKEN]);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`gatehouse: cannot reach the gateway at ${down}`);
      expect(run.stderr).toContain('is it running?');
    }
  });
});
