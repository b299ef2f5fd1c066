import { describe, expect, it } from 'vitest';
import { skillTransition, type SkillAction, type SkillStatus } from './skills.status.js';

/** Every (status, action) pair and its expected outcome: the spec's status table, plus `/deny`. */
const TABLE: Array<[SkillStatus, SkillAction, SkillStatus | 'refused', boolean]> = [
  ['staged', 'approve', 'active', true],
  ['active', 'approve', 'refused', false],
  ['disabled', 'approve', 'refused', false],
  ['staged', 'enable', 'refused', false],
  ['active', 'enable', 'active', false],
  ['disabled', 'enable', 'active', true],
  ['staged', 'disable', 'disabled', true],
  ['active', 'disable', 'disabled', true],
  ['disabled', 'disable', 'disabled', false],
  ['staged', 'deny', 'disabled', true],
  ['active', 'deny', 'refused', false],
  ['disabled', 'deny', 'refused', false],
];

describe('skillTransition', () => {
  it.each(TABLE)('%s + %s → %s', (from, action, to, changed) => {
    const result = skillTransition(from, action);
    if (to === 'refused') {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.reason).toMatch(/staged|approv/);
    } else {
      expect(result).toEqual({ ok: true, to, changed });
    }
  });

  it('explains that a staged skill is activated by approval', () => {
    expect(skillTransition('staged', 'enable')).toEqual({
      ok: false,
      reason: 'a staged skill becomes active only by approval (POST /skills/{id}/approve)',
    });
  });
});
