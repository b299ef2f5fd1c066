import { errors, type ApiError } from '../http/errors.js';
import { isoTime, type Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Store, WriteOp } from '../store/index.js';
import { categoryOf } from './skill-md.js';
import {
  countSkillsUsedSince,
  activeSkillNamed,
  activeSkillSummaries,
  countActiveSkills,
  deleteSkill,
  getSkill,
  insertSkill,
  isUniqueViolation,
  listSkills,
  recordSkillUse,
  skillsNamed,
  updateSkillStatus,
  type SkillFilter,
  type SkillRecord,
} from './skills.repo.js';
import { skillTransition, type SkillAction } from './skills.status.js';

/** What a new skill is made of: the SKILL.md fields, already validated (skills.schema.ts). */
export interface SkillDraft {
  name: string;
  description: string;
  instructions: string;
  /** Front-matter fields other than name and description (license, metadata, category, …); default none. */
  frontMatter?: Record<string, unknown>;
}

/** A status change's result: the skill after it, and the skill it revises when an approval disabled that one. */
export interface StatusChange {
  skill: SkillRecord;
  /** Set by an approval that disabled the skill named in `evolved_from`; null otherwise. */
  retired: SkillRecord | null;
  /** False for a no-op (active → active, disabled → disabled). */
  changed: boolean;
}

/** Changes the service reports (for the live feed's `skills` topic). */
export type SkillEvent = 'created' | 'proposed' | 'status_changed' | 'deleted' | 'used';

/**
 * Skills (spec: Skill, Skill status; DECISIONS §9, §10): creation, staged
 * proposals and their approval, status changes, and use by the agent. Every
 * write runs in one transaction on the store's writer; the rule "one active
 * skill per name" is checked there and enforced again by the database.
 * Methods throw ApiError (404 unknown id, 400 a change the status table or
 * the name rule does not allow).
 */
export interface SkillsService {
  /** Creates an active skill, version 1. 400 when an active skill has the name. */
  create(draft: SkillDraft): Promise<SkillRecord>;
  /**
   * Creates a staged skill (the agent's proposal). When an active skill has
   * the name it is a revision: `evolved_from` = that skill's id, `version` =
   * its version + 1, and its front matter (license, metadata, category) is
   * carried over. Otherwise version 1.
   */
  propose(draft: SkillDraft): Promise<SkillRecord>;
  /** Skills matching `filter`, by name, newest version first. */
  list(filter?: SkillFilter): Promise<SkillRecord[]>;
  /** The skill `id`; 404 when unknown. */
  get(id: string): Promise<SkillRecord>;
  /** The skill `id`, or null. */
  find(id: string): Promise<SkillRecord | null>;
  /** Every version named `name`, newest first. */
  named(name: string): Promise<SkillRecord[]>;
  /** Deletes the skill `id` and returns it; 404 when unknown. */
  delete(id: string): Promise<SkillRecord>;
  /**
   * The status update: `active` (enable) or `disabled` (disable), by the
   * status table. A no-op (active → active, disabled → disabled) answers the
   * skill unchanged. Enabling is 400 when another skill of the name is active.
   */
  setStatus(id: string, status: 'active' | 'disabled'): Promise<SkillRecord>;
  /**
   * Approves a staged skill (400 otherwise): it becomes active, and the skill
   * it revises (`evolved_from`) becomes disabled, in one transaction. 400 when
   * a skill of the same name other than the revised one is active.
   */
  approve(id: string): Promise<StatusChange>;
  /** Rejects a staged proposal: staged → disabled (400 from any other status). */
  deny(id: string): Promise<SkillRecord>;
  /**
   * The agent loads the active skill named `name`: `use_count + 1`,
   * `last_used = now`. Null when no skill of that name is active.
   */
  use(name: string): Promise<SkillRecord | null>;
  /** Names and descriptions of active skills by name (at most `limit`), and how many are active in all. */
  activeSummaries(limit: number): Promise<{ items: Array<{ name: string; description: string }>; total: number }>;
  /** Skills the agent loaded since `sinceIso` (analytics). */
  countUsedSince(sinceIso: string): Promise<number>;
}

/** What the skills service needs. */
export interface SkillsServiceOptions {
  /** Reads use `db` and writes `writer`, each looked up at call time. */
  store: Pick<Store, 'db' | 'writer' | 'shared'>;
  /** The only time source (`created_at`, `updated_at`, `last_used`). */
  clock: Clock;
  ids: IdGenerator;
  /** Told after each committed change, with the skill after it (live feed). Must not throw. */
  onChange?: (event: SkillEvent, skill: SkillRecord) => void;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: ApiError };

const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
const fail = <T>(error: ApiError): Outcome<T> => ({ ok: false, error });

/** 400: the name is held by another active skill. */
function nameTaken(name: string, holder?: SkillRecord): ApiError {
  return errors.badRequest(
    `an active skill named ${name} already exists${holder ? ` (${holder.id}, version ${holder.version})` : ''}; disable it first`,
    holder ? { name, active_skill_id: holder.id } : { name },
  );
}

/** How long the active skills' summaries stay at hand where other processes may change them. */
const SUMMARY_TTL_MS = 1_000;

type SkillSummary = { name: string; description: string };

