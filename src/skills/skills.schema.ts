import { z } from 'zod';
import type { FieldIssue } from '../http/errors.js';
import { SKILL_STATUSES } from './skills.status.js';

/**
 * Field rules of a skill, shared by POST /skills, the SKILL.md parser and the
 * `propose_skill` tool so all three answer with the same messages. Names and
 * descriptions follow the Agent Skills `SKILL.md` format.
 */

/** Longest skill name (Agent Skills format). */
export const MAX_NAME_CHARS = 64;
/** Longest description (Agent Skills format). */
export const MAX_DESCRIPTION_CHARS = 1024;
/** Longest instructions (the Markdown body); a bound so a runaway proposal cannot fill the store. */
export const MAX_INSTRUCTIONS_CHARS = 100_000;
/** Longest `skill_md` accepted by POST /skills: the body bound plus room for the front matter. */
export const MAX_SKILL_MD_CHARS = MAX_INSTRUCTIONS_CHARS + 16_384;
/** Longest category label. */
export const MAX_CATEGORY_CHARS = 64;

/** Lowercase letters and digits in groups joined by single hyphens: no leading, trailing or doubled hyphen. */
const NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** A skill name: 1..64 lowercase letters, digits and single inner hyphens (`pdf-forms`). */
export const skillNameSchema = z
  .string({ error: 'name must be a string' })
  .min(1, 'name must not be empty')
  .max(MAX_NAME_CHARS, `name must be at most ${MAX_NAME_CHARS} characters`)
  .regex(NAME_PATTERN, 'name may contain only lowercase letters, digits and single hyphens, not at either end');

/** A description: what the skill does and when to use it; 1..1024 characters, surrounding space trimmed. */
export const skillDescriptionSchema = z
  .string({ error: 'description must be a string' })
  .trim()
  .min(1, 'description must not be empty')
  .max(MAX_DESCRIPTION_CHARS, `description must be at most ${MAX_DESCRIPTION_CHARS} characters`);

/** Instructions (Markdown); must say something; surrounding blank space trimmed. */
export const skillInstructionsSchema = z
  .string({ error: 'instructions must be a string' })
  .trim()
  .min(1, 'instructions must not be empty')
  .max(MAX_INSTRUCTIONS_CHARS, `instructions must be at most ${MAX_INSTRUCTIONS_CHARS} characters`);

/** An optional category label (a Gatehouse extension, filterable with GET /skills?category=). */
export const skillCategorySchema = z
  .string({ error: 'category must be a string' })
  .trim()
  .min(1, 'category must not be empty')
  .max(MAX_CATEGORY_CHARS, `category must be at most ${MAX_CATEGORY_CHARS} characters`);

/** The Agent Skills `metadata` map: string keys to string values. */
export const skillMetadataSchema = z.record(z.string(), z.string({ error: 'metadata values must be strings' }), {
  error: 'metadata must be an object of strings',
});

/** The three fields every skill has, as the `propose_skill` tool takes them. */
export const skillFieldsSchema = z.object({
  name: skillNameSchema,
  description: skillDescriptionSchema,
  instructions: skillInstructionsSchema,
});

/** `{path, message}` issues of a failed parse, paths prefixed with `root`. */
export function issuesOf(error: z.ZodError, root: string): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: [root, ...issue.path.map(String)].filter(Boolean).join('.') || root,
    message: issue.message,
  }));
}

/*
 * Response shapes (the presenter's output), declared on the routes for the
 * OpenAPI document; the response-schema test parses real answers with them.
 */

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds');

/** A skill as listed, without its instructions (spec: Skill). */
export const skillSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    status: z.enum(SKILL_STATUSES),
    version: z.number().int().min(1),
    last_used: timestamp.nullable().describe('When the agent last loaded it; null if never'),
    use_count: z.number().int().min(0),
    evolved_from: z.string().nullable().describe('The skill this one revises (a proposal); null otherwise'),
    category: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Skill', description: 'A skill, without its instructions (as listed)' });

/** One skill in full: the listed fields plus `instructions` and the rendered `skill_md`. */
export const skillDetailSchema = skillSchema
  .extend({
    instructions: z.string().describe('The Markdown body'),
    skill_md: z.string().describe('The skill as a SKILL.md document (front matter and body)'),
  })
  .meta({ id: 'SkillDetail', description: 'A skill with its instructions and SKILL.md' });

/** GET /skills. */
export const skillListSchema = z
  .object({ items: z.array(skillSchema) })
  .meta({ id: 'SkillList', description: 'Skills by name, newest version first' });

/** DELETE /skills/{id}. */
export const skillDeletedSchema = z
  .object({ id: z.string(), deleted: z.literal(true) })
  .describe('The skill is deleted');
