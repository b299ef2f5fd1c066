import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig, type Config } from '../config/config.schema.js';
import { fingerprintToken } from '../security/tokens.js';
import {
  auditConfig,
  checkAdminRotation,
  checkAgentApprovals,
  checkAllowedHosts,
  checkBind,
  checkBudget,
  checkLoopbackTrust,
  checkMcpEnvironment,
  checkMcpPrivateTargets,
  checkMcpTransport,
  checkOutboundTransport,
  checkProfile,
  checkSharedMemory,
  checkTokenRoles,
  checkTokens,
  checkWebhook,
} from './self-audit.config.js';
import { auditDataDir, nodeFileProbe, type FileProbe, type ProbeEntry } from './self-audit.data-dir.js';
import { FINDINGS, type SecurityFinding } from './self-audit.findings.js';
import { judgeSecret } from './self-audit.secrets.js';
import { hasCritical, reportOf, runSelfAudit } from './self-audit.js';

const STRONG = 'Q7v2mK9xR4tLp8sW1zN6bH3cJ5dF0gYe'; // 32 characters, 32 distinct
const STRONG_ADMIN = 'Zr8Tq2Wv6Xn4Bm1Kc9Hj3Lp5Sd7Fg0Ay';

/** A validated configuration from a partial raw one. */
function config(raw: Record<string, unknown> = {}): Config {
  const result = validateConfig({ data_dir: '/srv/gatehouse/data', ...raw });
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.config;
}

const ids = (findings: SecurityFinding[]): string[] => findings.map((f) => f.id);
const only = (findings: SecurityFinding[]): SecurityFinding => {
  expect(findings).toHaveLength(1);
  return findings[0]!;
};

