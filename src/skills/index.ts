/** Skills capability: SKILL.md skills, staged proposals and approval, agent tools and chat commands (spec: Skills). */
export { skillRoutes, type SkillRoutesDeps } from './skills.routes.js';
export {
  createSkillsService,
  type SkillDraft,
  type SkillEvent,
  type SkillsService,
  type SkillsServiceOptions,
  type StatusChange,
} from './skills.service.js';
export { skillTools, skillsSystemContext, MAX_LISTED_SKILLS } from './skills.tools.js';
export { skillCommands, type SkillCommandOptions } from './skills.commands.js';
export { countSkillsUsedSince, type SkillRecord, type SkillsTable } from './skills.repo.js';
export { presentSkill, presentSkillDetail } from './skills.presenter.js';
export { parseSkillMd, renderSkillMd, type SkillDocument } from './skill-md.js';
export { type SkillStatus } from './skills.status.js';
export { openSkills, skillsModule } from './skills.module.js';
