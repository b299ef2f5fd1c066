import { resolve } from 'node:path';
import { dataDirConfigPath } from '../config/config.load.js';
import { isLiveConfigPath, isLockedConfigPath } from '../config/config.live.js';
import {
  diffConfigPaths,
  getConfigPath,
  isPlainObject,
  jsonEqual,
  mergeConfigPatch,
  pathsOverlap,
  type PlainObject,
  setConfigPath,
} from '../config/config.merge.js';
import { REDACTED, secretPathsIn } from '../config/config.redact.js';
import { type Config, type ConfigIssue, validateConfig } from '../config/config.schema.js';
import { applyFileEdits, fileData, fileText, type FileEdit, openConfigFile, writeFileAtomic } from './settings.file.js';

/**
 * The settings service (DECISIONS §9, Config): the single owner of the
 * running configuration. It validates partial changes against the start-up
 * schema, refuses changes to `gateway.auth`, writes PUT changes into the
 * configuration file and pushes live keys to the components that registered
 * an `onChange` listener.
 *
 * Two configurations are tracked:
 * - `active`: what this process runs with (GET /config). Restart-only keys
 *   keep their start-up values here even after a PUT changed them.
 * - `persisted`: what the next start will load (start-up config plus every
 *   PUT). PUT decides what to write by comparing against it, so live-only
 *   PATCHes never leak into the file and a GET→PUT round trip writes nothing.
 */

/** Called after a change was applied: the new active config and the dotted keys that changed live. */
export type SettingsListener = (next: Config, changedPaths: string[]) => void;

/** The answer of POST /config/validate. */
export interface ConfigCheck {
  valid: boolean;
  errors: ConfigIssue[];
}

/** The outcome of an applied change (PUT/PATCH /config). */
export interface ConfigChangeResult {
  /** The new active configuration (not redacted: the route redacts it). */
  config: Config;
  /** Dotted keys whose new values are now in effect. */
  applied: string[];
  /** Dotted keys changed by this request that take effect only after a restart. */
  restartRequired: string[];
  /** The file written, or null (PATCH, or nothing to write). */
  written: string | null;
}

/** A change was refused; nothing was written or applied. `issues` never carry secret values. */
export class ConfigChangeError extends Error {
  constructor(
    readonly issues: ConfigIssue[],
    message = 'configuration change rejected',
  ) {
    super(message);
    this.name = 'ConfigChangeError';
  }
}

/** Options of `SettingsService`. */
export interface SettingsServiceOptions {
  /** The configuration the gateway started with. */
  config: Config;
  /** The file loaded at start-up (`--config`, `GATEHOUSE_CONFIG`, ./gatehouse.yaml), or null. */
  configPath: string | null;
  /** The raw object of that file (`loadConfig().fileObject`): the base of a write when the file is gone. */
  fileObject?: PlainObject;
  /** Directory relative `data_dir` values resolve against (as at start-up); default `process.cwd()`. */
  cwd?: string;
  /** A listener threw: the change stays applied; report it (log). */
  onListenerError?: (err: unknown) => void;
  /**
   * Checks of a valid configuration that need the running gateway (the agents' tool names against the tools
   * it has): their issues refuse a change as the schema's do.
   */
  check?: (config: Config) => ConfigIssue[];
}

/** The message for any change under `gateway.auth` (spec: Configuration). */
export const AUTH_LOCKED_MESSAGE =
  'authentication settings are never live-reloaded: edit the configuration file and restart the gateway';

/** The message for a restart-only key in a PATCH (live only, never persisted). */
export const PATCH_RESTART_MESSAGE =
  'takes effect only after a restart, and PATCH is not persisted: use PUT to write it to the configuration file';

/** Freezes a value and everything under it (iterative: no depth can exhaust the stack). */
function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null || Object.isFrozen(node)) continue;
    Object.freeze(node);
    for (const child of Object.values(node)) pending.push(child);
  }
  return value;
}

const dotted = (path: readonly string[]): string => path.join('.');