describe('the configuration checks', () => {
  it('find nothing in the defaults (loopback, generated admin token, echo, webhook off)', () => {
    expect(auditConfig(config())).toEqual([]);
  });

  it('every finding carries a catalogued id and its title', () => {
    const findings = auditConfig(
      config({
        gateway: { host: '0.0.0.0', auth: { api_tokens: ['secret'], allowed_hosts: ['*'] } },
        security: { profile: 'minimal' },
        channels: { webhook: { enabled: true } },
        provider: { type: 'anthropic', base_url: 'http://10.1.2.3', api_key: 'sk-ant-0123456789' },
        mcp: {
          allow_private_targets: true,
          servers: {
            docs: { transport: 'http', url: 'http://10.1.2.4/mcp' },
            shell: { command: 'mcp-shell', inherit_env: true },
          },
        },
      }),
    );
    expect(ids(findings)).toEqual(
      expect.arrayContaining(['mcp.plain_http', 'mcp.inherit_env', 'mcp.allow_private_targets']),
    );
    expect(findings.length).toBeGreaterThan(5);
    for (const f of findings) {
      expect(FINDINGS[f.id]).toBe(f.title);
      expect(f.found.length).toBeGreaterThan(10);
      expect(f.fix.length).toBeGreaterThan(10);
    }
  });

  describe('gateway.bind_public', () => {
    it.each(['127.0.0.1', '127.8.9.10', 'localhost', '::1', '[::1]'])('is silent on loopback %s', (host) => {
      expect(checkBind(config({ gateway: { host } }))).toEqual([]);
    });
    it.each(['0.0.0.0', '::', '192.168.1.10', 'gatehouse.example.com'])('warns on %s', (host) => {
      const f = only(checkBind(config({ gateway: { host } })));
      expect(f).toMatchObject({ id: 'gateway.bind_public', severity: 'warning' });
      expect(f.found).toContain(JSON.stringify(host));
    });
  });

  describe('gateway.allowed_hosts_*', () => {
    it('is critical off loopback with no allowed_hosts', () => {
      const f = only(checkAllowedHosts(config({ gateway: { host: '0.0.0.0' } })));
      expect(f).toMatchObject({ id: 'gateway.allowed_hosts_missing', severity: 'critical' });
      expect(f.found).toContain('is empty');
    });
    it('is critical off loopback when every entry is a wildcard, naming them', () => {
      const f = only(
        checkAllowedHosts(config({ gateway: { host: '10.0.0.4', auth: { allowed_hosts: ['*', '0.0.0.0'] } } })),
      );
      expect(f).toMatchObject({ id: 'gateway.allowed_hosts_missing', severity: 'critical' });
      expect(f.found).toContain('"*", "0.0.0.0"');
    });
    it('is silent off loopback with exact names, and on loopback without any', () => {
      expect(
        checkAllowedHosts(config({ gateway: { host: '0.0.0.0', auth: { allowed_hosts: ['gw.example.com'] } } })),
      ).toEqual([]);
      expect(checkAllowedHosts(config())).toEqual([]);
    });
    it('notes dropped wildcard entries beside usable ones, and on loopback', () => {
      const mixed = only(
        checkAllowedHosts(config({ gateway: { host: '0.0.0.0', auth: { allowed_hosts: ['gw.example.com', '::'] } } })),
      );
      expect(mixed).toMatchObject({ id: 'gateway.allowed_hosts_wildcard', severity: 'info' });
      const loopback = only(checkAllowedHosts(config({ gateway: { auth: { allowed_hosts: ['0.0.0.0'] } } })));
      expect(loopback).toMatchObject({ id: 'gateway.allowed_hosts_wildcard', severity: 'info' });
      expect(loopback.found).toContain('loopback names apply');
    });
  });

  describe('judgeSecret', () => {
    it.each([
      'change-me',
      'CHANGE_ME',
      'changeme',
      'secret',
      'Secret!',
      'password',
      'password123',
      'test',
      'test-1',
      'admin',
      '12345678',
      '0123456789',
      '',
      '----',
    ])('calls %j well known', (value) => {
      expect(judgeSecret(value)).toBe('well_known');
    });
    it.each(['abc123-not-long', 'test-api-token-0123456789', 'e2e-api', STRONG.slice(0, 31)])(
      'calls %j short',
      (value) => {
        expect(judgeSecret(value)).toBe('short');
      },
    );
    it.each(['a'.repeat(40), 'ab'.repeat(20), 'abcdefgh'.repeat(5), '0101010101234234234234234234234234'])(
      'calls %j low in variety',
      (value) => {
        expect(judgeSecret(value)).toBe('low_variety');
      },
    );
    it.each([
      STRONG,
      'k3N_9fQz-Lr2Vt8WpXa1Yb6Cd0Ee4Gh7Ij5Mo',
      '5093817264028461937502846193750284619375',
      'correct horse battery staple forever',
    ])('accepts %j', (value) => {
      expect(judgeSecret(value)).toBeNull();
    });
  });

  describe('auth.token_*', () => {
    it('names each weak token by place and fingerprint, never by value, one finding per kind', () => {
      const tokens = { api_tokens: ['change-me', STRONG, 'x'.repeat(40)], admin_tokens: ['short-admin-token-12345'] };
      const findings = checkTokens(config({ gateway: { auth: tokens } }));
      expect(ids(findings)).toEqual(['auth.token_well_known', 'auth.token_short', 'auth.token_low_variety']);
      const [known, short, variety] = findings;
      expect(known).toMatchObject({ severity: 'critical' });
      expect(known!.found).toContain(`gateway.auth.api_tokens[0] (${fingerprintToken('change-me')})`);
      expect(short).toMatchObject({ severity: 'warning' }); // 23 characters: short, not critically so
      expect(short!.found).toContain('gateway.auth.admin_tokens[0]');
      expect(variety).toMatchObject({ severity: 'warning' });
      expect(variety!.found).toContain('gateway.auth.api_tokens[2]');
      const text = JSON.stringify(findings);
      for (const token of [...tokens.api_tokens, ...tokens.admin_tokens]) expect(text).not.toContain(token);
    });
    it('is critical for a token under 16 characters', () => {
      const f = only(checkTokens(config({ gateway: { auth: { api_tokens: ['k3N_9fQz-Lr2'] } } })));
      expect(f).toMatchObject({ id: 'auth.token_short', severity: 'critical' });
    });
    it('is silent for strong tokens', () => {
      expect(
        checkTokens(config({ gateway: { auth: { api_tokens: [STRONG], admin_tokens: [STRONG_ADMIN] } } })),
      ).toEqual([]);
    });
  });

  describe('auth.api_token_is_admin and auth.admin_fallback', () => {
    it('warns when an api token is also an admin token', () => {
      const f = only(
        checkTokenRoles(config({ gateway: { auth: { api_tokens: [STRONG_ADMIN, STRONG], admin_tokens: [STRONG] } } })),
      );
      expect(f).toMatchObject({ id: 'auth.api_token_is_admin', severity: 'warning' });
      expect(f.found).toContain(`gateway.auth.api_tokens[1] (${fingerprintToken(STRONG)})`);
      expect(f.found).not.toContain(STRONG);
    });
    it('notes that api tokens are admin when no admin token is configured', () => {
      const f = only(checkTokenRoles(config({ gateway: { auth: { api_tokens: [STRONG] } } })));
      expect(f).toMatchObject({ id: 'auth.admin_fallback', severity: 'info' });
    });
    it('is silent with separate tokens, or none', () => {
      expect(
        checkTokenRoles(config({ gateway: { auth: { api_tokens: [STRONG], admin_tokens: [STRONG_ADMIN] } } })),
      ).toEqual([]);
      expect(checkTokenRoles(config())).toEqual([]);
    });
  });

  describe('auth.loopback_trust_proxy', () => {
    const proxied = { host: '127.0.0.1', auth: { allowed_hosts: ['gw.example.com', 'localhost'] } };
    it('warns when allowed_hosts names a public host of a loopback or wildcard bind', () => {
      const f = only(checkLoopbackTrust(config({ gateway: proxied })));
      expect(f).toMatchObject({ id: 'auth.loopback_trust_proxy', severity: 'warning' });
      expect(f.found).toContain('"gw.example.com"');
      expect(f.found).not.toContain('localhost');
      expect(checkLoopbackTrust(config({ gateway: { ...proxied, host: '0.0.0.0' } }))).toHaveLength(1);
    });
    it('is silent with loopback_trust off, in mode open, on a specific public address, or without public names', () => {
      expect(
        checkLoopbackTrust(config({ gateway: { ...proxied, auth: { ...proxied.auth, loopback_trust: false } } })),
      ).toEqual([]);
      expect(checkLoopbackTrust(config({ gateway: { ...proxied, auth: { ...proxied.auth, mode: 'open' } } }))).toEqual(
        [],
      );
      expect(checkLoopbackTrust(config({ gateway: { ...proxied, host: '10.0.0.4' } }))).toEqual([]);
      expect(checkLoopbackTrust(config({ gateway: { auth: { allowed_hosts: ['localhost', '127.0.0.1'] } } }))).toEqual(
        [],
      );
    });
  });

  describe('security.profile_minimal', () => {
    it('is a warning on loopback and critical off it', () => {
      expect(only(checkProfile(config({ security: { profile: 'minimal' } })))).toMatchObject({
        id: 'security.profile_minimal',
        severity: 'warning',
      });
      expect(
        only(checkProfile(config({ security: { profile: 'minimal' }, gateway: { host: '0.0.0.0' } }))).severity,
      ).toBe('critical');
      expect(checkProfile(config({ security: { profile: 'extended' } }))).toEqual([]);
    });
  });

  describe('webhook.*', () => {
    const webhook = (extra: Record<string, unknown>) => config({ channels: { webhook: { enabled: true, ...extra } } });
    it('is silent while the webhook is disabled', () => {
      expect(checkWebhook(config({ channels: { webhook: { secret: null, host: '0.0.0.0' } } }))).toEqual([]);
    });
    it('is critical without a secret on the default 0.0.0.0 bind, which it also reports', () => {
      const findings = checkWebhook(webhook({}));
      expect(findings.map((f) => [f.id, f.severity])).toEqual([
        ['webhook.no_secret', 'critical'],
        ['webhook.bind_public', 'warning'],
      ]);
    });
    it('warns without a secret on loopback', () => {
      expect(only(checkWebhook(webhook({ host: '127.0.0.1' })))).toMatchObject({
        id: 'webhook.no_secret',
        severity: 'warning',
      });
    });
    it('judges the secret: well known (critical off loopback), short, a short whsec_ key', () => {
      const known = checkWebhook(webhook({ secret: 'change-me' }));
      expect(known[0]).toMatchObject({ id: 'webhook.secret_weak', severity: 'critical' });
      expect(JSON.stringify(known)).not.toContain('change-me');
      expect(only(checkWebhook(webhook({ host: '127.0.0.1', secret: 'change-me' }))).severity).toBe('warning');
      expect(only(checkWebhook(webhook({ host: '127.0.0.1', secret: 'k3N_9fQz-Lr2Vt8Wp' }))).severity).toBe('warning');
      const whsec = only(checkWebhook(webhook({ host: '127.0.0.1', secret: 'whsec_c2hvcnQta2V5' })));
      expect(whsec.found).toContain('shorter than 24 bytes');
    });
    it('is silent for a strong secret on loopback (a whsec_ key of 32 bytes too)', () => {
      expect(checkWebhook(webhook({ host: '127.0.0.1', secret: STRONG }))).toEqual([]);
      const key = Buffer.from(STRONG).toString('base64');
      expect(checkWebhook(webhook({ host: '127.0.0.1', secret: `whsec_${key}` }))).toEqual([]);
    });
  });

  describe('provider.plain_http and embeddings.plain_http', () => {
    it('is critical when an api key crosses plain HTTP off loopback, a warning without a key', () => {
      const keyed = only(
        checkOutboundTransport(
          config({ provider: { type: 'openai', base_url: 'http://10.0.0.5:8000/v1', api_key: 'sk-abcdefabcdef' } }),
        ),
      );
      expect(keyed).toMatchObject({ id: 'provider.plain_http', severity: 'critical' });
      expect(keyed.found).toContain('10.0.0.5:8000');
      expect(keyed.found).not.toContain('sk-abcdef');
      const open = only(checkOutboundTransport(config({ embeddings: { base_url: 'http://embed.lan/v1' } })));
      expect(open).toMatchObject({ id: 'embeddings.plain_http', severity: 'warning' });
    });
    it('is silent for https, loopback, the echo provider and no base_url', () => {
      for (const base_url of ['https://api.example.com/v1', 'http://127.0.0.1:11434/v1', 'http://[::1]:8000', null]) {
        expect(checkOutboundTransport(config({ provider: { type: 'openai', base_url, api_key: 'k' } }))).toEqual([]);
      }
      expect(checkOutboundTransport(config({ provider: { type: 'echo', base_url: 'http://10.0.0.5' } }))).toEqual([]);
    });
  });

  describe('budget.missing', () => {
    it('warns for OpenAI and Anthropic without a daily budget', () => {
      expect(only(checkBudget(config({ provider: { type: 'openai' } })))).toMatchObject({
        id: 'budget.missing',
        severity: 'warning',
      });
      expect(checkBudget(config({ provider: { type: 'anthropic', base_url: 'http://127.0.0.1:9' } }))).toHaveLength(1);
      expect(
        checkBudget(config({ provider: { type: 'openai', base_url: 'https://openrouter.ai/api/v1' } })),
      ).toHaveLength(1);
    });
    it('is silent with a budget, for echo, and for an OpenAI-compatible server on loopback', () => {
      expect(checkBudget(config({ provider: { type: 'openai' }, budget: { daily_usd: 5 } }))).toEqual([]);
      expect(checkBudget(config({ provider: { type: 'openai' }, budget: { daily_usd: 0 } }))).toEqual([]);
      expect(checkBudget(config())).toEqual([]);
      expect(checkBudget(config({ provider: { type: 'openai', base_url: 'http://localhost:11434/v1' } }))).toEqual([]);
    });
  });
});

