import { parseDocument, stringify } from 'yaml';
import type { z } from 'zod';
import type { FieldIssue } from '../http/errors.js';
import { prototypeKey } from '../lib/json.js';
import { yamlNestingBound } from '../lib/yaml-depth.js';
import {
  MAX_INSTRUCTIONS_CHARS,
  issuesOf,
  skillCategorySchema,
  skillDescriptionSchema,
  skillNameSchema,
} from './skills.schema.js';

/**
 * The Agent Skills `SKILL.md` format: YAML front matter between `---` lines
 * with `name` and `description` (required) and optionally `license`,
 * `compatibility`, `metadata` (string map) and `allowed-tools`, then a
 * Markdown body: the instructions. Front-matter fields Gatehouse does not
 * interpret are kept and written back, so a skill survives a round trip.
 */

/** A parsed `SKILL.md`. */
export interface SkillDocument {
  name: string;
  description: string;
  /** The Markdown body, surrounding blank space trimmed. */
  instructions: string;
  /** Every front-matter field other than `name` and `description`, in file order. */
  extras: Record<string, unknown>;
}

/** The outcome of `parseSkillMd`: the document, or every problem found as `{path, message}`. */
export type SkillMdParse = { ok: true; skill: SkillDocument } | { ok: false; issues: FieldIssue[] };

/** Most nesting `yamlNestingBound` may report for a front matter (twice the levels allowed; it counts a block level twice). */
const MAX_FRONT_MATTER_NESTING = 64;

/** Longest `compatibility` (Agent Skills format). */
const MAX_COMPATIBILITY_CHARS = 500;

/**
 * Parses a `SKILL.md` text. Accepts a UTF-8 byte-order mark and CRLF line
 * ends. Never throws: problems come back as issues whose paths start with
 * `root` (`skill_md`, `skill_md.name`, `skill_md.front_matter`, …), ready for
 * a 400 `details` array.
 */
export function parseSkillMd(text: string, root = 'skill_md'): SkillMdParse {
  const lines = text
    .replace(/^\uFEFF/, '')
    .replace(/\r\n?/g, '\n')
    .split('\n');
  if (lines[0]?.trimEnd() !== '---') {
    return fail(root, 'must start with a "---" line opening the YAML front matter');
  }
  const end = lines.findIndex((line, i) => i > 0 && line.trimEnd() === '---');
  if (end === -1) return fail(root, 'the YAML front matter is not closed by a "---" line');

  const yamlText = lines.slice(1, end).join('\n');
  // The YAML parser recurses: deep input is refused before it sees it (ADR 0013).
  if (yamlNestingBound(yamlText) > MAX_FRONT_MATTER_NESTING) {
    return fail(`${root}.front_matter`, `the front matter nests deeper than ${MAX_FRONT_MATTER_NESTING / 2} levels`);
  }
  const doc = parseDocument(yamlText, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((error) => ({
        path: `${root}.front_matter`,
        message: `invalid YAML: ${error.message.split('\n')[0] ?? 'syntax error'}`,
      })),
    };
  }
  const front: unknown = doc.toJS();
  if (front === null || typeof front !== 'object' || Array.isArray(front)) {
    return fail(`${root}.front_matter`, 'the front matter must be a YAML mapping with name and description');
  }
  // As in every JSON body (ADR 0013): a key that would reach a prototype when copied is refused.
  const protoKey = prototypeKey(front);
  if (protoKey !== null) return fail(`${root}.front_matter`, `the key "${protoKey}" is not allowed`);
  const fields = front as Record<string, unknown>;
  const issues: FieldIssue[] = [];

  const name = required(fields, 'name', skillNameSchema, `${root}.name`, issues);
  const description = required(fields, 'description', skillDescriptionSchema, `${root}.description`, issues);

  const extras: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'name' || key === 'description') continue;
    const checked =
      key === 'metadata' ? checkMetadata(value, yamlText, `${root}.${key}`) : checkExtra(key, value, `${root}.${key}`);
    if ('issue' in checked) issues.push(checked.issue);
    else extras[key] = checked.value;
  }

  const instructions = lines
    .slice(end + 1)
    .join('\n')
    .trim();
  if (instructions === '') {
    issues.push({ path: `${root}.body`, message: 'the Markdown body (the instructions) must not be empty' });
  } else if (instructions.length > MAX_INSTRUCTIONS_CHARS) {
    issues.push({ path: `${root}.body`, message: `the body must be at most ${MAX_INSTRUCTIONS_CHARS} characters` });
  }

  if (issues.length > 0 || name === null || description === null) return { ok: false, issues };
  return { ok: true, skill: { name, description, instructions, extras } };
}