function uniqueIssues(issues: ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function uniquePaths(paths: string[][]): string[][] {
  const seen = new Set<string>();
  return paths.filter((path) => {
    const key = path.join('\u0000');
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Replaces `"***"` at secret keys with the secret it stands for in `base`
 * (so a client can send back what GET returned). In a list, each `"***"`
 * element takes the element at the same position.
 */
export function restoreRedactedSecrets(
  partial: PlainObject,
  base: Config,
): { patch: PlainObject; errors: ConfigIssue[] } {
  const patch = structuredClone(partial);
  const errors: ConfigIssue[] = [];
  for (const path of secretPathsIn(patch)) {
    const sent = getConfigPath(patch, path);
    const current = getConfigPath(base, path);
    if (sent === REDACTED) {
      setConfigPath(patch, path, current);
    } else if (Array.isArray(sent) && sent.some((v) => v === REDACTED)) {
      const list: readonly unknown[] = Array.isArray(current) ? current : [];
      const restored = (sent as readonly unknown[]).map((value, i) => {
        if (value !== REDACTED) return value;
        if (i < list.length) return list[i];
        errors.push({
          path: dotted([...path, String(i)]),
          message: `"${REDACTED}" stands for a current secret, and there is none here`,
        });
        return value;
      });
      setConfigPath(patch, path, restored);
    }
  }
  return { patch, errors };
}

/** One partial evaluated against a base configuration. */
interface Evaluation {
  /** The partial with redacted secrets restored from the base. */
  patch: PlainObject;
  /** The validated result, or null when invalid. */
  next: Config | null;
  /** Leaf paths that differ from the base. */
  changed: string[][];
  errors: ConfigIssue[];
}

/** The active and persisted configurations plus listeners; see the module comment. */
export class SettingsService {
  private active: Config;
  private persisted: Config;
  private readonly listeners = new Set<SettingsListener>();
  private readonly cwd: string;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: SettingsServiceOptions) {
    this.cwd = options.cwd ?? process.cwd();
    const initial = structuredClone(options.config);
    initial.data_dir = resolve(this.cwd, initial.data_dir); // as loadConfig does; a no-op for its output
    this.active = deepFreeze(initial);
    this.persisted = this.active;
  }

  /** The running configuration (deep-frozen: never mutate it; it is replaced on each change). */
  current(): Config {
    return this.active;
  }

  /** The file PUT writes: the start-up configuration file, else `<data_dir>/gatehouse.yaml`. */
  configFile(): string {
    return this.options.configPath ?? dataDirConfigPath(this.active.data_dir);
  }

  /** Registers a listener for applied changes; returns the function that removes it. */
  onChange(listener: SettingsListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * POST /config/validate: the partial merged over the running configuration
   * and validated as at start-up, plus an error for each change under
   * `gateway.auth`. Changes nothing.
   */
  validate(partial: PlainObject): ConfigCheck {
    const evaluation = this.evaluate(this.active, partial);
    const errors = uniqueIssues([...evaluation.errors, ...this.lockedIssues(evaluation.changed)]);
    return { valid: errors.length === 0, errors };
  }

  /**
   * PUT (`persist: true`) or PATCH (`persist: false`) /config. Changes are
   * serialised. Throws ConfigChangeError (nothing written, nothing applied)
   * for an invalid result, any change under `gateway.auth`, and — for PATCH —
   * any change to a key that needs a restart. PUT writes the file first and
   * applies live keys only once it is safely on disk.
   */
  update(partial: PlainObject, options: { persist: boolean }): Promise<ConfigChangeResult> {
    const run = this.tail.then(() => this.apply(partial, options.persist));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async apply(partial: PlainObject, persist: boolean): Promise<ConfigChangeResult> {
    const live = this.evaluate(this.active, partial);
    const file = persist ? this.evaluate(this.persisted, partial) : null;
    const changed = uniquePaths([...live.changed, ...(file?.changed ?? [])]);
    const issues = [...live.errors, ...(file?.errors ?? []), ...this.lockedIssues(changed)];
    if (!persist) {
      for (const path of live.changed) {
        if (!isLiveConfigPath(path) && !isLockedConfigPath(path)) {
          issues.push({ path: dotted(path), message: PATCH_RESTART_MESSAGE });
        }
      }
    }
    if (issues.length > 0 || !live.next) throw new ConfigChangeError(uniqueIssues(issues));

    const appliedPaths = live.changed.filter((path) => isLiveConfigPath(path));
    const nextActive = persist ? this.withPaths(this.active, live.next, appliedPaths) : live.next;

    let written: string | null = null;
    let restartRequired: string[] = [];
    let nextPersisted = this.persisted;
    if (file?.next) {
      written = await this.writeFile(file.patch, file.changed);
      nextPersisted = file.next;
      restartRequired = changed
        .filter((path) => !isLiveConfigPath(path))
        .filter((path) => !jsonEqual(getConfigPath(nextActive, path), getConfigPath(nextPersisted, path)))
        .map(dotted);
    }

    this.active = deepFreeze(nextActive);
    this.persisted = persist ? deepFreeze(nextPersisted) : this.persisted;
    const applied = appliedPaths.map(dotted);
    if (applied.length > 0) this.notify(applied);
    return { config: this.active, applied, restartRequired, written };
  }

  /** Merges, restores secrets, validates and diffs one partial against `base`. */
  private evaluate(base: Config, partial: PlainObject): Evaluation {
    const { patch, errors } = restoreRedactedSecrets(partial, base);
    const result = validateConfig(mergeConfigPatch(base, patch));
    if (!result.ok) return { patch, next: null, changed: [], errors: [...errors, ...result.errors] };
    const next = result.config;
    const checked = this.options.check?.(next) ?? [];
    if (checked.length > 0) return { patch, next: null, changed: [], errors: [...errors, ...checked] };
    next.data_dir = resolve(this.cwd, next.data_dir);
    return { patch, next, changed: diffConfigPaths(base, next), errors };
  }

  private lockedIssues(changed: string[][]): ConfigIssue[] {
    return changed
      .filter((path) => isLockedConfigPath(path))
      .map((path) => ({ path: dotted(path), message: AUTH_LOCKED_MESSAGE }));
  }

  /** `base` with the values of `source` at `paths` (the live part of a PUT). */
  private withPaths(base: Config, source: Config, paths: string[][]): Config {
    const out = structuredClone(base) as unknown as PlainObject;
    for (const path of paths) setConfigPath(out, path, getConfigPath(source, path));
    const result = validateConfig(out);
    if (!result.ok) throw new Error('live configuration change produced an invalid configuration');
    result.config.data_dir = base.data_dir;
    return result.config;
  }

  /**
   * Writes the change into the configuration file: only keys whose value
   * differs from what the next start would load, plus removals for `null`.
   * Returns the path written, or null when the file would not change.
   */
  private async writeFile(patch: PlainObject, changed: string[][]): Promise<string | null> {
    const edits: FileEdit[] = [];
    // Depth first in key order (the order new keys take in the file), without recursion.
    const pending: Array<{ path: string[]; value: unknown }> = [];
    const visit = (node: PlainObject, path: string[]): void => {
      const entries = Object.entries(node);
      for (let i = entries.length - 1; i >= 0; i--)
        pending.push({ path: [...path, entries[i]![0]], value: entries[i]![1] });
    };
    visit(patch, []);
    while (pending.length > 0) {
      const { path: at, value } = pending.pop()!;
      if (value === null) edits.push({ kind: 'delete', path: at });
      else if (isPlainObject(value)) visit(value, at);
      else if (changed.some((c) => pathsOverlap(c, at))) edits.push({ kind: 'set', path: at, value });
    }
    if (edits.length === 0) return null;

    const target = await openConfigFile(this.configFile(), this.options.fileObject ?? {});
    const before = target.originalText === null ? null : fileData(target);
    applyFileEdits(target, edits);
    const data = fileData(target);
    // Compare data, not text: re-printing may respace a flow list even when no value changed.
    if (jsonEqual(before ?? {}, data)) return null;
    const check = validateConfig(data);
    if (!check.ok) {
      throw new ConfigChangeError(
        check.errors.map((issue) => ({ path: issue.path, message: `in the configuration file: ${issue.message}` })),
      );
    }
    await writeFileAtomic(target.path, fileText(target));
    return target.path;
  }

  private notify(applied: string[]): void {
    for (const listener of this.listeners) {
      try {
        listener(this.active, applied);
      } catch (err) {
        this.options.onListenerError?.(err);
      }
    }
  }
}