describe('the MCP checks', () => {
  const BEARER = 'Bearer mcp-token-never-shown-7c1f';
  const mcp = (block: Record<string, unknown>) => config({ mcp: block });
  const http = (url: string, extra: Record<string, unknown> = {}) => ({ transport: 'http', url, ...extra });

  describe('mcp.plain_http', () => {
    it('warns for an http server over plain HTTP off loopback, naming its key, host and header names, never a value', () => {
      const f = only(
        checkMcpTransport(
          mcp({ servers: { docs: http('http://10.0.0.5:8080/mcp', { headers: { Authorization: BEARER } }) } }),
        ),
      );
      expect(f).toMatchObject({ id: 'mcp.plain_http', severity: 'warning' });
      expect(f.found).toContain('mcp.servers.docs.url uses http:// to 10.0.0.5:8080 with header Authorization');
      expect(f.found).toContain('bearer token');
      expect(JSON.stringify(f)).not.toContain(BEARER);
    });
    it('lists every such server in one finding, and never shows credentials of the url', () => {
      const f = only(
        checkMcpTransport(
          mcp({
            servers: {
              a: http('http://mcp.example.com/mcp'),
              b: http('http://user:pa55word@192.168.1.9/mcp', { headers: { 'X-Api-Key': 'k', Cookie: 'c' } }),
              c: http('https://mcp.example.com/mcp'),
            },
          }),
        ),
      );
      expect(f.found).toContain(
        'mcp.servers.a.url uses http:// to mcp.example.com; ' +
          'mcp.servers.b.url uses http:// to 192.168.1.9 with headers X-Api-Key and Cookie',
      );
      expect(f.found).not.toContain('mcp.servers.c');
      expect(f.found).not.toContain('pa55word');
    });
    it('is silent for https, loopback hosts and stdio servers', () => {
      const servers = {
        tls: http('https://10.0.0.5/mcp', { headers: { Authorization: BEARER } }),
        v4: http('http://127.0.0.1:3000/mcp'),
        v6: http('http://[::1]:3000/mcp'),
        name: http('http://localhost:3000/mcp'),
        sub: http('http://tools.localhost:3000/mcp'),
        local: { command: 'mcp-files', args: ['--root', '/srv'] },
      };
      expect(checkMcpTransport(mcp({ servers }))).toEqual([]);
      expect(checkMcpTransport(config())).toEqual([]);
    });
  });

  describe('mcp.inherit_env', () => {
    it("warns for stdio servers given the gateway's environment, naming each key, never an env value", () => {
      const f = only(
        checkMcpEnvironment(
          mcp({
            servers: {
              shell: { command: 'mcp-shell', inherit_env: true, env: { SHELL_TOKEN: 'env-secret-never-shown-3a9d' } },
              files: { command: 'mcp-files' },
              git: { command: 'mcp-git', inherit_env: true },
            },
          }),
        ),
      );
      expect(f).toMatchObject({ id: 'mcp.inherit_env', severity: 'warning' });
      expect(f.found).toContain('mcp.servers.shell.inherit_env and mcp.servers.git.inherit_env are true');
      expect(f.found).not.toContain('mcp.servers.files');
      expect(JSON.stringify(f)).not.toContain('env-secret-never-shown');
      expect(f.fix).toContain('mcp.servers.<name>.env');
    });
    it('is silent by default, with env only, and for an http server (inherit_env applies to stdio)', () => {
      expect(checkMcpEnvironment(config())).toEqual([]);
      expect(checkMcpEnvironment(mcp({ servers: { files: { command: 'mcp-files', env: { ROOT: '/srv' } } } }))).toEqual(
        [],
      );
      expect(
        checkMcpEnvironment(mcp({ servers: { docs: http('https://mcp.example.com/', { inherit_env: true }) } })),
      ).toEqual([]);
    });
  });

  describe('mcp.allow_private_targets', () => {
    it('warns while http servers are configured, naming their keys', () => {
      const f = only(
        checkMcpPrivateTargets(
          mcp({
            allow_private_targets: true,
            servers: {
              lan: http('https://mcp.lan/mcp'),
              local: http('http://127.0.0.1:3000/'),
              files: { command: 'x' },
            },
          }),
        ),
      );
      expect(f).toMatchObject({ id: 'mcp.allow_private_targets', severity: 'warning' });
      expect(f.found).toContain('calls mcp.servers.lan.url and mcp.servers.local.url on loopback, private');
      expect(f.found).toContain('SSRF');
      expect(f.found).not.toContain('mcp.servers.files');
    });
    it('is only noted without an http server', () => {
      const f = only(
        checkMcpPrivateTargets(mcp({ allow_private_targets: true, servers: { files: { command: 'mcp-files' } } })),
      );
      expect(f).toMatchObject({ id: 'mcp.allow_private_targets', severity: 'info' });
      expect(f.found).toContain('no http MCP server is configured');
    });
    it('is silent while off (the default)', () => {
      expect(checkMcpPrivateTargets(config())).toEqual([]);
      expect(checkMcpPrivateTargets(mcp({ servers: { lan: http('http://10.0.0.5/') } }))).toEqual([]);
    });
  });

  it('auditConfig runs the three checks, after the outbound ones and before the agents', () => {
    const findings = auditConfig(
      config({
        provider: { type: 'openai', base_url: 'http://127.0.0.1:11434/v1' },
        mcp: {
          allow_private_targets: true,
          servers: {
            docs: http('http://mcp.example.com/mcp', { headers: { Authorization: BEARER } }),
            shell: { command: 'mcp-shell', inherit_env: true },
          },
        },
        agents: { support: {} },
      }),
    );
    expect(ids(findings)).toEqual([
      'mcp.plain_http',
      'mcp.inherit_env',
      'mcp.allow_private_targets',
      'agents.tools_without_approval',
    ]);
    for (const f of findings) expect(FINDINGS[f.id]).toBe(f.title);
    expect(JSON.stringify(findings)).not.toContain(BEARER);
  });
});

