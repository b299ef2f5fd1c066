import { afterEach, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import type { AgentTool, ToolContext } from '../runtime/tools.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { createSkillsService, type SkillsService } from './skills.service.js';
import { skillTools, skillsSystemContext } from './skills.tools.js';

const ctx: ToolContext = { sessionKey: 'gateway:api:c1', eventId: 'evt_1', signal: new AbortController().signal };

/** The rejection message of `promise`. */
async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the tool to fail');
}

describeBackends('skill tools and system context', (backend) => {
  let t: TestStore;
  let clock: ManualClock;
  let service: SkillsService;
  let load: AgentTool;
  let propose: AgentTool;

  beforeEach(async () => {
    t = await backend.open();
    clock = new ManualClock();
    service = createSkillsService({ store: t.store, clock, ids: createIdGenerator(clock) });
    const tools = skillTools(service);
    expect(tools.map((tool) => tool.spec.name)).toEqual(['load_skill', 'propose_skill']);
    [load, propose] = tools as [AgentTool, AgentTool];
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('load_skill answers the instructions and counts the use', async () => {
    const skill = await service.create({ name: 'report', description: 'Weekly report', instructions: 'Step 1' });
    clock.advance(60_000);
    expect(await load.run({ name: 'report' }, ctx)).toEqual({
      name: 'report',
      version: 1,
      description: 'Weekly report',
      instructions: 'Step 1',
    });
    expect(await service.get(skill.id)).toMatchObject({
      useCount: 1,
      lastUsed: new Date(clock.now()).toISOString(),
    });
  });

  it('load_skill fails helpfully for a missing, staged or disabled skill and for bad arguments', async () => {
    expect(await failure(load.run({ name: 'nope' }, ctx))).toBe('no skill named nope; no skills are active');
    await service.create({ name: 'report', description: 'd', instructions: 'i' });
    expect(await failure(load.run({ name: 'nope' }, ctx))).toBe('no skill named nope; active skills: report');
    await service.propose({ name: 'idea', description: 'd', instructions: 'i' });
    expect(await failure(load.run({ name: 'idea' }, ctx))).toBe(
      'skill idea is not active: its latest version is staged (awaiting approval)',
    );
    expect(await failure(load.run({}, ctx))).toBe('name is required');
    expect(await failure(load.run({ name: 3 }, ctx))).toBe('name is required');
  });

  it('propose_skill stores a staged skill, a revision when the name is active', async () => {
    const first = await propose.run({ name: 'fresh', description: 'New', instructions: 'Do it' }, ctx);
    expect(first).toMatchObject({ name: 'fresh', status: 'staged', version: 1, evolved_from: null });
    const v1 = await service.create({ name: 'report', description: 'd', instructions: 'i' });
    const revision = await propose.run({ name: 'report', description: 'Better', instructions: 'Better i' }, ctx);
    expect(revision).toMatchObject({ name: 'report', status: 'staged', version: 2, evolved_from: v1.id });
    expect((await service.named('report')).map((s) => s.status)).toEqual(['staged', 'active']);
  });

  it('propose_skill validates like POST /skills', async () => {
    expect(await failure(propose.run({ name: 'Bad Name', description: 'd', instructions: 'i' }, ctx))).toBe(
      'name may contain only lowercase letters, digits and single hyphens, not at either end',
    );
    expect(await failure(propose.run({ name: 'ok', description: 'd', instructions: '  ' }, ctx))).toBe(
      'instructions must not be empty',
    );
    expect(await failure(propose.run({ name: 'ok' }, ctx))).toContain('description must be a string');
    expect(await service.list()).toEqual([]);
  });

  it('the system context lists active skills only, or nothing', async () => {
    const context = skillsSystemContext(service);
    expect(await context()).toBeNull();
    await service.create({ name: 'b-skill', description: 'Second\nline', instructions: 'i' });
    await service.create({ name: 'a-skill', description: 'First', instructions: 'i' });
    await service.propose({ name: 'c-skill', description: 'Staged', instructions: 'i' });
    const text = await context();
    expect(text).toContain('call the load_skill tool');
    expect(text?.split('\n').slice(1)).toEqual(['- a-skill: First', '- b-skill: Second line']);
  });
});
