import { afterEach, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import type { ChatCommand } from '../turns/turn-runner.js';
import { skillCommands } from './skills.commands.js';
import { createSkillsService, type SkillsService } from './skills.service.js';

const admin = { platform: 'telegram', userId: 'boss', sessionKey: 'gateway:telegram:1' };
const user = { platform: 'telegram', userId: 'someone', sessionKey: 'gateway:telegram:2' };

describeBackends('skill chat commands', (backend) => {
  let t: TestStore;
  let service: SkillsService;
  let approve: ChatCommand;
  let deny: ChatCommand;

  beforeEach(async () => {
    t = await backend.open();
    const clock = new ManualClock();
    service = createSkillsService({ store: t.store, clock, ids: createIdGenerator(clock) });
    const commands = skillCommands(service, {
      isAdminUser: (platform, userId) => platform === 'telegram' && userId === 'boss',
    });
    expect(Object.keys(commands).sort()).toEqual(['approve', 'deny']);
    approve = commands.approve!;
    deny = commands.deny!;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('refuses users who are not admin users, and changes nothing', async () => {
    const staged = await service.propose({ name: 'idea', description: 'd', instructions: 'i' });
    expect(await approve('idea', user)).toBe('Only admin users can approve skills; telegram:someone is not one.');
    expect(await deny('idea', user)).toBe('Only admin users can deny skills; telegram:someone is not one.');
    expect((await service.get(staged.id)).status).toBe('staged');
  });

  it('/approve <name> approves the staged revision and reports the retired version', async () => {
    const v1 = await service.create({ name: 'report', description: 'd', instructions: 'i' });
    const v2 = await service.propose({ name: 'report', description: 'd2', instructions: 'i2' });
    expect(await approve('report', admin)).toBe(
      `Approved skill report version 2 (${v2.id}): it is active; the version it revises (skill report version 1 (${v1.id})) is disabled.`,
    );
    expect((await service.get(v1.id)).status).toBe('disabled');
    expect(await approve('report', admin)).toBe('No staged skill named report (its latest version is active).');
  });

  it('/approve <id> and /deny <id>', async () => {
    const a = await service.propose({ name: 'a-skill', description: 'd', instructions: 'i' });
    const b = await service.propose({ name: 'b-skill', description: 'd', instructions: 'i' });
    expect(await approve(a.id, admin)).toBe(`Approved skill a-skill version 1 (${a.id}): it is active.`);
    expect(await deny(b.id, admin)).toBe(`Denied skill b-skill version 1 (${b.id}): it is disabled.`);
    expect(await deny(b.id, admin)).toBe(
      `skill b-skill version 1 (${b.id}) is disabled, not staged: there is nothing to deny.`,
    );
    expect((await service.get(b.id)).status).toBe('disabled');
  });

  it('answers usage, unknown names and ambiguous names helpfully', async () => {
    expect(await approve('', admin)).toBe('Usage: /approve <skill name or id>. There are no staged skills.');
    const staged = await service.propose({ name: 'idea', description: 'd', instructions: 'i' });
    expect(await deny('  ', admin)).toBe(`Usage: /deny <skill name or id>. Staged skills: idea (${staged.id}).`);
    expect(await approve('missing', admin)).toBe(`No skill named missing. Staged skills: idea (${staged.id}).`);
    expect(await approve('skl_missing', admin)).toContain('No skill named skl_missing.');
    const again = await service.propose({ name: 'idea', description: 'd', instructions: 'other' });
    expect(await approve('idea', admin)).toBe(
      `Several staged skills are named idea: ${again.id} (version 1), ${staged.id} (version 1). Use /approve <id>.`,
    );
  });

  it('reports an approval the status table or the name rule refuses', async () => {
    const fresh = await service.propose({ name: 'later', description: 'd', instructions: 'i' });
    await service.create({ name: 'later', description: 'd', instructions: 'i' });
    expect(await approve(fresh.id, admin)).toMatch(
      new RegExp(
        `^Could not approve skill later version 1 \\(${fresh.id}\\): an active skill named later already exists`,
      ),
    );
    expect((await service.get(fresh.id)).status).toBe('staged');
  });
});