describe('the agent and principal checks', () => {
  const PRINCIPAL_TOKEN = 'Pm4Xw8Ks2Qn6Vb0Lt3Hy7Rc1Jd5Gf9Ze';
  const OTHER_TOKEN = 'Ua2Ek6Io0Yw4Tr8Mn3Bv7Cx1Zl5Sp9Dq';

  describe('agents.tools_without_approval', () => {
    it('warns for a configured agent allowing "*" with an empty approval list, naming its key', () => {
      const f = only(
        checkAgentApprovals(
          config({
            agents: {
              support: { tools: { allow: ['search', '*'] } },
              ops: { approval_required: ['shell'] },
              reader: { tools: { allow: ['search', 'fetch_*'] } },
            },
          }),
        ),
      );
      expect(f).toMatchObject({ id: 'agents.tools_without_approval', severity: 'warning' });
      expect(f.found).toContain('agents.support.tools.allow holds "*"');
      expect(f.found).not.toContain('agents.ops');
      expect(f.found).not.toContain('agents.reader');
    });
    it('lists every such agent in one finding (the tools block defaults to allow "*")', () => {
      const f = only(checkAgentApprovals(config({ agents: { a: {}, b: { tools: { deny: ['shell'] } } } })));
      expect(f.found).toContain('agents.a.tools.allow and agents.b.tools.allow hold "*"');
    });
    it('is silent for the implicit main agent, even with no top-level approvals, and for a glob other than "*"', () => {
      expect(checkAgentApprovals(config())).toEqual([]);
      expect(checkAgentApprovals(config({ agent: { approval_required: [] } }))).toEqual([]);
      expect(checkAgentApprovals(config({ agents: { a: { tools: { allow: ['mcp_*'] } } } }))).toEqual([]);
    });
  });

  describe('agents.memory_shared', () => {
    const principal = (id: string, extra: Record<string, unknown> = {}) => ({ id, token_sha256: [], ...extra });
    it('notes an agent-scoped memory that configured principals and the default principal share', () => {
      const f = only(
        checkSharedMemory(
          config({
            gateway: {
              auth: {
                api_tokens: [STRONG],
                principals: [
                  principal('alice', { agents: ['sup*'], tokens: [PRINCIPAL_TOKEN] }),
                  principal('bob', { agents: ['ops'] }),
                ],
              },
            },
            agents: { support: { memory_scope: 'agent' }, ops: { memory_scope: 'principal' } },
          }),
        ),
      );
      expect(f).toMatchObject({ id: 'agents.memory_shared', severity: 'info' });
      expect(f.found).toContain('agents.support.memory_scope is "agent" while principals "default" and "alice"');
      expect(f.found).not.toContain('"bob"');
      expect(f.found).not.toContain('agents.ops');
      expect(JSON.stringify(f)).not.toContain(PRINCIPAL_TOKEN);
      expect(JSON.stringify(f)).not.toContain(STRONG);
    });
    it('counts admin principals as users of every agent', () => {
      const f = only(
        checkSharedMemory(
          config({
            gateway: {
              auth: {
                principals: [
                  principal('alice', { agents: ['shared'] }),
                  principal('root', { role: 'admin', agents: [] }),
                ],
              },
            },
            agents: { shared: { memory_scope: 'agent' } },
          }),
        ),
      );
      expect(f.found).toContain('principals "alice" and "root"');
    });
    it('is silent with one principal, without the default principal when no api or admin token is set, and for principal scope', () => {
      const agents = { shared: { memory_scope: 'agent' } };
      expect(checkSharedMemory(config({ agents }))).toEqual([]);
      expect(checkSharedMemory(config({ agents, gateway: { auth: { admin_tokens: [STRONG_ADMIN] } } }))).toEqual([]);
      expect(
        checkSharedMemory(
          config({
            agents,
            gateway: { auth: { principals: [principal('alice'), principal('bob', { agents: ['other-*'] })] } },
          }),
        ),
      ).toEqual([]);
      expect(
        checkSharedMemory(
          config({
            agents: { shared: {} },
            gateway: { auth: { api_tokens: [STRONG], principals: [principal('alice'), principal('bob')] } },
          }),
        ),
      ).toEqual([]);
    });
  });

  describe('auth.admin_token_rotation', () => {
    it('notes admin principals with tokens and no rotation date, by place and id, never by token', () => {
      const f = only(
        checkAdminRotation(
          config({
            gateway: {
              auth: {
                principals: [
                  { id: 'alice', tokens: [OTHER_TOKEN] },
                  { id: 'root', role: 'admin', tokens: [PRINCIPAL_TOKEN] },
                  { id: 'ops', role: 'admin', token_sha256: ['a'.repeat(64)], tokens_rotated_at: '2020-01-01' },
                  { id: 'ci', role: 'admin', token_sha256: ['b'.repeat(64)] },
                ],
              },
            },
          }),
        ),
      );
      expect(f).toMatchObject({ id: 'auth.admin_token_rotation', severity: 'info' });
      expect(f.found).toContain(
        'gateway.auth.principals[1].tokens_rotated_at (principal "root") and ' +
          'gateway.auth.principals[3].tokens_rotated_at (principal "ci") are not set',
      );
      expect(f.found).not.toContain('alice');
      expect(f.found).not.toContain('"ops"');
      const text = JSON.stringify(f);
      for (const secret of [PRINCIPAL_TOKEN, OTHER_TOKEN, 'b'.repeat(64)]) expect(text).not.toContain(secret);
    });
    it('is silent with a rotation date (the audit has no clock to judge its age), for api principals and without tokens', () => {
      expect(checkAdminRotation(config())).toEqual([]);
      expect(
        checkAdminRotation(
          config({
            gateway: {
              auth: {
                principals: [
                  { id: 'root', role: 'admin', tokens: [PRINCIPAL_TOKEN], tokens_rotated_at: '2024-02-29' },
                  { id: 'alice', tokens: [OTHER_TOKEN] },
                  { id: 'idle', role: 'admin' },
                ],
              },
            },
          }),
        ),
      ).toEqual([]);
    });
  });

  it('auditConfig runs the three checks', () => {
    const findings = auditConfig(
      config({
        gateway: {
          auth: {
            admin_tokens: [STRONG_ADMIN],
            principals: [{ id: 'root', role: 'admin', tokens: [PRINCIPAL_TOKEN] }],
          },
        },
        agents: { support: { memory_scope: 'agent' } },
      }),
    );
    expect(ids(findings)).toEqual([
      'auth.admin_token_rotation',
      'agents.tools_without_approval',
      'agents.memory_shared',
    ]);
    for (const f of findings) expect(FINDINGS[f.id]).toBe(f.title);
  });
});

