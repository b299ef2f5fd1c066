import { ApiError } from '../http/errors.js';
import type { ChatCommand } from '../turns/index.js';
import type { SkillRecord } from './skills.repo.js';
import type { SkillsService } from './skills.service.js';

/** Who may run the skill commands. */
export interface SkillCommandOptions {
  /** True when `platform:userId` is one of `gateway.auth.admin_users` (the loopback exemption does not count). */
  isAdminUser: (platform: string, userId: string) => boolean;
}

/** Most staged skills named in a reply. */
const MAX_NAMED = 10;

/**
 * The chat commands `/approve <skill>` and `/deny <skill>` (DECISIONS §10;
 * spec: Skill status, "/approve command"), for `admin_users` only: others
 * get a refusal and nothing changes. `<skill>` is a staged skill's id or
 * name; a name with several staged versions asks for the id. `/approve`
 * activates it (disabling the skill it revises); `/deny` disables it. The
 * reply always says what happened or what to type instead.
 */
export function skillCommands(service: SkillsService, options: SkillCommandOptions): Record<string, ChatCommand> {
  const command =
    (verb: 'approve' | 'deny'): ChatCommand =>
    async (args, caller) => {
      if (!options.isAdminUser(caller.platform, caller.userId)) {
        return `Only admin users can ${verb} skills; ${caller.platform}:${caller.userId} is not one.`;
      }
      const target = args.trim();
      if (target === '') return `Usage: /${verb} <skill name or id>. ${await stagedList(service)}`;
      const found = await resolveStaged(service, target, verb);
      if ('reply' in found) return found.reply;
      const skill = found.skill;
      try {
        if (verb === 'deny') {
          await service.deny(skill.id);
          return `Denied ${label(skill)}: it is disabled.`;
        }
        const { retired } = await service.approve(skill.id);
        return retired
          ? `Approved ${label(skill)}: it is active; the version it revises (${label(retired)}) is disabled.`
          : `Approved ${label(skill)}: it is active.`;
      } catch (error) {
        if (error instanceof ApiError) return `Could not ${verb} ${label(skill)}: ${error.message}.`;
        throw error;
      }
    };
  return { approve: command('approve'), deny: command('deny') };
}

/** The staged skill `target` names (id or name), or the reply explaining why there is none. */
async function resolveStaged(
  service: SkillsService,
  target: string,
  verb: 'approve' | 'deny',
): Promise<{ skill: SkillRecord } | { reply: string }> {
  const byId = target.startsWith('skl_') ? await service.find(target) : null;
  if (byId) {
    return byId.status === 'staged'
      ? { skill: byId }
      : { reply: `${label(byId)} is ${byId.status}, not staged: there is nothing to ${verb}.` };
  }
  const versions = await service.named(target);
  const staged = versions.filter((s) => s.status === 'staged');
  if (staged.length === 1) return { skill: staged[0]! };
  if (staged.length > 1) {
    const ids = staged
      .slice(0, MAX_NAMED)
      .map((s) => `${s.id} (version ${s.version})`)
      .join(', ');
    return { reply: `Several staged skills are named ${target}: ${ids}. Use /${verb} <id>.` };
  }
  if (versions.length > 0) {
    return { reply: `No staged skill named ${target} (its latest version is ${versions[0]!.status}).` };
  }
  return { reply: `No skill named ${target}. ${await stagedList(service)}` };
}

/** "Staged skills: …" or "There are no staged skills." */
async function stagedList(service: SkillsService): Promise<string> {
  const staged = await service.list({ status: 'staged' });
  if (staged.length === 0) return 'There are no staged skills.';
  const names = staged.slice(0, MAX_NAMED).map((s) => `${s.name} (${s.id})`);
  const more = staged.length > MAX_NAMED ? `, and ${staged.length - MAX_NAMED} more` : '';
  return `Staged skills: ${names.join(', ')}${more}.`;
}

function label(skill: SkillRecord): string {
  return `skill ${skill.name} version ${skill.version} (${skill.id})`;
}
