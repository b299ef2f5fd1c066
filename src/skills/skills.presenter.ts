import { renderSkillMd } from './skill-md.js';
import type { SkillRecord } from './skills.repo.js';

/** Skill wire shape (spec: Skill), as in lists: without the instructions. */
export function presentSkill(skill: SkillRecord): Record<string, unknown> {
  return {
    id: skill.id,
    name: skill.name,
    description: skill.description,
    status: skill.status,
    version: skill.version,
    last_used: skill.lastUsed,
    use_count: skill.useCount,
    evolved_from: skill.evolvedFrom,
    category: skill.category,
    created_at: skill.createdAt,
    updated_at: skill.updatedAt,
  };
}

/** One skill in full (GET /skills/{id}): the list shape plus `instructions` and the rendered `skill_md`. */
export function presentSkillDetail(skill: SkillRecord): Record<string, unknown> {
  return {
    ...presentSkill(skill),
    instructions: skill.instructions,
    skill_md: renderSkillMd({
      name: skill.name,
      description: skill.description,
      instructions: skill.instructions,
      extras: skill.frontMatter,
    }),
  };
}