/** An in-memory tree for the data-dir check: path → entry (and a directory's children). */
function fakeProbe(
  tree: Record<string, ProbeEntry & { unreadable?: boolean }>,
  options: { posixModes?: boolean } = {},
): FileProbe & { listed: string[] } {
  const listed: string[] = [];
  return {
    posixModes: options.posixModes ?? true,
    listed,
    entry: (path) => Promise.resolve(tree[path] ?? null),
    list: (dir) => {
      listed.push(dir);
      if (tree[dir]?.unreadable) return Promise.reject(new Error('EACCES'));
      const prefix = `${dir}/`;
      return Promise.resolve(
        Object.keys(tree)
          .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/'))
          .map((p) => p.slice(prefix.length)),
      );
    },
    join: (dir, name) => `${dir}/${name}`,
  };
}

const dir = (mode: number): ProbeEntry => ({ kind: 'dir', mode });
const file = (mode: number): ProbeEntry => ({ kind: 'file', mode });

describe('the data-dir check', () => {
  it('finds nothing in a private data dir', async () => {
    const probe = fakeProbe({
      '/d': dir(0o700),
      '/d/gatehouse.db': file(0o600),
      '/d/gateway_auth': dir(0o700),
      '/d/gateway_auth/admin_token': file(0o600),
    });
    expect(await auditDataDir('/d', probe)).toEqual([]);
  });

  it('is critical for a file other users can read through open directories; the group one step milder', async () => {
    const probe = fakeProbe({
      '/d': dir(0o755),
      '/d/gateway_auth': dir(0o755),
      '/d/gateway_auth/admin_token': file(0o644),
      '/d/gatehouse.db': file(0o600),
    });
    const findings = await auditDataDir('/d', probe);
    expect(findings.map((f) => [f.id, f.severity])).toEqual([
      ['data.world_accessible', 'critical'],
      ['data.group_accessible', 'warning'],
    ]);
    expect(findings[0]!.found).toContain('gateway_auth/admin_token (0644: other users may read it)');
    expect(findings[0]!.found).toContain('the data dir itself (0755: other users may list or enter it)');
    expect(findings[0]!.found).not.toContain('gatehouse.db (');
    expect(findings[0]!.fix).toContain('chmod -R o-rwx "/d"');
  });

  it('is only a warning when other users can list or enter the data dir but read nothing', async () => {
    const probe = fakeProbe({ '/d': dir(0o701), '/d/gatehouse.db': file(0o600) });
    expect(only(await auditDataDir('/d', probe))).toMatchObject({ id: 'data.world_accessible', severity: 'warning' });
  });

  it('calls bits behind a private directory latent (info)', async () => {
    const probe = fakeProbe({ '/d': dir(0o700), '/d/logs': dir(0o755), '/d/logs/day.jsonl': file(0o644) });
    const findings = await auditDataDir('/d', probe);
    expect(findings.map((f) => [f.id, f.severity])).toEqual([
      ['data.world_accessible', 'info'],
      ['data.group_accessible', 'info'],
    ]);
    expect(findings[0]!.found).toContain('once a directory above lets other users in');
  });

  it('is critical for a directory other users may write, and a group-writable file is a warning', async () => {
    const probe = fakeProbe({ '/d': dir(0o703), '/d/gatehouse.db': file(0o620) });
    const findings = await auditDataDir('/d', probe);
    expect(findings.map((f) => [f.id, f.severity])).toEqual([
      ['data.world_accessible', 'critical'],
      ['data.group_accessible', 'info'], // the group cannot enter /d (no g+x): latent
    ]);
  });

  it('does not follow symbolic links and names at most five paths', async () => {
    const tree: Record<string, ProbeEntry> = { '/d': dir(0o755), '/d/link': { kind: 'symlink', mode: 0o777 } };
    for (let i = 0; i < 8; i++) tree[`/d/f${i}`] = file(0o604);
    const probe = fakeProbe(tree);
    const f = (await auditDataDir('/d', probe))[0]!;
    expect(f.found).toMatch(/^9 path\(s\)/);
    expect(f.found).toContain('and 4 more');
    expect(f.found).not.toContain('link');
    expect(probe.listed).toEqual(['/d']);
  });

  it('stops at the entry and depth bounds and says so', async () => {
    const wide: Record<string, ProbeEntry> = { '/d': dir(0o700) };
    for (let i = 0; i < 30; i++) wide[`/d/f${i}`] = file(0o600);
    const byEntries = only(await auditDataDir('/d', fakeProbe(wide), { maxEntries: 10, maxDepth: 6 }));
    expect(byEntries).toMatchObject({ id: 'data.scan_incomplete', severity: 'info' });
    expect(byEntries.found).toContain('after 10 entries');

    const deep: Record<string, ProbeEntry> = { '/d': dir(0o700) };
    let path = '/d';
    for (let level = 1; level <= 9; level++) deep[(path = `${path}/l${level}`)] = dir(0o700);
    const probe = fakeProbe(deep);
    expect(ids(await auditDataDir('/d', probe, { maxEntries: 100, maxDepth: 3 }))).toEqual(['data.scan_incomplete']);
    expect(probe.listed).toEqual(['/d', '/d/l1', '/d/l1/l2', '/d/l1/l2/l3']);
    expect(await auditDataDir('/d', fakeProbe(deep), { maxEntries: 100, maxDepth: 9 })).toEqual([]);
  });

  it('reports unreadable directories, a missing data dir and a platform without POSIX modes', async () => {
    const unreadable = fakeProbe({ '/d': dir(0o700), '/d/x': { ...dir(0o700), unreadable: true } });
    expect(only(await auditDataDir('/d', unreadable)).found).toContain('1 path(s) could not be read');
    expect(only(await auditDataDir('/nope', fakeProbe({})))).toMatchObject({
      id: 'data.dir_missing',
      severity: 'info',
    });
    expect(only(await auditDataDir('/d', fakeProbe({ '/d': file(0o600) }))).found).toContain('not a directory');
    const refused: FileProbe = {
      ...fakeProbe({}),
      entry: () => Promise.reject(Object.assign(new Error('no'), { code: 'EACCES' })),
    };
    expect(only(await auditDataDir('/d', refused))).toMatchObject({ id: 'data.scan_incomplete', severity: 'info' });
    expect(only(await auditDataDir('/d', fakeProbe({ '/d': dir(0o777) }, { posixModes: false })))).toMatchObject({
      id: 'data.scan_incomplete',
      severity: 'info',
    });
  });

  describe('on the real file system', () => {
    let home: string | null = null;
    afterEach(() => {
      if (home) rmSync(home, { recursive: true, force: true });
      home = null;
    });

    it('reads modes with nodeFileProbe', async () => {
      home = mkdtempSync(join(tmpdir(), 'gatehouse-audit-'));
      const data = join(home, 'data');
      mkdirSync(join(data, 'gateway_auth'), { recursive: true });
      writeFileSync(join(data, 'gateway_auth', 'admin_token'), 'x');
      symlinkSync('/etc/passwd', join(data, 'link'));
      chmodSync(data, 0o700);
      chmodSync(join(data, 'gateway_auth'), 0o700);
      chmodSync(join(data, 'gateway_auth', 'admin_token'), 0o600);
      expect(await auditDataDir(data, nodeFileProbe)).toEqual([]);
      chmodSync(data, 0o755);
      chmodSync(join(data, 'gateway_auth'), 0o755);
      chmodSync(join(data, 'gateway_auth', 'admin_token'), 0o644);
      const findings = await auditDataDir(data, nodeFileProbe);
      expect(findings[0]).toMatchObject({ id: 'data.world_accessible', severity: 'critical' });
      expect(findings[0]!.found).toContain('gateway_auth/admin_token (0644');
    });
  });
});

