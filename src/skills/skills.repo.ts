import type { Kysely, Selectable, Transaction } from 'kysely';
import { prepared, type Database } from '../store/index.js';
import type { SkillStatus } from './skills.status.js';

/** `skills`: one row per skill version (migration 007_skills). */
export interface SkillsTable {
  /** `skl_…`, time-sortable. */
  id: string;
  name: string;
  description: string;
  /** The Markdown body of the SKILL.md. */
  instructions: string;
  /** JSON object as text: the SKILL.md front-matter fields other than name and description. */
  front_matter: string;
  /** From the front matter (`category` or `metadata.category`); null when absent. */
  category: string | null;
  /** `active` | `staged` | `disabled`. */
  status: string;
  version: number;
  use_count: number;
  last_used: string | null;
  /** The skill this one revises; null for a first version. */
  evolved_from: string | null;
  created_at: string;
  updated_at: string;
}

declare module '../store/database.js' {
  /** `Database` with the table of 007_skills. */
  interface Database {
    skills: SkillsTable;
  }
}

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** A skill as stored. */
export interface SkillRecord {
  id: string;
  name: string;
  description: string;
  instructions: string;
  /** SKILL.md front-matter fields other than name and description, in file order. */
  frontMatter: Record<string, unknown>;
  category: string | null;
  status: SkillStatus;
  version: number;
  useCount: number;
  lastUsed: string | null;
  evolvedFrom: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A new row: everything but the usage counters, which start at zero. */
export type NewSkill = Omit<SkillRecord, 'useCount' | 'lastUsed' | 'updatedAt'>;

/** What `listSkills` filters on; absent filters match everything. */
export interface SkillFilter {
  status?: SkillStatus;
  category?: string;
}

/**
 * Inserts a skill (`use_count` 0, `last_used` null, `updated_at` =
 * `created_at`). Rejects with the driver's unique-violation error (see
 * `isUniqueViolation`) when the id exists or when it is active and an active
 * skill of the same name exists.
 */
export async function insertSkill(ex: Executor, skill: NewSkill): Promise<SkillRecord> {
  const row = await ex
    .insertInto('skills')
    .values({
      id: skill.id,
      name: skill.name,
      description: skill.description,
      instructions: skill.instructions,
      front_matter: JSON.stringify(skill.frontMatter),
      category: skill.category,
      status: skill.status,
      version: skill.version,
      use_count: 0,
      last_used: null,
      evolved_from: skill.evolvedFrom,
      created_at: skill.createdAt,
      updated_at: skill.createdAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toSkill(row);
}

/** The skill `id`, or null. */
export async function getSkill(ex: Executor, id: string): Promise<SkillRecord | null> {
  const row = await ex.selectFrom('skills').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toSkill(row) : null;
}

/** Skills matching `filter`, by name, newest version first within a name. */
export async function listSkills(ex: Executor, filter: SkillFilter = {}): Promise<SkillRecord[]> {
  let query = ex.selectFrom('skills').selectAll();
  if (filter.status !== undefined) query = query.where('status', '=', filter.status);
  if (filter.category !== undefined) query = query.where('category', '=', filter.category);
  const rows = await query.orderBy('name').orderBy('version', 'desc').orderBy('id', 'desc').execute();
  return rows.map(toSkill);
}

/** Every skill named `name`, newest version first (ties: newest id first). */
export async function skillsNamed(ex: Executor, name: string): Promise<SkillRecord[]> {
  const rows = await ex
    .selectFrom('skills')
    .selectAll()
    .where('name', '=', name)
    .orderBy('version', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(toSkill);
}

/** The active skill named `name`, or null (there is at most one). */
export async function activeSkillNamed(ex: Executor, name: string): Promise<SkillRecord | null> {
  const row = await ex
    .selectFrom('skills')
    .selectAll()
    .where('name', '=', name)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return row ? toSkill(row) : null;
}

/** Names and descriptions of the active skills, by name, at most `limit` (the agent's system context). */
export async function activeSkillSummaries(
  ex: Executor,
  limit: number,
): Promise<Array<{ name: string; description: string }>> {
  return activeSummaries.rows(ex, { limit });
}

// Read before every model call (the agent's system context): built and compiled once.
const activeSummaries = prepared((ex, input: { limit: number }) =>
  ex
    .selectFrom('skills')
    .select(['name', 'description'])
    .where('status', '=', 'active')
    .orderBy('name')
    .limit(input.limit),
);
const activeCount = prepared((ex, _input: Record<string, never>) =>
  ex
    .selectFrom('skills')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'active'),
);

/** Number of active skills. */
export async function countActiveSkills(ex: Executor): Promise<number> {
  const row = await activeCount.first(ex, {});
  return Number(row?.n ?? 0);
}

/**
 * Moves skill `id` from status `from` to `to` and sets `updated_at = now`.
 * Conditional on the current status, so of two concurrent changes only one
 * applies: returns the updated skill, or null when the skill is missing or
 * no longer in `from`. Rejects with a unique violation when `to` is active
 * and another active skill has the name.
 */
export async function updateSkillStatus(
  ex: Executor,
  id: string,
  change: { from: SkillStatus; to: SkillStatus; now: string },
): Promise<SkillRecord | null> {
  const row = await ex
    .updateTable('skills')
    .set({ status: change.to, updated_at: change.now })
    .where('id', '=', id)
    .where('status', '=', change.from)
    .returningAll()
    .executeTakeFirst();
  return row ? toSkill(row) : null;
}

/**
 * Records one use of the active skill named `name`: `use_count + 1`,
 * `last_used = now` (atomic in the database). Returns the skill after the
 * change, or null when no active skill has that name.
 */
export async function recordSkillUse(ex: Executor, name: string, now: string): Promise<SkillRecord | null> {
  const row = await ex
    .updateTable('skills')
    .set((eb) => ({ use_count: eb('use_count', '+', 1), last_used: now }))
    .where('name', '=', name)
    .where('status', '=', 'active')
    .returningAll()
    .executeTakeFirst();
  return row ? toSkill(row) : null;
}

/** Deletes skill `id`; false when it does not exist. Skills revising it keep their `evolved_from`. */
export async function deleteSkill(ex: Executor, id: string): Promise<boolean> {
  const result = await ex.deleteFrom('skills').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Skills used at or after `sinceIso` (ISO 8601 UTC): the number of skills
 * whose `last_used` is ≥ `sinceIso`, for analytics `skills_used`.
 */
export async function countSkillsUsedSince(ex: Executor, sinceIso: string): Promise<number> {
  const row = await ex
    .selectFrom('skills')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('last_used', '>=', sinceIso)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * True when `error` is a unique-constraint violation from either driver
 * (PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE / PRIMARYKEY): a name
 * already active, or a duplicate id.
 */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

function toSkill(row: Selectable<SkillsTable>): SkillRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    frontMatter: parseObject(row.front_matter),
    category: row.category,
    status: row.status as SkillStatus,
    version: row.version,
    useCount: row.use_count,
    lastUsed: row.last_used,
    evolvedFrom: row.evolved_from,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function parseObject(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
