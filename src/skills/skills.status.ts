/**
 * The skill status table (spec: Skill status; DECISIONS §3, §9), as a pure
 * function so every caller — routes, chat commands, tests — applies the same
 * rules.
 */

/** Skill status (spec: Skill). */
export type SkillStatus = 'active' | 'staged' | 'disabled';

/** Every status, for validation. */
export const SKILL_STATUSES = ['active', 'staged', 'disabled'] as const satisfies readonly SkillStatus[];

/**
 * What is asked of a skill: `approve` (the approve operation, `/approve`),
 * `enable` (status update to active, the enable variant), `disable` (status
 * update to disabled, the disable variant), `deny` (`/deny`: reject a
 * staged proposal).
 */
export type SkillAction = 'approve' | 'enable' | 'disable' | 'deny';

/** The result of applying an action: the next status (`changed` false for a no-op), or why it is not allowed. */
export type SkillTransition = { ok: true; to: SkillStatus; changed: boolean } | { ok: false; reason: string };

/**
 * Applies `action` to a skill in status `from`:
 * - approve: staged → active; from any other status not allowed;
 * - enable: disabled → active; active → active is a no-op; staged → not
 *   allowed (a staged skill becomes active only by approval);
 * - disable: any → disabled (disabled → disabled is a no-op);
 * - deny: staged → disabled; from any other status not allowed.
 */
export function skillTransition(from: SkillStatus, action: SkillAction): SkillTransition {
  switch (action) {
    case 'approve':
      return from === 'staged'
        ? { ok: true, to: 'active', changed: true }
        : { ok: false, reason: `only a staged skill can be approved; this skill is ${from}` };
    case 'enable':
      if (from === 'staged') {
        return { ok: false, reason: 'a staged skill becomes active only by approval (POST /skills/{id}/approve)' };
      }
      return { ok: true, to: 'active', changed: from !== 'active' };
    case 'disable':
      return { ok: true, to: 'disabled', changed: from !== 'disabled' };
    case 'deny':
      return from === 'staged'
        ? { ok: true, to: 'disabled', changed: true }
        : { ok: false, reason: `only a staged skill can be denied; this skill is ${from}` };
  }
}
