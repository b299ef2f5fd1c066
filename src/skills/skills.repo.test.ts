import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import {
  activeSkillNamed,
  activeSkillSummaries,
  countActiveSkills,
  countSkillsUsedSince,
  deleteSkill,
  getSkill,
  insertSkill,
  isUniqueViolation,
  listSkills,
  recordSkillUse,
  skillsNamed,
  updateSkillStatus,
  type NewSkill,
} from './skills.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const at = (seconds: number): string => new Date(BASE + seconds * 1000).toISOString();

let counter = 0;
/** A new skill row; ids sort in creation order. */
function skill(overrides: Partial<NewSkill> = {}): NewSkill {
  counter += 1;
  return {
    id: `skl_${String(counter).padStart(6, '0')}`,
    name: 'report',
    description: 'Writes the weekly report',
    instructions: '1. Gather\n2. Write',
    frontMatter: {},
    category: null,
    status: 'active',
    version: 1,
    evolvedFrom: null,
    createdAt: at(0),
    ...overrides,
  };
}

/** The rejection of `promise`. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describeBackends('skills repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('stores a skill and reads it back, front matter included', async () => {
    const input = skill({ frontMatter: { license: 'MIT', metadata: { category: 'ops' } }, category: 'ops' });
    const stored = await insertSkill(db, input);
    const expected = { ...input, useCount: 0, lastUsed: null, updatedAt: at(0) };
    expect(stored).toEqual(expected);
    expect(await getSkill(db, input.id)).toEqual(expected);
    expect(await getSkill(db, 'skl_missing')).toBeNull();
  });

  it('the database allows one active skill per name, any number staged or disabled', async () => {
    await insertSkill(db, skill());
    const error = await rejection(insertSkill(db, skill()));
    expect(isUniqueViolation(error)).toBe(true);
    await insertSkill(db, skill({ status: 'staged', version: 2 }));
    await insertSkill(db, skill({ status: 'staged', version: 2 }));
    await insertSkill(db, skill({ status: 'disabled' }));
    await insertSkill(db, skill({ name: 'other' }));
    expect(await countActiveSkills(db)).toBe(2);
  });

  it('a duplicate id is a unique violation; an unknown status is refused by the table', async () => {
    const first = skill();
    await insertSkill(db, first);
    expect(isUniqueViolation(await rejection(insertSkill(db, { ...first, status: 'disabled' })))).toBe(true);
    const bogus = await rejection(insertSkill(db, skill({ name: 'x', status: 'bogus' as 'active' })));
    expect(isUniqueViolation(bogus)).toBe(false);
  });

  it('lists by name, newest version first, filtered by status and category', async () => {
    const a1 = await insertSkill(db, skill({ name: 'alpha', status: 'disabled' }));
    const a2 = await insertSkill(db, skill({ name: 'alpha', version: 2, category: 'ops' }));
    const b1 = await insertSkill(db, skill({ name: 'beta', status: 'staged', category: 'ops' }));
    const z1 = await insertSkill(db, skill({ name: 'zeta' }));
    const ids = (list: Array<{ id: string }>) => list.map((s) => s.id);
    expect(ids(await listSkills(db))).toEqual([a2.id, a1.id, b1.id, z1.id]);
    expect(ids(await listSkills(db, { status: 'active' }))).toEqual([a2.id, z1.id]);
    expect(ids(await listSkills(db, { category: 'ops' }))).toEqual([a2.id, b1.id]);
    expect(ids(await listSkills(db, { status: 'staged', category: 'ops' }))).toEqual([b1.id]);
    expect(ids(await listSkills(db, { category: 'none' }))).toEqual([]);
    expect(ids(await skillsNamed(db, 'alpha'))).toEqual([a2.id, a1.id]);
    expect((await activeSkillNamed(db, 'alpha'))?.id).toBe(a2.id);
    expect(await activeSkillNamed(db, 'beta')).toBeNull();
    expect(await activeSkillSummaries(db, 10)).toEqual([
      { name: 'alpha', description: 'Writes the weekly report' },
      { name: 'zeta', description: 'Writes the weekly report' },
    ]);
    expect(await activeSkillSummaries(db, 1)).toHaveLength(1);
  });

  it('changes status only from the expected status', async () => {
    const s = await insertSkill(db, skill({ status: 'staged' }));
    expect(await updateSkillStatus(db, s.id, { from: 'active', to: 'disabled', now: at(5) })).toBeNull();
    const updated = await updateSkillStatus(db, s.id, { from: 'staged', to: 'active', now: at(5) });
    expect(updated).toMatchObject({ id: s.id, status: 'active', updatedAt: at(5), createdAt: at(0) });
    expect(await updateSkillStatus(db, 'skl_missing', { from: 'staged', to: 'active', now: at(6) })).toBeNull();
  });

  it('activating a second skill of an active name is a unique violation', async () => {
    await insertSkill(db, skill());
    const staged = await insertSkill(db, skill({ status: 'staged', version: 2 }));
    const error = await rejection(updateSkillStatus(db, staged.id, { from: 'staged', to: 'active', now: at(1) }));
    expect(isUniqueViolation(error)).toBe(true);
    expect((await getSkill(db, staged.id))?.status).toBe('staged');
  });

  it('records uses of the active skill atomically, and only of an active one', async () => {
    await insertSkill(db, skill({ status: 'disabled' }));
    const active = await insertSkill(db, skill({ version: 2 }));
    await Promise.all(
      Array.from({ length: 5 }, (_, i) => t.store.writer.run((trx) => recordSkillUse(trx, 'report', at(10 + i)))),
    );
    const after = await getSkill(db, active.id);
    expect(after?.useCount).toBe(5);
    expect(after?.lastUsed).toBe(at(14));
    expect(await recordSkillUse(db, 'missing', at(20))).toBeNull();
    await insertSkill(db, skill({ name: 'idea', status: 'staged' }));
    expect(await recordSkillUse(db, 'idea', at(20))).toBeNull();
  });

  it('counts skills used at or after a time', async () => {
    await insertSkill(db, skill({ name: 'a' }));
    await insertSkill(db, skill({ name: 'b' }));
    await insertSkill(db, skill({ name: 'c' }));
    await recordSkillUse(db, 'a', at(100));
    await recordSkillUse(db, 'b', at(200));
    await recordSkillUse(db, 'b', at(201));
    expect(await countSkillsUsedSince(db, at(0))).toBe(2);
    expect(await countSkillsUsedSince(db, at(100))).toBe(2);
    expect(await countSkillsUsedSince(db, at(101))).toBe(1);
    expect(await countSkillsUsedSince(db, at(202))).toBe(0);
  });

  it('deletes a skill once', async () => {
    const s = await insertSkill(db, skill());
    expect(await deleteSkill(db, s.id)).toBe(true);
    expect(await deleteSkill(db, s.id)).toBe(false);
    expect(await getSkill(db, s.id)).toBeNull();
  });
});
