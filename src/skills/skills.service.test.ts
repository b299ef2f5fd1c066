import { afterEach, beforeEach, expect, it } from 'vitest';
import { ApiError } from '../http/errors.js';
import { ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import type { SkillRecord } from './skills.repo.js';
import { createSkillsService, type SkillDraft, type SkillEvent, type SkillsService } from './skills.service.js';

const draft = (overrides: Partial<SkillDraft> = {}): SkillDraft => ({
  name: 'report',
  description: 'Writes the weekly report',
  instructions: 'Gather, then write.',
  ...overrides,
});

/** The ApiError `promise` rejects with. */
async function apiError(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

describeBackends('skills service', (backend) => {
  let t: TestStore;
  let clock: ManualClock;
  let service: SkillsService;
  let events: Array<[SkillEvent, string, string]>;

  beforeEach(async () => {
    t = await backend.open();
    clock = new ManualClock();
    events = [];
    service = createSkillsService({
      store: t.store,
      clock,
      ids: createIdGenerator(clock),
      onChange: (event, skill) => events.push([event, skill.id, skill.status]),
    });
  });
  afterEach(async () => {
    await t.cleanup();
  });

  const status = async (skill: SkillRecord) => (await service.get(skill.id)).status;

  it('creates an active first version; creating an active name again publishes its next version', async () => {
    const created = await service.create(draft({ frontMatter: { metadata: { category: 'ops' } } }));
    expect(created).toMatchObject({
      name: 'report',
      status: 'active',
      version: 1,
      useCount: 0,
      lastUsed: null,
      evolvedFrom: null,
      category: 'ops',
      createdAt: clock.now() && new Date(clock.now()).toISOString(),
    });
    expect(created.id).toMatch(/^skl_/);
    // Creating the name again publishes a new version and disables the one it replaces.
    const second = await service.create(draft());
    expect(second).toMatchObject({ status: 'active', version: 2, evolvedFrom: created.id });
    expect(await service.get(created.id)).toMatchObject({ status: 'disabled' });
    await service.setStatus(second.id, 'disabled');
    const again = await service.create(draft());
    expect(again).toMatchObject({ status: 'active', version: 1, evolvedFrom: null });
  });

  it('a proposal without an active skill of its name is a staged first version', async () => {
    const proposed = await service.propose(draft({ name: 'fresh' }));
    expect(proposed).toMatchObject({ status: 'staged', version: 1, evolvedFrom: null });
    const disabled = await service.create(draft({ name: 'old' }));
    await service.setStatus(disabled.id, 'disabled');
    expect(await service.propose(draft({ name: 'old' }))).toMatchObject({ version: 1, evolvedFrom: null });
  });

  it('a proposal for an active name revises it: evolved_from, version + 1, front matter carried over', async () => {
    const v1 = await service.create(draft({ frontMatter: { license: 'MIT', metadata: { category: 'ops' } } }));
    const v2 = await service.propose(draft({ description: 'Better report' }));
    expect(v2).toMatchObject({
      status: 'staged',
      version: 2,
      evolvedFrom: v1.id,
      description: 'Better report',
      category: 'ops',
      frontMatter: { license: 'MIT', metadata: { category: 'ops' } },
    });
    expect(await status(v1)).toBe('active');
  });

  it('approving a revision activates it and disables the version it revises, in one step', async () => {
    const v1 = await service.create(draft());
    const v2 = await service.propose(draft({ instructions: 'v2' }));
    clock.advance(1000);
    const result = await service.approve(v2.id);
    const now = new Date(clock.now()).toISOString();
    expect(result.changed).toBe(true);
    expect(result.skill).toMatchObject({ id: v2.id, status: 'active', updatedAt: now });
    expect(result.retired).toMatchObject({ id: v1.id, status: 'disabled', updatedAt: now });
    expect(await status(v1)).toBe('disabled');
    expect(events.slice(-2)).toEqual([
      ['status_changed', v2.id, 'active'],
      ['status_changed', v1.id, 'disabled'],
    ]);
  });

  it('the revision of a revision counts on: v3 evolves from v2', async () => {
    await service.create(draft());
    const v2 = await service.propose(draft());
    await service.approve(v2.id);
    const v3 = await service.propose(draft());
    expect(v3).toMatchObject({ version: 3, evolvedFrom: v2.id });
    await service.approve(v3.id);
    expect((await service.named('report')).map((s) => [s.version, s.status])).toEqual([
      [3, 'active'],
      [2, 'disabled'],
      [1, 'disabled'],
    ]);
  });

  it('approving when the revised skill is already disabled and no other is active', async () => {
    const v1 = await service.create(draft());
    const v2 = await service.propose(draft());
    await service.setStatus(v1.id, 'disabled');
    const result = await service.approve(v2.id);
    expect(result.skill.status).toBe('active');
    expect(result.retired).toBeNull();
  });

  it('approval is refused while another skill of the name (not the revised one) is active; nothing changes', async () => {
    const v1 = await service.create(draft());
    const v2 = await service.propose(draft());
    await service.setStatus(v1.id, 'disabled');
    const other = await service.create(draft({ instructions: 'replacement' }));
    const error = await apiError(service.approve(v2.id));
    expect(error.status).toBe(400);
    expect(error.message).toContain('an active skill named report already exists');
    expect([await status(v1), await status(v2), await status(other)]).toEqual(['disabled', 'staged', 'active']);

    const fresh = await service.propose(draft({ name: 'later' }));
    await service.create(draft({ name: 'later' }));
    expect((await apiError(service.approve(fresh.id))).status).toBe(400);
  });

  it('of two concurrent approvals of revisions of one skill exactly one wins', async () => {
    const v1 = await service.create(draft());
    const a = await service.propose(draft({ instructions: 'a' }));
    const b = await service.propose(draft({ instructions: 'b' }));
    const results = await Promise.allSettled([service.approve(a.id), service.approve(b.id)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected');
    expect(rejected?.status === 'rejected' && (rejected.reason as ApiError).status).toBe(400);
    expect(await status(v1)).toBe('disabled');
    expect((await service.list({ status: 'active' })).map((s) => s.id)).toHaveLength(1);
  });

  it('two processes approving revisions of one skill at once: exactly one wins', async () => {
    const other = createSkillsService({ store: await t.reopen(), clock, ids: createIdGenerator(clock) });
    const v1 = await service.create(draft());
    const a = await service.propose(draft({ instructions: 'a' }));
    const b = await service.propose(draft({ instructions: 'b' }));
    const results = await Promise.allSettled([service.approve(a.id), other.approve(b.id)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const rejected = results.find((r) => r.status === 'rejected');
    expect(rejected?.status === 'rejected' && (rejected.reason as ApiError).status).toBe(400);
    expect(await status(v1)).toBe('disabled');
    expect(await service.list({ status: 'active' })).toHaveLength(1);
  });

  it('approve is only from staged; unknown ids are 404', async () => {
    const active = await service.create(draft());
    const disabled = await service.create(draft({ name: 'gone' }));
    await service.setStatus(disabled.id, 'disabled');
    for (const [id, current] of [
      [active.id, 'active'],
      [disabled.id, 'disabled'],
    ] as const) {
      const error = await apiError(service.approve(id));
      expect(error.status).toBe(400);
      expect(error.message).toBe(`only a staged skill can be approved; this skill is ${current}`);
      expect(error.details).toEqual({ status: current });
    }
    const missing = 'skl_missing';
    for (const op of [
      () => service.approve(missing),
      () => service.deny(missing),
      () => service.setStatus(missing, 'active'),
      () => service.get(missing),
      () => service.delete(missing),
    ]) {
      expect((await apiError(op())).status).toBe(404);
    }
  });

  it('follows the status table; no-ops leave the skill untouched', async () => {
    const s = await service.create(draft());
    clock.advance(1000);
    const same = await service.setStatus(s.id, 'active');
    expect(same.updatedAt).toBe(s.updatedAt);
    const off = await service.setStatus(s.id, 'disabled');
    expect(off).toMatchObject({ status: 'disabled', updatedAt: new Date(clock.now()).toISOString() });
    clock.advance(1000);
    expect((await service.setStatus(s.id, 'disabled')).updatedAt).toBe(off.updatedAt);
    expect((await service.setStatus(s.id, 'active')).status).toBe('active');

    const staged = await service.propose(draft({ name: 'idea' }));
    const error = await apiError(service.setStatus(staged.id, 'active'));
    expect(error.status).toBe(400);
    expect(error.message).toContain('approval');
    expect((await service.setStatus(staged.id, 'disabled')).status).toBe('disabled');
    expect(events.filter(([event]) => event === 'status_changed')).toHaveLength(3);
  });

  it('enabling is refused while another skill of the name is active', async () => {
    const v1 = await service.create(draft());
    const v2 = await service.propose(draft());
    await service.approve(v2.id);
    const error = await apiError(service.setStatus(v1.id, 'active'));
    expect(error.status).toBe(400);
    expect(error.details).toEqual({ name: 'report', active_skill_id: v2.id });
    await service.setStatus(v2.id, 'disabled');
    expect((await service.setStatus(v1.id, 'active')).status).toBe('active');
  });

  it('deny disables a staged proposal and nothing else', async () => {
    const v1 = await service.create(draft());
    const v2 = await service.propose(draft());
    expect((await service.deny(v2.id)).status).toBe('disabled');
    expect(await status(v1)).toBe('active');
    expect((await apiError(service.deny(v2.id))).status).toBe(400);
    expect((await apiError(service.deny(v1.id))).status).toBe(400);
  });

  it('use counts a load of the active skill and stamps last_used', async () => {
    const s = await service.create(draft());
    clock.advance(5000);
    const used = await service.use('report');
    expect(used).toMatchObject({ id: s.id, useCount: 1, lastUsed: new Date(clock.now()).toISOString() });
    expect(used?.updatedAt).toBe(s.updatedAt);
    await service.propose(draft({ name: 'idea' }));
    expect(await service.use('idea')).toBeNull();
    expect(await service.use('missing')).toBeNull();
  });

  it('deletes a skill and answers it', async () => {
    const s = await service.create(draft());
    expect((await service.delete(s.id)).id).toBe(s.id);
    expect(await service.find(s.id)).toBeNull();
    expect(events.map(([event]) => event)).toEqual(['created', 'deleted']);
  });

  it('summarises the active skills by name', async () => {
    await service.create(draft({ name: 'b-skill', description: 'B' }));
    await service.create(draft({ name: 'a-skill', description: 'A' }));
    await service.propose(draft({ name: 'c-skill', description: 'C' }));
    expect(await service.activeSummaries(10)).toEqual({
      items: [
        { name: 'a-skill', description: 'A' },
        { name: 'b-skill', description: 'B' },
      ],
      total: 2,
    });
    expect((await service.activeSummaries(1)).items).toHaveLength(1);
  });

  it('keeps the summaries until a skill changes here; another process’s change counts within 1 s where shared', async () => {
    await service.create(draft({ name: 'kept', description: 'K' }));
    expect((await service.activeSummaries(10)).total).toBe(1);
    const other = createSkillsService({ store: t.store, clock, ids: createIdGenerator(clock) });
    await other.create(draft({ name: 'elsewhere', description: 'E' }));
    // Changed by another service (another process): not seen at once.
    expect((await service.activeSummaries(10)).total).toBe(1);
    clock.advance(1_001);
    expect((await service.activeSummaries(10)).total).toBe(t.store.shared ? 2 : 1);
    // A change made here is seen at once.
    await service.create(draft({ name: 'here', description: 'H' }));
    expect((await service.activeSummaries(10)).items.map((s) => s.name)).toEqual(['elsewhere', 'here', 'kept']);
  });
});
