import { z } from 'zod';
import { errors, type FieldIssue } from '../http/errors.js';
import { created, defineRoute, type RouteDef } from '../http/route.js';
import { objectBody } from '../http/validation.js';
import { parseSkillMd } from './skill-md.js';
import { presentSkill, presentSkillDetail } from './skills.presenter.js';
import {
  MAX_SKILL_MD_CHARS,
  skillCategorySchema,
  skillDeletedSchema,
  skillDescriptionSchema,
  skillDetailSchema,
  skillInstructionsSchema,
  skillListSchema,
  skillMetadataSchema,
  skillNameSchema,
} from './skills.schema.js';
import type { SkillDraft, SkillsService } from './skills.service.js';
import { SKILL_STATUSES } from './skills.status.js';

const skillParams = z.object({ skill_id: z.string().min(1) });

/** The fields of the JSON form; each is optional here so the form check can name every missing one. */
const createBody = objectBody({
  skill_md: z
    .string({ error: 'skill_md must be a string' })
    .max(MAX_SKILL_MD_CHARS, `skill_md must be at most ${MAX_SKILL_MD_CHARS} characters`)
    .optional(),
  name: skillNameSchema.optional(),
  description: skillDescriptionSchema.optional(),
  instructions: skillInstructionsSchema.optional(),
  category: skillCategorySchema.optional(),
  metadata: skillMetadataSchema.optional(),
}).superRefine((body, ctx) => {
  const fields = (['name', 'description', 'instructions', 'category', 'metadata'] as const).filter(
    (key) => body[key] !== undefined,
  );
  if (body.skill_md !== undefined) {
    for (const key of fields) {
      ctx.addIssue({ code: 'custom', path: [key], message: 'give either skill_md or the separate fields, not both' });
    }
    return;
  }
  for (const key of ['name', 'description', 'instructions'] as const) {
    if (body[key] === undefined) {
      ctx.addIssue({ code: 'custom', path: [key], message: `${key} is required (or give skill_md)` });
    }
  }
});

const statusBody = objectBody({
  status: z.enum(['active', 'disabled'], { error: 'status must be "active" or "disabled"' }),
});

/** What the skills routes need. */
export interface SkillRoutesDeps {
  service: SkillsService;
}

/**
 * Skills API (spec: Skills, Skill status; DECISIONS §2, §3, §4, §9): reads
 * are `api`, every write `admin`. POST /skills takes `{name, description,
 * instructions}` (plus optional `category`, `metadata`) or `{skill_md}` and
 * answers 201 with an active skill; a single skill is answered with its
 * `instructions` and rendered `skill_md`, lists without. Status changes follow
 * the status table and answer 200 with the skill after the change; one the
 * table does not allow is 400, an unknown id 404.
 */
export function skillRoutes(deps: SkillRoutesDeps): RouteDef[] {
  const { service } = deps;
  const operation = (op: 'approve' | 'enable' | 'disable', summary: string) =>
    defineRoute({
      method: 'POST',
      path: `/skills/:skill_id/${op}`,
      permission: 'admin',
      summary,
      tags: ['skills'],
      params: skillParams,
      responses: [{ status: 200, description: 'The skill after the change', schema: skillDetailSchema }],
      handler: async (_ctx, { params }) => {
        const skill =
          op === 'approve'
            ? (await service.approve(params.skill_id)).skill
            : await service.setStatus(params.skill_id, op === 'enable' ? 'active' : 'disabled');
        return presentSkillDetail(skill);
      },
    });
  return [
    defineRoute({
      method: 'GET',
      path: '/skills',
      permission: 'api',
      summary: 'List skills (without instructions), by name, newest version first',
      tags: ['skills'],
      query: z.object({
        status: z.enum(SKILL_STATUSES, { error: 'status must be one of active, staged, disabled' }).optional(),
        category: z.string().min(1, 'category must not be empty').optional(),
      }),
      responses: [{ status: 200, description: 'The skills', schema: skillListSchema }],
      handler: async (_ctx, { query }) => {
        const skills = await service.list({
          ...(query.status !== undefined ? { status: query.status } : {}),
          ...(query.category !== undefined ? { category: query.category } : {}),
        });
        return { items: skills.map(presentSkill) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/skills',
      permission: 'admin',
      summary: 'Create an active skill from fields or a SKILL.md document',
      tags: ['skills'],
      body: createBody,
      responses: [{ status: 201, description: 'The created skill, active', schema: skillDetailSchema }],
      handler: async (_ctx, { body }) => {
        const draft = body.skill_md !== undefined ? draftFromSkillMd(body.skill_md) : draftFromFields(body);
        return created(presentSkillDetail(await service.create(draft)));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/skills/:skill_id',
      permission: 'api',
      summary: 'One skill with its instructions and SKILL.md',
      tags: ['skills'],
      params: skillParams,
      responses: [{ status: 200, description: 'The skill', schema: skillDetailSchema }],
      handler: async (_ctx, { params }) => presentSkillDetail(await service.get(params.skill_id)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/skills/:skill_id',
      permission: 'admin',
      summary: 'Delete a skill',
      tags: ['skills'],
      params: skillParams,
      responses: [{ status: 200, description: 'Deleted', schema: skillDeletedSchema }],
      handler: async (_ctx, { params }) => {
        const skill = await service.delete(params.skill_id);
        return { id: skill.id, deleted: true };
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/skills/:skill_id/status',
      permission: 'admin',
      summary: 'Status update: active (not from staged: approve instead) or disabled',
      tags: ['skills'],
      params: skillParams,
      body: statusBody,
      responses: [{ status: 200, description: 'The skill after the change', schema: skillDetailSchema }],
      handler: async (_ctx, { params, body }) =>
        presentSkillDetail(await service.setStatus(params.skill_id, body.status)),
    }),
    operation('approve', 'Approve a staged skill; the skill it revises is disabled'),
    operation('enable', 'Enable a disabled skill (variant of the status update)'),
    operation('disable', 'Disable a skill (variant of the status update)'),
  ];
}

/** A draft from `{skill_md}`; 400 listing every problem of the document. */
function draftFromSkillMd(text: string): SkillDraft {
  const parsed = parseSkillMd(text, 'body.skill_md');
  if (!parsed.ok) throw errors.validation(parsed.issues, 'invalid SKILL.md');
  const { name, description, instructions, extras } = parsed.skill;
  return { name, description, instructions, frontMatter: extras };
}

/** A draft from the JSON form; `category` goes into `metadata.category`, where SKILL.md keeps it. */
function draftFromFields(body: {
  name?: string | undefined;
  description?: string | undefined;
  instructions?: string | undefined;
  category?: string | undefined;
  metadata?: Record<string, string> | undefined;
}): SkillDraft {
  const { name, description, instructions } = body;
  if (name === undefined || description === undefined || instructions === undefined) {
    // The body schema already rejects this; kept so the types need no assertion.
    const missing: FieldIssue[] = [{ path: 'body', message: 'name, description and instructions are required' }];
    throw errors.validation(missing);
  }
  const metadata = { ...body.metadata, ...(body.category !== undefined ? { category: body.category } : {}) };
  return { name, description, instructions, frontMatter: Object.keys(metadata).length > 0 ? { metadata } : {} };
}