/** Builds the skills service. */
export function createSkillsService(options: SkillsServiceOptions): SkillsService {
  const { store, clock, ids } = options;
  const now = (): string => isoTime(clock.now());
  /**
   * The active skills' summaries, asked before every model call, kept until a skill changes here. Where other
   * processes share the database their changes count after at most SUMMARY_TTL_MS.
   */
  let summaries: { limit: number; at: number; value: Promise<{ items: SkillSummary[]; total: number }> } | null = null;
  const notify = (event: SkillEvent, skill: SkillRecord | null): void => {
    if (event !== 'used') summaries = null;
    if (skill) options.onChange?.(event, skill);
  };

  /**
   * Runs `op` on the writer. Refusals come back as values so they do not
   * roll back the batch they share; a unique violation (a concurrent writer
   * took the name) becomes the name rule's 400; `name` is read after the op ran.
   */
  const write = async <T>(op: WriteOp<Outcome<T>>, name: () => string): Promise<T> => {
    let outcome: Outcome<T>;
    try {
      outcome = await store.writer.run(op);
    } catch (error) {
      if (isUniqueViolation(error)) throw nameTaken(name());
      throw error;
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  };

  const insert = (draft: SkillDraft, status: 'active' | 'staged'): Promise<SkillRecord> => {
    const id = ids.next('skl');
    const createdAt = now();
    return write(
      async (trx) => {
        const active = await activeSkillNamed(trx, draft.name);
        // Creating (installing) a skill whose name is active publishes a new version of it: the
        // new one is active with `evolved_from` + `version + 1`, the one it replaces is disabled.
        if (status === 'active' && active) {
          const replaced = await updateSkillStatus(trx, active.id, { from: 'active', to: 'disabled', now: createdAt });
          if (!replaced) return fail(nameTaken(draft.name, active));
        }
        const revises = active;
        const frontMatter = draft.frontMatter ?? revises?.frontMatter ?? {};
        return ok(
          await insertSkill(trx, {
            id,
            name: draft.name,
            description: draft.description,
            instructions: draft.instructions,
            frontMatter,
            category: categoryOf(frontMatter),
            status,
            version: revises ? revises.version + 1 : 1,
            evolvedFrom: revises?.id ?? null,
            createdAt,
          }),
        );
      },
      () => draft.name,
    );
  };

  /** Applies `action` to skill `id` by the status table, in one transaction. */
  const change = async (id: string, action: SkillAction): Promise<StatusChange> => {
    const at = now();
    // The name is only known inside; a unique violation maps to the name rule either way.
    let name = '';
    const result = await write(
      async (trx) => {
        const skill = await getSkill(trx, id);
        if (!skill) return fail<StatusChange>(errors.notFound('skill'));
        name = skill.name;
        const next = skillTransition(skill.status, action);
        if (!next.ok) return fail<StatusChange>(errors.badRequest(next.reason, { status: skill.status }));
        if (!next.changed) return ok<StatusChange>({ skill, retired: null, changed: false });
        let retired: SkillRecord | null = null;
        if (next.to === 'active') {
          const holder = await activeSkillNamed(trx, skill.name);
          const revised = action === 'approve' && holder !== null && holder.id === skill.evolvedFrom;
          if (holder && !revised) return fail<StatusChange>(nameTaken(skill.name, holder));
        }
        if (action === 'approve' && skill.evolvedFrom) {
          const old = await getSkill(trx, skill.evolvedFrom);
          if (old && old.status !== 'disabled') {
            retired = await updateSkillStatus(trx, old.id, { from: old.status, to: 'disabled', now: at });
            // Throwing rolls the transaction back; the writer re-runs the op once on its own.
            if (!retired) throw errors.badRequest('the revised skill changed during the approval; retry');
          }
        }
        const updated = await updateSkillStatus(trx, id, { from: skill.status, to: next.to, now: at });
        if (!updated) throw errors.badRequest('the skill changed during the update; retry');
        return ok<StatusChange>({ skill: updated, retired, changed: true });
      },
      () => name || id,
    );
    if (result.changed) notify('status_changed', result.skill);
    notify('status_changed', result.retired);
    return result;
  };

  const find = (id: string): Promise<SkillRecord | null> => getSkill(store.db, id);

  return {
    countUsedSince: (sinceIso) => countSkillsUsedSince(store.db, sinceIso),
    async create(draft) {
      const skill = await insert(draft, 'active');
      notify('created', skill);
      return skill;
    },
    async propose(draft) {
      const skill = await insert(draft, 'staged');
      notify('proposed', skill);
      return skill;
    },
    list: (filter = {}) => listSkills(store.db, filter),
    async get(id) {
      const skill = await find(id);
      if (!skill) throw errors.notFound('skill');
      return skill;
    },
    find,
    named: (name) => skillsNamed(store.db, name),
    async delete(id) {
      const deleted = await write(
        async (trx) => {
          const skill = await getSkill(trx, id);
          if (!skill || !(await deleteSkill(trx, id))) return fail<SkillRecord>(errors.notFound('skill'));
          return ok(skill);
        },
        () => id,
      );
      notify('deleted', deleted);
      return deleted;
    },
    async setStatus(id, status) {
      return (await change(id, status === 'active' ? 'enable' : 'disable')).skill;
    },
    approve: (id) => change(id, 'approve'),
    async deny(id) {
      return (await change(id, 'deny')).skill;
    },
    async use(name) {
      const at = now();
      const skill = await store.writer.run((trx) => recordSkillUse(trx, name, at));
      notify('used', skill);
      return skill;
    },
    activeSummaries(limit) {
      const at = clock.now();
      const fresh = summaries && summaries.limit === limit && (!store.shared || at - summaries.at < SUMMARY_TTL_MS);
      if (!fresh) {
        const value = Promise.all([activeSkillSummaries(store.db, limit), countActiveSkills(store.db)]).then(
          ([items, total]) => ({ items, total }),
        );
        const entry = { limit, at, value };
        summaries = entry;
        // A failed read is not kept.
        value.catch(() => {
          if (summaries === entry) summaries = null;
        });
      }
      return summaries!.value;
    },
  };
}
