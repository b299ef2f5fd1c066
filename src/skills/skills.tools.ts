import { z } from 'zod';
import type { AgentTool } from '../runtime/index.js';
import { MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, issuesOf, skillFieldsSchema } from './skills.schema.js';
import type { SkillsService } from './skills.service.js';

/** Most active skills listed in the system context; the rest are counted, not named. */
export const MAX_LISTED_SKILLS = 100;

const loadArgs = z.object({ name: z.string({ error: 'name is required' }).min(1, 'name is required') });

/**
 * The agent's skill tools (DECISIONS §10):
 * - `load_skill({name})` answers the active skill's instructions and counts
 *   the use (`use_count`, `last_used`); a name that is not active is an error
 *   result naming what is there instead;
 * - `propose_skill({name, description, instructions})` stores a staged skill
 *   for an administrator to approve; with an active skill of that name it is
 *   a revision of it (`evolved_from`, `version + 1`).
 * Errors are thrown, so the agent loop reports them to the model as `{error}`.
 */
export function skillTools(service: SkillsService): AgentTool[] {
  return [
    {
      spec: {
        name: 'load_skill',
        description:
          'Load an active skill by name and get its instructions. Use it when a task matches a skill listed in the system message, then follow the instructions.',
        parameters: {
          type: 'object',
          properties: { name: { type: 'string', description: 'The skill name, as listed' } },
          required: ['name'],
        },
      },
      async run(args) {
        const parsed = loadArgs.safeParse(args);
        if (!parsed.success) throw new Error(describeIssues(parsed.error));
        const { name } = parsed.data;
        const skill = await service.use(name);
        if (skill) {
          return {
            name: skill.name,
            version: skill.version,
            description: skill.description,
            instructions: skill.instructions,
          };
        }
        throw new Error(await whyNotActive(service, name));
      },
    },
    {
      spec: {
        name: 'propose_skill',
        description:
          'Propose a reusable skill (a procedure worth repeating) or a revision of an active skill with the same name. ' +
          'It is stored as staged and becomes usable only after an administrator approves it.',
        parameters: {
          type: 'object',
          properties: {
            name: {
              type: 'string',
              description: `Lowercase letters, digits and single hyphens, at most ${MAX_NAME_CHARS} characters (e.g. "weekly-report"). Reuse an active skill's name to revise it.`,
            },
            description: {
              type: 'string',
              description: `What the skill does and when to use it, at most ${MAX_DESCRIPTION_CHARS} characters`,
            },
            instructions: { type: 'string', description: 'The instructions, in Markdown' },
          },
          required: ['name', 'description', 'instructions'],
        },
      },
      async run(args) {
        const parsed = skillFieldsSchema.safeParse(args);
        if (!parsed.success) throw new Error(describeIssues(parsed.error));
        const skill = await service.propose(parsed.data);
        return {
          id: skill.id,
          name: skill.name,
          status: skill.status,
          version: skill.version,
          evolved_from: skill.evolvedFrom,
          note: 'Staged: an administrator must approve it before it can be loaded.',
        };
      },
    },
  ];
}

/**
 * The system-context hook for the agent (`AgentOptions.systemContext`): the
 * active skills' names and descriptions and how to use them, or null when
 * none is active. Read at every model call, so approvals take effect on the
 * next step.
 */
export function skillsSystemContext(service: SkillsService): () => Promise<string | null> {
  return async () => {
    const { items, total } = await service.activeSummaries(MAX_LISTED_SKILLS);
    if (items.length === 0) return null;
    const lines = items.map((skill) => `- ${skill.name}: ${skill.description.replace(/\s+/g, ' ')}`);
    if (total > items.length) lines.push(`- … and ${total - items.length} more`);
    return [
      'Skills: these skills are available. When a task matches one, call the load_skill tool with its name to get its instructions, then follow them.',
      ...lines,
    ].join('\n');
  };
}

/** Why `name` cannot be loaded, with what the model can do instead. */
async function whyNotActive(service: SkillsService, name: string): Promise<string> {
  const versions = await service.named(name);
  const latest = versions[0];
  if (latest) {
    const state = latest.status === 'staged' ? 'staged (awaiting approval)' : latest.status;
    return `skill ${name} is not active: its latest version is ${state}`;
  }
  const { items } = await service.activeSummaries(20);
  return items.length > 0
    ? `no skill named ${name}; active skills: ${items.map((s) => s.name).join(', ')}`
    : `no skill named ${name}; no skills are active`;
}

function describeIssues(error: z.ZodError): string {
  return issuesOf(error, '')
    .map((issue) => issue.message)
    .join('; ');
}