describe('the report', () => {
  it('sorts worst first, then by id, and counts each severity', () => {
    const make = (id: SecurityFinding['id'], severity: SecurityFinding['severity']): SecurityFinding => ({
      id,
      severity,
      title: FINDINGS[id],
      found: 'x',
      fix: 'y',
    });
    const report = reportOf([
      make('budget.missing', 'warning'),
      make('data.dir_missing', 'info'),
      make('webhook.no_secret', 'critical'),
      make('auth.token_short', 'warning'),
    ]);
    expect(ids(report.findings)).toEqual([
      'webhook.no_secret',
      'auth.token_short',
      'budget.missing',
      'data.dir_missing',
    ]);
    expect(report.summary).toEqual({ critical: 1, warning: 2, info: 1 });
    expect(hasCritical(report)).toBe(true);
    expect(hasCritical(reportOf([make('budget.missing', 'warning')]))).toBe(false);
  });

  it('never carries a configured secret', async () => {
    const secrets = {
      api: 'change-me',
      admin: 'PASSWORD1',
      webhook: 'Secret-Key',
      provider: 'sk-provider-abcdefabcdef',
      embeddings: 'emb-key-abcdefabcdef',
      storage: 'postgres://u:pg-pass-1234@db/x',
      mcpHeader: 'Bearer mcp-header-secret-9f2a',
      mcpEnv: 'mcp-env-secret-4b7e',
      mcpUrl: 'mcp-url-pass-8d1c',
    };
    const probe = fakeProbe({ '/d': dir(0o777), '/d/f': file(0o666) });
    const report = await runSelfAudit(
      config({
        data_dir: '/d',
        gateway: { host: '0.0.0.0', auth: { api_tokens: [secrets.api], admin_tokens: [secrets.admin] } },
        channels: { webhook: { enabled: true, secret: secrets.webhook } },
        provider: { type: 'openai', base_url: 'http://10.0.0.5/v1', api_key: secrets.provider },
        embeddings: { base_url: 'http://10.0.0.6/v1', api_key: secrets.embeddings },
        storage: { url: secrets.storage },
        mcp: {
          allow_private_targets: true,
          servers: {
            docs: {
              transport: 'http',
              url: `http://u:${secrets.mcpUrl}@10.0.0.7/mcp`,
              headers: { Authorization: secrets.mcpHeader },
            },
            shell: { command: 'mcp-shell', inherit_env: true, env: { TOKEN: secrets.mcpEnv } },
          },
        },
      }),
      probe,
    );
    expect(hasCritical(report)).toBe(true);
    const text = JSON.stringify(report);
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    expect(text).not.toContain('pg-pass');
  });
});
