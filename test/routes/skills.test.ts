/**
 * Skills over HTTP and through the agent (spec: Skills, Skill status;
 * DECISIONS §3, §4, §9, §10): the routes on a real SQLite gateway, the tools
 * and the system context against the fake OpenAI server, and the `/approve`
 * and `/deny` chat commands through real turns.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway.js';
import { systemClock } from '../../src/lib/clock.js';
import { createIdGenerator } from '../../src/lib/ids.js';
import { createSkillsService, type SkillsService } from '../../src/skills/index.js';
import { chatRequests, contentText, type FakeChatBody } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { ISO_MS } from './builders.js';

/** Skill as the API answers it (single reads add `instructions` and `skill_md`). */
interface SkillView {
  id: string;
  name: string;
  description: string;
  status: 'active' | 'staged' | 'disabled';
  version: number;
  last_used: string | null;
  use_count: number;
  evolved_from: string | null;
  category: string | null;
  created_at: string;
  updated_at: string;
  instructions?: string;
  skill_md?: string;
}
interface ErrorBody {
  error: { code: string; message: string; details: unknown; request_id: string };
}
interface Waited {
  status: string;
  response: string | null;
  message: { tool_calls: Array<{ name: string; arguments: string; result?: unknown }> };
}

const services = new WeakMap<Gateway, SkillsService>();

/** A second skills service on the harness's store: the only way to stage a skill without the agent. */
function skillsService(h: Harness): SkillsService {
  let service = services.get(h.gateway);
  if (!service) {
    service = createSkillsService({
      store: h.internals.store,
      clock: systemClock,
      ids: createIdGenerator(systemClock),
    });
    services.set(h.gateway, service);
  }
  return service;
}

/** Config that makes `users` admin users (they may /approve and /deny in chat). */
const adminUsers = (users: string[]) => ({ config: { gateway: { auth: { admin_users: users } } } });

const SKILL_MD = [
  '---',
  'name: deploy-check',
  'description: Checks a deployment before release.',
  'license: MIT',
  'metadata:',
  '  category: ops',
  '  version: "2.1"',
  '---',
  '',
  '# Deploy check',
  '',
  '1. Run the smoke tests.',
  '',
].join('\n');

