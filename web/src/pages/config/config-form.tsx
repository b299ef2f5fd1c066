/**
 * The configuration as a form generated from its schema (`config-schema.ts`) and its values: nested sections
 * as fieldsets, enums as `<select>`s of their words, booleans as checkboxes, numbers as number inputs (whole
 * numbers where the schema says integer), strings as text, lists of strings as comma lists. A key the schema
 * allows to be `null` (not set: its default applies) can be emptied. Secrets (shown by the API as `"***"`)
 * are password fields left empty: typing replaces the secret, leaving it empty keeps it. Each control shows
 * its error (`{path, message}` of the API) and whether a change to it needs a restart. Without the schema the
 * controls follow the types of the values. A filter narrows the form to the keys whose dotted name or
 * description holds its text (the descriptions then show under the keys); each top-level section has an id
 * (`sectionId`) for the page's index.
 */
import { isLiveConfigPath, isLockedConfigPath, LIVE_CONFIG_KEYS } from '../../../../src/config/config.live';
import { FieldError, fieldProps, splitList } from '../../ui/fields';
import { dotted, isObject, isRedacted, leaves, pathKey, type Leaf, type Path } from './config-model';
import type { KeySchema } from './config-schema';

export interface FormState {
  /** The configuration as the API answered it (redacted). */
  original: Record<string, unknown>;
  /** The value shown at a path: the edit if any, else the original. */
  valueOf: (path: Path) => unknown;
  /** Records an edit (an edit equal to the original removes itself). */
  edit: (path: Path, value: Leaf) => void;
  /** Error messages by dotted path. */
  errors: ReadonlyMap<string, string>;
  /** Dotted keys the API said need a restart. */
  restart: ReadonlySet<string>;
  disabled: boolean;
  /** What the configuration's schema says of a key, when it is known. */
  schemaOf: (path: Path) => KeySchema | undefined;
  /** The filter's text, trimmed and lower-cased; empty shows every key. */
  filter: string;
}

/** The dotted keys (leaves and the sections holding them) that `filter` keeps; null when it keeps them all. */
export function visibleKeys(
  original: Record<string, unknown>,
  filter: string,
  schemaOf: (path: Path) => KeySchema | undefined,
): ReadonlySet<string> | null {
  if (!filter) return null;
  const out = new Set<string>();
  for (const { path } of leaves(original).values()) {
    const description = schemaOf(path)?.description ?? '';
    if (!dotted(path).toLowerCase().includes(filter) && !description.toLowerCase().includes(filter)) continue;
    for (let depth = 1; depth <= path.length; depth++) out.add(dotted(path.slice(0, depth)));
  }
  return out;
}

/** The id of a top-level section's fieldset (`general` holds the top-level keys that are not sections). */
export function sectionId(key: string): string {
  return key === GENERAL ? 'cfg-section-general' : controlId([key]);
}

/** The name of the section holding the top-level keys that are not sections. */
export const GENERAL = 'general';

