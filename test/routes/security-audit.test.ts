/**
 * GET /security/audit over app.inject (ADR 0023): the self-audit of the
 * running configuration and the data dir, admin only, never a secret in the
 * answer; a live configuration change shows in the next audit.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SelfAuditReport } from '../../src/self-audit/index.js';
import { fingerprintToken } from '../../src/security/tokens.js';
import { ADMIN_TOKEN, API_TOKEN, adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';

const URL = '/api/v1/security/audit';
const PROVIDER_KEY = 'sk-provider-key-never-shown-4e1d';

describe('GET /security/audit', () => {
  describe('happy', () => {
    const t = useHarness({
      config: {
        // A paid provider that no test calls (no message is sent), without a daily budget.
        provider: {
          type: 'openai',
          base_url: 'https://llm.example.com/v1',
          api_key: PROVIDER_KEY,
          model: 'gpt-4o-mini',
        },
        channels: { webhook: { enabled: true, host: '127.0.0.1', port: 0 } },
      },
    });

    it("audits the running configuration: the harness's short tokens, the unsigned webhook, no budget", async () => {
      const res = await t.adminGet(URL);
      expect(res.statusCode, res.body).toBe(200);
      const report = res.json<SelfAuditReport>();
      expect(report.findings.map((f) => [f.id, f.severity])).toEqual([
        ['auth.token_short', 'warning'],
        ['budget.missing', 'warning'],
        ['webhook.no_secret', 'warning'],
      ]);
      expect(report.summary).toEqual({ critical: 0, warning: 3, info: 0 });
      const short = report.findings[0]!;
      expect(short.found).toContain(fingerprintToken(API_TOKEN));
      expect(short.found).toContain(fingerprintToken(ADMIN_TOKEN));
      for (const secret of [API_TOKEN, ADMIN_TOKEN, PROVIDER_KEY]) expect(res.body).not.toContain(secret);
    });

    it('is served under the /api alias too', async () => {
      const res = await t.adminGet('/api/security/audit');
      expect(res.statusCode).toBe(200);
    });

    it('reads the live configuration: a daily budget set by PATCH /config clears budget.missing', async () => {
      const patched = await t.inject({
        method: 'PATCH',
        url: '/api/v1/config',
        headers: adminHeaders,
        payload: { budget: { daily_usd: 5 } },
      });
      expect(patched.statusCode, patched.body).toBe(200);
      const report = (await t.adminGet(URL)).json<SelfAuditReport>();
      expect(report.findings.map((f) => f.id)).toEqual(['auth.token_short', 'webhook.no_secret']);
    });

    it('walks the data dir: a world-readable file under an open data dir is critical', async () => {
      const dataDir = t.config.data_dir;
      writeFileSync(join(dataDir, 'export.json'), '{}');
      chmodSync(join(dataDir, 'export.json'), 0o644);
      chmodSync(dataDir, 0o755);
      try {
        const report = (await t.adminGet(URL)).json<SelfAuditReport>();
        const world = report.findings.find((f) => f.id === 'data.world_accessible');
        expect(world).toMatchObject({ severity: 'critical' });
        expect(world!.found).toContain('export.json (0644: other users may read it)');
        expect(report.findings[0]!.id).toBe('data.world_accessible'); // critical first
        expect(report.summary.critical).toBe(1);
      } finally {
        chmodSync(dataDir, 0o700);
      }
    });
  });

  describe('agents and principals', () => {
    const ROOT_TOKEN = 'Pm4Xw8Ks2Qn6Vb0Lt3Hy7Rc1Jd5Gf9Ze';
    const t = useHarness({
      config: {
        agents: { support: { memory_scope: 'agent' }, ops: { approval_required: ['memory_save'] } },
        gateway: { auth: { principals: [{ id: 'root', role: 'admin', tokens: [ROOT_TOKEN] }] } },
      },
    });

    it('reports an unapproved "*" agent, a shared agent memory and an admin without a rotation date', async () => {
      const res = await t.adminGet(URL);
      expect(res.statusCode, res.body).toBe(200);
      const report = res.json<SelfAuditReport>();
      const byId = new Map(report.findings.map((f) => [f.id, f]));
      expect(byId.get('agents.tools_without_approval')).toMatchObject({ severity: 'warning' });
      expect(byId.get('agents.tools_without_approval')!.found).toContain('agents.support.tools.allow');
      expect(byId.get('agents.tools_without_approval')!.found).not.toContain('agents.ops');
      expect(byId.get('agents.memory_shared')).toMatchObject({ severity: 'info' });
      expect(byId.get('agents.memory_shared')!.found).toContain('principals "default" and "root"');
      expect(byId.get('auth.admin_token_rotation')).toMatchObject({ severity: 'info' });
      expect(byId.get('auth.admin_token_rotation')!.found).toContain(
        'gateway.auth.principals[0].tokens_rotated_at (principal "root")',
      );
      for (const secret of [API_TOKEN, ADMIN_TOKEN, ROOT_TOKEN]) expect(res.body).not.toContain(secret);
    });
  });

  describe('security', () => {
    const t = useHarness({ scope: 'all' });

    it('is admin only: an api token is 403, no token 401', async () => {
      const api = await t.inject({ method: 'GET', url: URL, headers: apiHeaders });
      expect(api.statusCode).toBe(403);
      expect(api.json<{ error: { code: string } }>().error.code).toBe('FORBIDDEN');
      const none = await t.inject({ method: 'GET', url: URL });
      expect(none.statusCode).toBe(401);
      const admin = await t.inject({ method: 'GET', url: URL, headers: adminHeaders });
      expect(admin.statusCode).toBe(200);
    });

    it('checks the Host on this admin route', async () => {
      const res = await t.inject({ method: 'GET', url: URL, headers: { ...adminHeaders, host: 'evil.example' } });
      expect(res.statusCode).toBe(403);
    });
  });
});