describe('skills API', () => {
  const app = useHarness();

  const admin = (method: InjectOptions['method'], url: string, payload?: unknown) =>
    app.inject({
      method,
      url,
      headers: adminHeaders,
      ...(payload !== undefined ? { payload: payload as object } : {}),
    });
  const get = (url: string) => app.inject({ method: 'GET', url, headers: apiHeaders });
  const create = async (body: Record<string, unknown>): Promise<SkillView> => {
    const res = await admin('POST', '/api/v1/skills', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<SkillView>();
  };
  const fields = (name = 'my-skill', extra: Record<string, unknown> = {}) => ({
    name,
    description: `Does ${name}`,
    instructions: `Steps of ${name}`,
    ...extra,
  });
  const read = async (id: string): Promise<SkillView> => {
    const res = await get(`/api/v1/skills/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<SkillView>();
  };
  /** A staged revision of the active skill `name` (as the agent would propose it). */
  const stage = async (name: string, extra: Partial<{ description: string; instructions: string }> = {}) => {
    const skill = await skillsService(app).propose({
      name,
      description: extra.description ?? `Revised ${name}`,
      instructions: extra.instructions ?? `Revised steps of ${name}`,
    });
    return skill.id;
  };
  const expectBadRequest = (res: LightMyRequestResponse, message?: string | RegExp): ErrorBody => {
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json<ErrorBody>();
    expect(body.error.code).toBe('BAD_REQUEST');
    if (typeof message === 'string') expect(body.error.message).toBe(message);
    else if (message) expect(body.error.message).toMatch(message);
    return body;
  };

  describe('happy paths', () => {
    it('POST /skills with fields answers 201 with an active first version', async () => {
      const skill = await create(fields('my-skill', { category: 'ops' }));
      expect(skill).toMatchObject({
        name: 'my-skill',
        description: 'Does my-skill',
        status: 'active',
        version: 1,
        last_used: null,
        use_count: 0,
        evolved_from: null,
        category: 'ops',
        instructions: 'Steps of my-skill',
      });
      expect(skill.id).toMatch(/^skl_[0-9a-z]{26}$/);
      expect(skill.created_at).toMatch(ISO_MS);
      expect(skill.updated_at).toBe(skill.created_at);
      expect(skill.skill_md).toBe(
        '---\nname: my-skill\ndescription: Does my-skill\nmetadata:\n  category: ops\n---\n\nSteps of my-skill\n',
      );
    });

    it('POST /skills with skill_md parses the document and keeps its front matter', async () => {
      const skill = await create({ skill_md: SKILL_MD });
      expect(skill).toMatchObject({
        name: 'deploy-check',
        description: 'Checks a deployment before release.',
        status: 'active',
        version: 1,
        category: 'ops',
        instructions: '# Deploy check\n\n1. Run the smoke tests.',
      });
      const again = await read(skill.id);
      expect(again.skill_md).toBe(
        [
          '---',
          'name: deploy-check',
          'description: Checks a deployment before release.',
          'license: MIT',
          'metadata:',
          '  category: ops',
          '  version: "2.1"',
          '---',
          '',
          '# Deploy check',
          '',
          '1. Run the smoke tests.',
          '',
        ].join('\n'),
      );
    });

    it('GET /skills lists without instructions and filters by status and category', async () => {
      const ops = await create({ skill_md: SKILL_MD });
      const plain = await create(fields('plain'));
      const stagedId = await stage('plain');
      const list = async (query = '') => {
        const res = await get(`/api/v1/skills${query}`);
        expect(res.statusCode, res.body).toBe(200);
        return res.json<{ items: SkillView[] }>().items;
      };
      const all = await list();
      expect(all.map((s) => s.id)).toEqual([ops.id, stagedId, plain.id]);
      for (const item of all) {
        expect(item).not.toHaveProperty('instructions');
        expect(item).not.toHaveProperty('skill_md');
      }
      expect((await list('?status=active')).map((s) => s.id)).toEqual([ops.id, plain.id]);
      expect((await list('?status=staged')).map((s) => s.id)).toEqual([stagedId]);
      expect(await list('?status=disabled')).toEqual([]);
      expect((await list('?category=ops')).map((s) => s.id)).toEqual([ops.id]);
      expect(await list('?category=nothing')).toEqual([]);
      expect((await list('?status=staged&category=ops')).map((s) => s.id)).toEqual([]);
      // The alias prefix serves the same handler.
      const alias = await app.inject({ method: 'GET', url: '/api/skills', headers: apiHeaders });
      expect(alias.json<{ items: SkillView[] }>().items).toHaveLength(3);
    });

    it('GET /skills/{id} answers the skill with instructions and skill_md', async () => {
      const skill = await create(fields());
      const res = await get(`/api/v1/skills/${skill.id}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(skill);
    });

    it('DELETE /skills/{id} answers {id, deleted: true}; the skill is gone', async () => {
      const skill = await create(fields());
      const res = await admin('DELETE', `/api/v1/skills/${skill.id}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ id: skill.id, deleted: true });
      expect((await get(`/api/v1/skills/${skill.id}`)).statusCode).toBe(404);
      expect((await admin('DELETE', `/api/v1/skills/${skill.id}`)).statusCode).toBe(404);
      // The name is free again.
      await create(fields());
    });
  });

  describe('the status table', () => {
    it('staged → approve → active; the skill it revises becomes disabled', async () => {
      const v1 = await create(fields());
      const v2 = await stage('my-skill');
      const res = await admin('POST', `/api/v1/skills/${v2}/approve`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<SkillView>()).toMatchObject({
        id: v2,
        status: 'active',
        version: 2,
        evolved_from: v1.id,
        instructions: 'Revised steps of my-skill',
      });
      expect((await read(v1.id)).status).toBe('disabled');
    });

    it('staged → approve without a revised skill → active', async () => {
      const id = await stage('brand-new');
      const res = await admin('POST', `/api/v1/skills/${id}/approve`);
      expect(res.statusCode).toBe(200);
      expect(res.json<SkillView>()).toMatchObject({ status: 'active', version: 1, evolved_from: null });
    });

    it('staged → status update active is 400 (only approval activates a staged skill); so is enable', async () => {
      const id = await stage('brand-new');
      const put = await admin('PUT', `/api/v1/skills/${id}/status`, { status: 'active' });
      const body = expectBadRequest(put, 'a staged skill becomes active only by approval (POST /skills/{id}/approve)');
      expect(body.error.details).toEqual({ status: 'staged' });
      expectBadRequest(await admin('POST', `/api/v1/skills/${id}/enable`), /only by approval/);
      expect((await read(id)).status).toBe('staged');
    });

    it.each([
      ['PUT status=disabled', 'put'],
      ['POST /disable', 'disable'],
    ] as const)('any → disabled (%s): from staged, from active, and disabled stays disabled', async (_label, how) => {
      const disable = (id: string) =>
        how === 'put'
          ? admin('PUT', `/api/v1/skills/${id}/status`, { status: 'disabled' })
          : admin('POST', `/api/v1/skills/${id}/disable`);
      const active = await create(fields());
      const staged = await stage('other');
      for (const id of [active.id, staged]) {
        const res = await disable(id);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json<SkillView>()).toMatchObject({ id, status: 'disabled' });
      }
      const before = await read(active.id);
      const again = await disable(active.id);
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual(before);
    });

    it.each([
      ['PUT status=active', 'put'],
      ['POST /enable', 'enable'],
    ] as const)('disabled → active (%s); active → active is a no-op 200', async (_label, how) => {
      const enable = (id: string) =>
        how === 'put'
          ? admin('PUT', `/api/v1/skills/${id}/status`, { status: 'active' })
          : admin('POST', `/api/v1/skills/${id}/enable`);
      const skill = await create(fields());
      expect((await admin('POST', `/api/v1/skills/${skill.id}/disable`)).statusCode).toBe(200);
      const res = await enable(skill.id);
      expect(res.statusCode, res.body).toBe(200);
      const enabled = res.json<SkillView>();
      expect(enabled.status).toBe('active');
      const noop = await enable(skill.id);
      expect(noop.statusCode).toBe(200);
      expect(noop.json()).toEqual(enabled);
    });

    it('approve from active or disabled is 400', async () => {
      const active = await create(fields());
      const disabled = await create(fields('gone'));
      await admin('POST', `/api/v1/skills/${disabled.id}/disable`);
      const a = expectBadRequest(
        await admin('POST', `/api/v1/skills/${active.id}/approve`),
        'only a staged skill can be approved; this skill is active',
      );
      expect(a.error.details).toEqual({ status: 'active' });
      expectBadRequest(
        await admin('POST', `/api/v1/skills/${disabled.id}/approve`),
        'only a staged skill can be approved; this skill is disabled',
      );
    });

    it('enabling a skill while another of its name is active is 400', async () => {
      const v1 = await create(fields());
      const v2 = await stage('my-skill');
      await admin('POST', `/api/v1/skills/${v2}/approve`);
      const body = expectBadRequest(
        await admin('POST', `/api/v1/skills/${v1.id}/enable`),
        /^an active skill named my-skill already exists/,
      );
      expect(body.error.details).toEqual({ name: 'my-skill', active_skill_id: v2 });
      expect((await read(v1.id)).status).toBe('disabled');
    });

    it('approving is 400 while a skill of the name other than the revised one is active', async () => {
      const v1 = await create(fields());
      const v2 = await stage('my-skill');
      await admin('POST', `/api/v1/skills/${v1.id}/disable`);
      const replacement = await create(fields());
      expectBadRequest(await admin('POST', `/api/v1/skills/${v2}/approve`), /already exists/);
      expect([(await read(v2)).status, (await read(replacement.id)).status]).toEqual(['staged', 'active']);
    });
  });

  describe('errors', () => {
    it('creating a name that is active publishes its next version and disables the old one', async () => {
      const first = await create(fields());
      const res = await admin('POST', '/api/v1/skills', fields());
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ name: 'my-skill', status: 'active', version: 2, evolved_from: first.id });
      const old = await app.inject({ method: 'GET', url: `/api/v1/skills/${first.id}`, headers: apiHeaders });
      expect(old.json()).toMatchObject({ status: 'disabled' });
      const third = await admin('POST', '/api/v1/skills', { skill_md: SKILL_MD.replace('deploy-check', 'my-skill') });
      expect(third.statusCode).toBe(201);
      expect(third.json()).toMatchObject({ version: 3, status: 'active' });
    });

    it('invalid fields are 400 with every problem listed', async () => {
      const missing = expectBadRequest(await admin('POST', '/api/v1/skills', {}));
      expect(missing.error.details).toEqual([
        { path: 'body.name', message: 'name is required (or give skill_md)' },
        { path: 'body.description', message: 'description is required (or give skill_md)' },
        { path: 'body.instructions', message: 'instructions is required (or give skill_md)' },
      ]);
      const bad = expectBadRequest(
        await admin('POST', '/api/v1/skills', {
          name: 'Bad_Name',
          description: 'x'.repeat(1025),
          instructions: '   ',
        }),
      );
      expect(bad.error.details).toEqual([
        {
          path: 'body.name',
          message: 'name may contain only lowercase letters, digits and single hyphens, not at either end',
        },
        { path: 'body.description', message: 'description must be at most 1024 characters' },
        { path: 'body.instructions', message: 'instructions must not be empty' },
      ]);
      const long = expectBadRequest(await admin('POST', '/api/v1/skills', fields('a'.repeat(65))));
      expect(long.error.details).toEqual([{ path: 'body.name', message: 'name must be at most 64 characters' }]);
      const both = expectBadRequest(await admin('POST', '/api/v1/skills', { ...fields(), skill_md: SKILL_MD }));
      expect((both.error.details as Array<{ path: string }>).map((d) => d.path)).toEqual([
        'body.name',
        'body.description',
        'body.instructions',
      ]);
      const array = await app.inject({
        method: 'POST',
        url: '/api/v1/skills',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        payload: '[]',
      });
      expect(array.statusCode).toBe(400);
      expect(await skillsService(app).list()).toEqual([]);
    });

    it.each<[string, string, Array<{ path: string; message?: string | RegExp }>]>([
      ['no front matter', '# Just markdown\n', [{ path: 'body.skill_md', message: /must start with a "---" line/ }]],
      [
        'an unclosed front matter',
        '---\nname: a\ndescription: b\n',
        [{ path: 'body.skill_md', message: /not closed/ }],
      ],
      ['invalid YAML', '---\nname: [oops\ndescription: b\n---\nbody\n', [{ path: 'body.skill_md.front_matter' }]],
      [
        'a front matter that is not a mapping',
        '---\n- a\n---\nbody\n',
        [{ path: 'body.skill_md.front_matter', message: /must be a YAML mapping/ }],
      ],
      [
        'missing name and description',
        '---\nlicense: MIT\n---\nbody\n',
        [
          { path: 'body.skill_md.name', message: 'name is required' },
          { path: 'body.skill_md.description', message: 'description is required' },
        ],
      ],
      [
        'a bad name',
        '---\nname: Not-OK\ndescription: b\n---\nbody\n',
        [{ path: 'body.skill_md.name', message: /lowercase/ }],
      ],
      [
        'an over-long description',
        `---\nname: ok\ndescription: ${'d'.repeat(1025)}\n---\nbody\n`,
        [{ path: 'body.skill_md.description', message: 'description must be at most 1024 characters' }],
      ],
      [
        'an empty body',
        '---\nname: ok\ndescription: b\n---\n\n',
        [{ path: 'body.skill_md.body', message: 'the Markdown body (the instructions) must not be empty' }],
      ],
      [
        'metadata that is not a string map',
        '---\nname: ok\ndescription: b\nmetadata: [1]\n---\nbody\n',
        [{ path: 'body.skill_md.metadata', message: 'metadata must be a mapping of strings' }],
      ],
    ])('skill_md with %s is 400 with details', async (_label, skillMd, expected) => {
      const body = expectBadRequest(await admin('POST', '/api/v1/skills', { skill_md: skillMd }), 'invalid SKILL.md');
      const details = body.error.details as Array<{ path: string; message: string }>;
      expect(details).toHaveLength(expected.length);
      expected.forEach((want, i) => {
        expect(details[i]?.path).toBe(want.path);
        if (typeof want.message === 'string') expect(details[i]?.message).toBe(want.message);
        else if (want.message) expect(details[i]?.message).toMatch(want.message);
      });
      expect(await skillsService(app).list()).toEqual([]);
    });

    it('skill_md that is not a string is 400', async () => {
      const body = expectBadRequest(await admin('POST', '/api/v1/skills', { skill_md: 42 }));
      expect(body.error.details).toEqual([{ path: 'body.skill_md', message: 'skill_md must be a string' }]);
    });

    it('an invalid status filter is 400; so is an empty category', async () => {
      const res = expectBadRequest(await get('/api/v1/skills?status=archived'));
      expect(res.error.details).toEqual([
        { path: 'query.status', message: 'status must be one of active, staged, disabled' },
      ]);
      expectBadRequest(await get('/api/v1/skills?category='));
    });

    it('a status update to anything but active or disabled is 400', async () => {
      const skill = await create(fields());
      for (const payload of [{ status: 'staged' }, { status: 'bogus' }, {}, { status: 1 }]) {
        const body = expectBadRequest(await admin('PUT', `/api/v1/skills/${skill.id}/status`, payload));
        expect(body.error.details).toEqual([{ path: 'body.status', message: 'status must be "active" or "disabled"' }]);
      }
      expect((await read(skill.id)).status).toBe('active');
    });

    it('an unknown id is 404 on every route that takes one', async () => {
      const missing = 'skl_00000000000000000000000000';
      const responses = [
        await get(`/api/v1/skills/${missing}`),
        await admin('DELETE', `/api/v1/skills/${missing}`),
        await admin('PUT', `/api/v1/skills/${missing}/status`, { status: 'disabled' }),
        await admin('POST', `/api/v1/skills/${missing}/approve`),
        await admin('POST', `/api/v1/skills/${missing}/enable`),
        await admin('POST', `/api/v1/skills/${missing}/disable`),
      ];
      for (const res of responses) {
        expect(res.statusCode, res.body).toBe(404);
        expect(res.json<ErrorBody>().error).toMatchObject({ code: 'NOT_FOUND', message: 'skill not found' });
      }
    });
  });

  describe('security', () => {
    const writes = (id: string): Array<[InjectOptions['method'], string, unknown]> => [
      ['POST', '/api/v1/skills', fields('another')],
      ['DELETE', `/api/v1/skills/${id}`, undefined],
      ['PUT', `/api/v1/skills/${id}/status`, { status: 'disabled' }],
      ['POST', `/api/v1/skills/${id}/approve`, undefined],
      ['POST', `/api/v1/skills/${id}/enable`, undefined],
      ['POST', `/api/v1/skills/${id}/disable`, undefined],
    ];

    it('every write needs the admin token: an api token is 403, none is 401, ?token= is not read', async () => {
      const id = await stage('my-skill');
      for (const [method, url, payload] of writes(id)) {
        const body = payload !== undefined ? { payload: payload as object } : {};
        const withApi = await app.inject({ method, url, headers: apiHeaders, ...body });
        expect(withApi.statusCode, `${method} ${url}`).toBe(403);
        expect(withApi.json<ErrorBody>().error.code).toBe('FORBIDDEN');
        const without = await app.inject({ method, url, ...body });
        expect(without.statusCode, `${method} ${url}`).toBe(401);
        const viaQuery = await app.inject({ method, url: `${url}?token=${ADMIN_TOKEN}`, ...body });
        expect(viaQuery.statusCode, `${method} ${url}`).toBe(401);
      }
      expect((await read(id)).status).toBe('staged');
      expect(await skillsService(app).list()).toHaveLength(1);
    });

    it('reads take the api token and need one', async () => {
      const skill = await create(fields());
      for (const url of ['/api/v1/skills', `/api/v1/skills/${skill.id}`]) {
        expect((await get(url)).statusCode).toBe(200);
        expect((await app.inject({ method: 'GET', url })).statusCode).toBe(401);
      }
    });

    it('the OpenAPI document describes the skills routes and stays valid', async () => {
      const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: apiHeaders });
      expect(res.statusCode).toBe(200);
      const doc = res.json<{ paths: Record<string, Record<string, { 'x-permission'?: string }>> }>();
      expect(doc.paths['/api/v1/skills']?.post?.['x-permission']).toBe('admin');
      expect(doc.paths['/api/v1/skills/{skill_id}/status']?.put?.['x-permission']).toBe('admin');
      const result = await new Validator().validate(doc);
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
    });

    it('every skills route declares its permission', () => {
      const skillRoutesSeen = app.internals.routes.filter((route) => route.path.startsWith('/skills'));
      expect(skillRoutesSeen.map((route) => `${route.method} ${route.path} ${route.permission}`).sort()).toEqual(
        [
          'DELETE /skills/:skill_id admin',
          'GET /skills api',
          'GET /skills/:skill_id api',
          'POST /skills admin',
          'POST /skills/:skill_id/approve admin',
          'POST /skills/:skill_id/disable admin',
          'POST /skills/:skill_id/enable admin',
          'PUT /skills/:skill_id/status admin',
        ].sort(),
      );
    });
  });
});

describe('skills and the agent', () => {
  // Every model answer is scripted by its test; chat commands never reach the model.
  const rig = useHarness({ fake: true, autoOpen: false });

  const send = async (a: Harness, text: string, userId = 'u1'): Promise<Waited> => {
    const res = await a.inject({
      method: 'POST',
      url: '/api/v1/message',
      headers: apiHeaders,
      payload: { platform: 'api', user_id: userId, chat_id: 'c1', text, wait: true },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Waited>();
  };
  const systemText = (body: FakeChatBody): string => {
    const first = body.messages?.[0];
    return first?.role === 'system' && typeof first.content === 'string' ? first.content : '';
  };
  const skill = async (a: Harness, id: string): Promise<SkillView> => {
    const res = await a.inject({ method: 'GET', url: `/api/v1/skills/${id}`, headers: apiHeaders });
    expect(res.statusCode).toBe(200);
    return res.json<SkillView>();
  };

  it('propose → staged revision → approve → old disabled → listed in the system message → load_skill counts', async () => {
    const app = await rig.open();
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/skills',
      headers: adminHeaders,
      payload: { name: 'my-skill', description: 'Original description', instructions: 'Original steps' },
    });
    expect(created.statusCode).toBe(201);
    const v1 = created.json<SkillView>();

    // Turn 1: the model proposes a revision.
    rig.fake.enqueue(
      {
        tool_calls: [
          {
            name: 'propose_skill',
            arguments: { name: 'my-skill', description: 'Improved description', instructions: 'Improved steps' },
          },
        ],
      },
      { content: 'I proposed an improvement.' },
    );
    const first = await send(app, 'remember a better way');
    expect(first.status).toBe('completed');
    expect(first.message.tool_calls).toHaveLength(1);
    expect(first.message.tool_calls[0]).toMatchObject({
      name: 'propose_skill',
      result: { name: 'my-skill', status: 'staged', version: 2, evolved_from: v1.id },
    });
    const turn1 = chatRequests(rig.fake);
    expect(turn1).toHaveLength(2);
    expect(systemText(turn1[0]!)).toContain('- my-skill: Original description');
    expect(turn1[0]!.tools?.map((t) => t.function.name)).toEqual(
      expect.arrayContaining(['load_skill', 'propose_skill']),
    );

    const stagedRes = await app.inject({ method: 'GET', url: '/api/v1/skills?status=staged', headers: apiHeaders });
    const staged = stagedRes.json<{ items: SkillView[] }>().items;
    expect(staged).toHaveLength(1);
    expect(staged[0]).toMatchObject({ name: 'my-skill', version: 2, evolved_from: v1.id, status: 'staged' });
    const v2 = staged[0]!.id;

    // The administrator approves; the old version is disabled.
    const approved = await app.inject({ method: 'POST', url: `/api/v1/skills/${v2}/approve`, headers: adminHeaders });
    expect(approved.statusCode).toBe(200);
    expect(approved.json<SkillView>().status).toBe('active');
    expect((await skill(app, v1.id)).status).toBe('disabled');

    // Turn 2: the system message lists the new version; the model loads it.
    rig.fake.enqueue({ tool_calls: [{ name: 'load_skill', arguments: { name: 'my-skill' } }] }, { content: 'Done.' });
    const second = await send(app, 'do the thing');
    expect(second.status).toBe('completed');
    expect(second.message.tool_calls[0]).toMatchObject({
      name: 'load_skill',
      result: { name: 'my-skill', version: 2, instructions: 'Improved steps' },
    });
    const turn2 = chatRequests(rig.fake).slice(2);
    expect(turn2).toHaveLength(2);
    const system = systemText(turn2[0]!);
    expect(system).toContain('load_skill');
    expect(system).toContain('- my-skill: Improved description');
    expect(system).not.toContain('Original description');
    const toolMessage = turn2[1]!.messages?.filter((m) => m.role === 'tool').at(-1);
    expect(contentText(toolMessage?.content)).toContain('Improved steps');

    const used = await skill(app, v2);
    expect(used.use_count).toBe(1);
    expect(used.last_used).toMatch(ISO_MS);
    expect((await skill(app, v1.id)).use_count).toBe(0);
  });

  it('a model loading a skill that is not active gets an error result, and nothing is counted', async () => {
    const app = await rig.open();
    const id = (await skillsService(app).propose({ name: 'idea', description: 'd', instructions: 'i' })).id;
    rig.fake.enqueue({ tool_calls: [{ name: 'load_skill', arguments: { name: 'idea' } }] }, { content: 'ok' });
    const waited = await send(app, 'use idea');
    expect(waited.message.tool_calls[0]?.result).toEqual({
      error: 'skill idea is not active: its latest version is staged (awaiting approval)',
    });
    // No active skills: nothing is added to the system message.
    expect(chatRequests(rig.fake).every((body) => !systemText(body).includes('Skills:'))).toBe(true);
    expect((await skill(app, id)).use_count).toBe(0);
  });

  it('/approve from an admin user approves the staged skill; from another user it is refused', async () => {
    const app = await rig.open(adminUsers(['api:boss']));
    const v1 = await skillsService(app).create({ name: 'my-skill', description: 'd', instructions: 'v1' });
    const v2 = await skillsService(app).propose({ name: 'my-skill', description: 'd', instructions: 'v2' });

    // Loopback requests skip the identity check, but that does not make the sender an admin user.
    const refused = await send(app, '/approve my-skill', 'u1');
    expect(refused.status).toBe('completed');
    expect(refused.response).toBe('Only admin users can approve skills; api:u1 is not one.');
    expect((await skill(app, v2.id)).status).toBe('staged');

    const approved = await send(app, '/approve my-skill', 'boss');
    expect(approved.status).toBe('completed');
    expect(approved.response).toBe(
      `Approved skill my-skill version 2 (${v2.id}): it is active; the version it revises (skill my-skill version 1 (${v1.id})) is disabled.`,
    );
    expect((await skill(app, v2.id)).status).toBe('active');
    expect((await skill(app, v1.id)).status).toBe('disabled');
    // Commands do not call the model.
    expect(chatRequests(rig.fake)).toHaveLength(0);
  });

  it('/deny from an admin user disables the staged skill; unknown names get a helpful reply', async () => {
    const app = await rig.open(adminUsers(['boss']));
    const staged = await skillsService(app).propose({ name: 'idea', description: 'd', instructions: 'i' });
    expect((await send(app, '/deny idea', 'u1')).response).toBe('Only admin users can deny skills; api:u1 is not one.');
    expect((await send(app, '/approve nothing', 'boss')).response).toBe(
      `No skill named nothing. Staged skills: idea (${staged.id}).`,
    );
    expect((await send(app, '/deny idea', 'boss')).response).toBe(
      `Denied skill idea version 1 (${staged.id}): it is disabled.`,
    );
    expect((await skill(app, staged.id)).status).toBe('disabled');
  });
});