/** The id of the control at `path`. */
export function controlId(path: Path): string {
  return `cfg-${path.join('-').replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** Names of keys that hold secrets: the API shows them as `"***"` once set. */
const SECRET_NAME = /(?:^|_)(?:key|secret|token|password)s?$/;

/**
 * Whether a change at `path` takes effect only after a restart: the server's own list of live keys
 * (src/config/config.live.ts) says so for every key below `path`, or the API reported it after a change.
 */
function needsRestart(path: Path, restart: ReadonlySet<string>): boolean {
  const key = dotted(path);
  for (const marked of restart) if (key === marked || key.startsWith(`${marked}.`)) return true;
  if (isLiveConfigPath(path)) return false;
  // A section holding a live key is mixed: its restart-only keys are marked one by one.
  return !LIVE_CONFIG_KEYS.some((live) => live.startsWith(`${key}.`));
}

/** The badge of a key or section: shown where its parent section does not already say the same. */
function RestartBadge({ path, state }: { path: Path; state: FormState }) {
  if (isLockedConfigPath(path)) {
    if (isLockedConfigPath(path.slice(0, -1))) return null;
    return (
      <>
        {' '}
        <span
          class="badge badge-restart"
          title="Never changed through the API: edit the configuration file and restart"
        >
          file and restart only
        </span>
      </>
    );
  }
  if (!needsRestart(path, state.restart)) return null;
  if (path.length > 1 && needsRestart(path.slice(0, -1), state.restart)) return null;
  return (
    <>
      {' '}
      <span class="badge badge-restart" title="A change here takes effect after a restart">
        needs restart
      </span>
    </>
  );
}

function Control({ path, state }: { path: Path; state: FormState }) {
  const id = controlId(path);
  const name = path[path.length - 1] ?? '';
  const error = state.errors.get(dotted(path));
  const original = (() => {
    let node: unknown = state.original;
    for (const key of path) node = isObject(node) ? node[key] : undefined;
    return node;
  })();
  const value = state.valueOf(path);
  const restart = <RestartBadge path={path} state={state} />;
  const schema = isRedacted(original) ? undefined : state.schemaOf(path);
  // While filtering, each key says what it is for, so a match on the description is plain to see.
  const about = state.filter ? (schema ?? state.schemaOf(path))?.description : undefined;
  const label = (hint?: string) => (
    <>
      <label for={id}>
        {name}
        {hint && <span class="hint"> {hint}</span>}
        {restart}
      </label>
      {about && <span class="hint config-about">{about}</span>}
    </>
  );
  const input = (e: Event) => (e.currentTarget as HTMLInputElement).value;
  const nullable = schema?.nullable ?? original === null;

  if (schema?.options && (original === null || typeof original === 'string')) {
    const options = schema.options;
    const current = typeof value === 'string' ? value : '';
    return (
      <div class="field">
        {label(original === null ? '(not set)' : undefined)}
        <select
          {...fieldProps(id, error)}
          value={current}
          disabled={state.disabled}
          onChange={(e) => {
            const word = e.currentTarget.value;
            state.edit(path, word === '' && nullable ? null : word);
          }}
        >
          {(nullable || current === '') && <option value="">{nullable ? '(not set: default)' : '(choose)'}</option>}
          {current !== '' && !options.includes(current) && <option value={current}>{current}</option>}
          {options.map((word) => (
            <option key={word} value={word}>
              {word}
            </option>
          ))}
        </select>
        <FieldError id={id} error={error} />
      </div>
    );
  }
  const numeric =
    schema !== undefined &&
    schema.types.size > 0 &&
    [...schema.types].every((type) => type === 'integer' || type === 'number');
  const onlyBoolean = schema !== undefined && schema.types.size === 1 && schema.types.has('boolean');

  if (typeof original === 'boolean' || (original === null && onlyBoolean)) {
    return (
      <div class="field check">
        <input
          {...fieldProps(id, error)}
          type="checkbox"
          checked={value === true}
          disabled={state.disabled}
          onChange={(e) => state.edit(path, e.currentTarget.checked)}
        />
        {label()}
        <FieldError id={id} error={error} />
      </div>
    );
  }
  if (isRedacted(original)) {
    if (Array.isArray(original)) {
      return (
        <div class="field">
          {label(`(${original.length} hidden)`)}
          <input {...fieldProps(id, error)} type="text" value="" placeholder="hidden" disabled readOnly />
          <FieldError id={id} error={error} />
        </div>
      );
    }
    return (
      <div class="field">
        {label('(secret: type to replace, leave empty to keep)')}
        <input
          {...fieldProps(id, error)}
          type="password"
          autocomplete="new-password"
          placeholder="hidden"
          value={typeof value === 'string' && value !== original ? value : ''}
          disabled={state.disabled}
          onInput={(e) => state.edit(path, input(e) === '' ? original : input(e))}
        />
        <FieldError id={id} error={error} />
      </div>
    );
  }
  if (typeof original === 'number' || (original === null && numeric)) {
    const whole = numeric && !schema.types.has('number');
    return (
      <div class="field">
        {label(original === null ? '(not set)' : undefined)}
        <input
          {...fieldProps(id, error)}
          type="number"
          step={whole ? '1' : 'any'}
          inputMode={whole ? 'numeric' : 'decimal'}
          value={typeof value === 'number' || typeof value === 'string' ? String(value) : ''}
          disabled={state.disabled}
          onInput={(e) => {
            const text = input(e).trim();
            state.edit(path, text === '' ? null : Number.isFinite(Number(text)) ? Number(text) : text);
          }}
        />
        <FieldError id={id} error={error} />
      </div>
    );
  }
  if (Array.isArray(original)) {
    const strings = original.every((item) => typeof item === 'string');
    const text = Array.isArray(value)
      ? strings
        ? value.join(', ')
        : JSON.stringify(value)
      : typeof value === 'string'
        ? value
        : JSON.stringify(value);
    return (
      <div class="field">
        {label(strings ? '(comma-separated)' : '(JSON list)')}
        <input
          {...fieldProps(id, error)}
          type="text"
          value={text}
          disabled={state.disabled}
          onChange={(e) => {
            const raw = input(e);
            if (strings) return state.edit(path, splitList(raw));
            try {
              state.edit(path, JSON.parse(raw) as unknown);
            } catch {
              state.edit(path, raw);
            }
          }}
        />
        <FieldError id={id} error={error} />
      </div>
    );
  }
  if (isObject(original)) {
    // An empty map (e.g. `provider.pricing` with no entries): edited in the JSON view.
    return (
      <div class="field">
        {label()}
        <span class="muted" id={id}>
          none (add entries in the JSON view)
        </span>
        <FieldError id={id} error={error} />
      </div>
    );
  }
  // Strings, and nulls (a key not set: typing sets it, emptying resets it to the default). A secret not set
  // yet (`api_key`, `secret`, …) is typed into a password field all the same.
  const secret = original === null && SECRET_NAME.test(name);
  return (
    <div class="field">
      {label(original === null ? '(not set)' : undefined)}
      <input
        {...fieldProps(id, error)}
        type={secret ? 'password' : 'text'}
        {...(secret ? { autocomplete: 'new-password' } : {})}
        value={typeof value === 'string' ? value : value === null || value === undefined ? '' : JSON.stringify(value)}
        disabled={state.disabled}
        onInput={(e) => state.edit(path, input(e) === '' && original === null ? null : input(e))}
      />
      <FieldError id={id} error={error} />
    </div>
  );
}

function Section({
  path,
  node,
  state,
  visible,
}: {
  path: Path;
  node: Record<string, unknown>;
  state: FormState;
  visible: ReadonlySet<string> | null;
}) {
  const id = controlId(path);
  const error = path.length > 0 ? state.errors.get(dotted(path)) : undefined;
  const children = Object.entries(node).map(([key, child]) => {
    const childPath = [...path, key];
    if (visible && !visible.has(dotted(childPath))) return null;
    return isObject(child) && Object.keys(child).length > 0 ? (
      <Section key={pathKey(childPath)} path={childPath} node={child} state={state} visible={visible} />
    ) : (
      <Control key={pathKey(childPath)} path={childPath} state={state} />
    );
  });
  if (path.length === 0) return <>{children}</>;
  return (
    <fieldset id={id} aria-describedby={error ? `${id}-error` : undefined}>
      <legend>
        {path[path.length - 1]}
        <RestartBadge path={path} state={state} />
      </legend>
      <FieldError id={id} error={error} />
      {children}
    </fieldset>
  );
}

/** The top-level sections in order: `general` (the top-level keys that are not sections) first, when there is one. */
export function sectionsOf(original: Record<string, unknown>): string[] {
  const names = Object.entries(original)
    .filter(([, v]) => isObject(v))
    .map(([key]) => key);
  return Object.values(original).some((v) => !isObject(v)) ? [GENERAL, ...names] : names;
}

/**
 * The whole configuration as nested fieldsets. Top-level scalars (`data_dir`) come first, in a section. With
 * `visible`, only the keys it holds (and the sections holding them) are shown.
 */
export function ConfigForm({ state, visible }: { state: FormState; visible: ReadonlySet<string> | null }) {
  const scalars = Object.fromEntries(
    Object.entries(state.original).filter(([key, v]) => !isObject(v) && (!visible || visible.has(key))),
  );
  const sections = Object.entries(state.original).filter(
    ([key, v]) => isObject(v) && (!visible || visible.has(key)),
  ) as [string, Record<string, unknown>][];
  return (
    <div class="config-form">
      {Object.keys(scalars).length > 0 && (
        <fieldset id={sectionId(GENERAL)}>
          <legend>{GENERAL}</legend>
          <Section path={[]} node={scalars} state={state} visible={visible} />
        </fieldset>
      )}
      {sections.map(([key, node]) => (
        <Section key={key} path={[key]} node={node} state={state} visible={visible} />
      ))}
    </div>
  );
}