/**
 * Writes a skill as `SKILL.md`: front matter (`name`, `description`, then the
 * extras in order) and the instructions as the body. `parseSkillMd` of the
 * result gives the same skill back.
 */
export function renderSkillMd(skill: SkillDocument): string {
  const front = stringify({ name: skill.name, description: skill.description, ...skill.extras }, { lineWidth: 0 });
  return `---\n${front}---\n\n${skill.instructions}\n`;
}

/**
 * The category of a skill from its front-matter extras: a top-level
 * `category` (a Gatehouse extension), else `metadata.category` (the Agent
 * Skills place for client extensions), else null.
 */
export function categoryOf(extras: Record<string, unknown>): string | null {
  if (typeof extras.category === 'string') return extras.category;
  const metadata = extras.metadata;
  if (metadata && typeof metadata === 'object' && !Array.isArray(metadata)) {
    const category = (metadata as Record<string, unknown>).category;
    if (typeof category === 'string') return category;
  }
  return null;
}

/** A required string field checked by `schema`; null (with issues added) when absent or invalid. */
function required(
  fields: Record<string, unknown>,
  key: string,
  schema: z.ZodType<string>,
  path: string,
  issues: FieldIssue[],
): string | null {
  if (fields[key] === undefined || fields[key] === null) {
    issues.push({ path, message: `${key} is required` });
    return null;
  }
  const parsed = schema.safeParse(fields[key]);
  if (parsed.success) return parsed.data;
  issues.push(...issuesOf(parsed.error, path));
  return null;
}

function fail(path: string, message: string): SkillMdParse {
  return { ok: false, issues: [{ path, message }] };
}

/** Checks the optional fields of the format; other keys pass unchanged. Metadata scalars become strings. */
function checkExtra(key: string, value: unknown, path: string): { value: unknown } | { issue: FieldIssue } {
  switch (key) {
    case 'license':
      return typeof value === 'string' ? { value } : { issue: { path, message: 'license must be a string' } };
    case 'compatibility':
      return typeof value === 'string' && value.trim().length > 0 && value.length <= MAX_COMPATIBILITY_CHARS
        ? { value }
        : { issue: { path, message: `compatibility must be a string of 1..${MAX_COMPATIBILITY_CHARS} characters` } };
    case 'allowed-tools':
      return typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'))
        ? { value }
        : { issue: { path, message: 'allowed-tools must be a space-separated string of tool names' } };
    case 'category': {
      const category = skillCategorySchema.safeParse(value);
      return category.success
        ? { value: category.data }
        : { issue: { path, message: category.error.issues[0]!.message } };
    }
    default:
      return { value };
  }
}

/**
 * The `metadata` map: string values. Unquoted numbers and booleans
 * (`version: 1.0`) are what the author typed, read as text from `yamlText`
 * with YAML's failsafe schema, so `1.0` stays `"1.0"`.
 */
function checkMetadata(value: unknown, yamlText: string, path: string): { value: unknown } | { issue: FieldIssue } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { issue: { path, message: 'metadata must be a mapping of strings' } };
  }
  let asText: Record<string, unknown> | null = null;
  const out: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
    if (typeof entry === 'string') {
      out[key] = entry;
    } else if (typeof entry === 'number' || typeof entry === 'boolean') {
      asText ??= failsafeMetadata(yamlText);
      const text = asText[key];
      out[key] = typeof text === 'string' ? text : String(entry);
    } else {
      return { issue: { path: `${path}.${key}`, message: 'metadata values must be strings' } };
    }
  }
  if (out.category !== undefined) {
    const category = skillCategorySchema.safeParse(out.category);
    if (!category.success) return { issue: { path: `${path}.category`, message: category.error.issues[0]!.message } };
  }
  return { value: out };
}

/** The `metadata` map with every scalar as its source text (YAML failsafe schema). */
function failsafeMetadata(yamlText: string): Record<string, unknown> {
  const front: unknown = parseDocument(yamlText, { schema: 'failsafe' }).toJS();
  const metadata = front && typeof front === 'object' ? (front as Record<string, unknown>).metadata : null;
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata)
    ? (metadata as Record<string, unknown>)
    : {};
}
