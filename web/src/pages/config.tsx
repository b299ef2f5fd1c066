/**
 * Config (`#/config`): the active configuration as the API shows it (every secret as `"***"`), as a form
 * generated from the configuration's schema (`components.schemas.Config` of the OpenAPI document: enums as
 * selects, booleans as checkboxes) and as raw YAML or JSON, editable too. Changes are validated (POST
 * /config/validate), listed (old → new), then applied and saved (PUT) or applied for this run only (PATCH);
 * the API's `{path, message}` problems show at their field. Only changed keys are sent, so a redacted
 * placeholder never goes back as a value. Keys the API reports as needing a restart (PUT's
 * `X-Config-Restart-Required`, PATCH's refusals) are marked. Changes made elsewhere show at once through the
 * live feed's `config` topic (event `updated`), and a slow refresh catches anything the feed missed. The YAML
 * library is loaded only when the YAML view opens. Changing needs an admin token; an api token reads.
 * Finding a key: an index of the top-level sections (a sticky side list on a wide screen, links above the form
 * on a narrow one) and a filter by key or description. The outcome of a validation or a change shows in a bar
 * kept at the bottom of the screen next to the buttons, and an invalid validation moves focus to the first
 * marked field.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, apiError, must } from '../errors';
import type { PageProps } from '../page';
import { ErrorBox, useLive, useLoad, useThrottled } from '../ui';
import { FieldError, fieldProps, usePoll } from '../ui/fields';
import { ConfigForm, controlId, sectionId, sectionsOf, visibleKeys, type FormState } from './config/config-form';
import { keySchema, loadConfigSchema } from './config/config-schema';
import type * as YamlText from './config/yaml';
import {
  changesOf,
  dotted,
  isObject,
  isRedacted,
  issuesByPath,
  leaves,
  merged,
  patchOf,
  pathKey,
  same,
  shown,
  valueAt,
  type Leaf,
  type Path,
} from './config/config-model';
import './config/config.css';

/** The fallback refresh, for changes the live feed did not bring (e.g. while it reconnects). */
const REFRESH_MS = 30_000;

type View = 'form' | 'yaml' | 'json';
type RawFormat = Exclude<View, 'form'>;

type Yaml = typeof YamlText;
let yamlModule: Promise<Yaml> | undefined;

/** The YAML library, loaded on first use (its own chunk, so the page's code stays small). */
function loadYaml(): Promise<Yaml> {
  yamlModule ??= import('./config/yaml').catch((error: unknown) => {
    yamlModule = undefined;
    throw error;
  });
  return yamlModule;
}

/** `value` as the raw view's text. */
function rawText(value: unknown, format: RawFormat, yaml: Yaml | undefined): string {
  if (format === 'json' || !yaml) return JSON.stringify(value, null, 2);
  return yaml.stringify(value, { indent: 2, lineWidth: 0 });
}

/** The raw view's text as a value, or the reason it cannot be read. */
function parseRaw(text: string, format: RawFormat, yaml: Yaml | undefined): { value: unknown } | { error: string } {
  try {
    if (format === 'json') return { value: JSON.parse(text) as unknown };
    if (!yaml) return { error: 'The YAML reader is still loading.' };
    return { value: yaml.parse(text) as unknown };
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return { error: `Not valid ${format === 'json' ? 'JSON' : 'YAML'}: ${reason}` };
  }
}

type Edits = ReadonlyMap<string, { path: Path; value: Leaf }>;

interface Check {
  /** The patch that was validated (JSON), so a later edit asks for a new validation. */
  patch: string;
  valid: boolean;
  errors: ReadonlyMap<string, string>;
}

interface Outcome {
  mode: 'saved' | 'run';
  applied: string[];
  restart: string[];
}

function headerList(response: Response, name: string): string[] {
  return (response.headers.get(name) ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean);
}

/** The fields with a problem as links that move focus to them (a problem with no field is listed at the top). */
function ProblemLinks({ errors, known }: { errors: ReadonlyMap<string, string>; known: ReadonlySet<string> }) {
  const atFields = [...errors].filter(([path]) => known.has(path));
  if (atFields.length === 0) return null;
  return (
    <ul class="config-problems" aria-label="Fields with problems">
      {atFields.map(([path, message]) => {
        const id = controlId(path.split('.'));
        return (
          <li key={path}>
            <a
              href={`#${id}`}
              onClick={(e) => {
                e.preventDefault();
                const field = document.getElementById(id);
                field?.scrollIntoView({ block: 'center' });
                field?.focus({ preventScroll: true });
              }}
            >
              <code>{path}</code>
            </a>
            : {message}
          </li>
        );
      })}
    </ul>
  );
}

export default function ConfigPage({ api, role, live }: PageProps) {
  const admin = role === 'admin';
  const config = useLoad(async () => {
    const [active, schema] = await Promise.all([must(api.GET('/api/v1/config')), loadConfigSchema(api)]);
    return { active: active, schema };
  }, [api]);
  const [edits, setEdits] = useState<Edits>(new Map());
  const [view, setView] = useState<View>('form');
  const [yaml, setYaml] = useState<Yaml | undefined>(undefined);
  const [rawError, setRawError] = useState<string | undefined>(undefined);
  const [rawValue, setRawValue] = useState('');
  const [check, setCheck] = useState<Check | undefined>(undefined);
  const [failure, setFailure] = useState<{ error: unknown; fields: ReadonlyMap<string, string> } | undefined>();
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const [restart, setRestart] = useState<ReadonlySet<string>>(new Set());
  const [busy, setBusy] = useState(false);
  const [filterText, setFilterText] = useState('');
  const filter = filterText.trim().toLowerCase();
  // Bumped when a validation or a change comes back with problems at fields: focus moves to the first one.
  const [problemsShown, setProblemsShown] = useState(0);
  const formRef = useRef<HTMLFormElement>(null);

  const original = config.data?.active;
  const schema = config.data?.schema;
  const refresh = useThrottled(config.reload, 300);
  useLive(live, ['config'], (event) => {
    if (event.event === 'updated') refresh();
  });
  usePoll(config.reload, REFRESH_MS, !busy);

  const changes = useMemo(() => (original ? changesOf(original, edits) : []), [original, edits]);
  const patch = useMemo(() => patchOf(changes), [changes]);
  const patchJson = JSON.stringify(patch);
  const validated = check !== undefined && check.patch === patchJson;

  // The raw view follows the configuration while the operator has not edited anything.
  useEffect(() => {
    if (view !== 'form' && original && edits.size === 0) {
      setRawValue(rawText(original, view, yaml));
      setRawError(undefined);
    }
  }, [original, view, yaml, edits.size]);

  const errors = useMemo(() => {
    const out = new Map<string, string>();
    if (validated) for (const [path, message] of check.errors) out.set(path, message);
    if (failure) for (const [path, message] of failure.fields) out.set(path, message);
    return out;
  }, [check, validated, failure]);

  useEffect(() => {
    if (problemsShown === 0) return;
    const first = formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]');
    if (!first) return;
    first.scrollIntoView({ block: 'center' });
    first.focus({ preventScroll: true });
  }, [problemsShown]);

  const schemaOfKey = (path: Path) => keySchema(schema, path);
  const visible = useMemo(
    () => (original ? visibleKeys(original, filter, (path) => keySchema(schema, path)) : null),
    [original, filter, schema],
  );

  if (!original) {
    return (
      <section aria-labelledby="config-title">
        <h1 id="config-title">Config</h1>
        {config.error !== undefined ? <ErrorBox error={config.error} /> : <p class="loading">Loading…</p>}
      </section>
    );
  }

  const paths = leaves(original);
  const known = new Set([...paths.values()].map((leaf) => dotted(leaf.path)));
  const sections = sectionsOf(original);
  const shownSections = sections.filter((key) =>
    !visible
      ? true
      : key === 'general'
        ? [...visible].some((k) => !k.includes('.') && !sections.includes(k))
        : visible.has(key),
  );
  const matching = visible ? [...paths.values()].filter((leaf) => visible.has(dotted(leaf.path))).length : paths.size;
  const jump = (key: string) => {
    const target = document.getElementById(sectionId(key));
    if (!target) return;
    target.scrollIntoView({ block: 'start' });
    // The section's first control takes focus, so the keyboard continues there.
    target.querySelector<HTMLElement>('input, select, textarea')?.focus({ preventScroll: true });
  };
  const edit = (path: Path, value: Leaf) => {
    setEdits((old) => {
      const next = new Map(old);
      if (same(valueAt(original, path), value)) next.delete(pathKey(path));
      else next.set(pathKey(path), { path, value });
      return next;
    });
    setFailure(undefined);
  };
  const state: FormState = {
    original,
    // A value the edits set to null shows as null, not as the original.
    valueOf: (path) => {
      const entry = edits.get(pathKey(path));
      return entry ? entry.value : valueAt(original, path);
    },
    edit,
    errors,
    restart,
    disabled: !admin || busy,
    schemaOf: schemaOfKey,
    filter,
  };

  const show = (next: View) => {
    if (next === 'form' || next === view) {
      setView(next);
      return;
    }
    const open = (library: Yaml | undefined) => {
      setRawValue(rawText(merged(original, edits), next, library));
      setRawError(undefined);
      setView(next);
    };
    if (next === 'json' || yaml) {
      open(yaml);
      return;
    }
    loadYaml().then(
      (library) => {
        setYaml(library);
        open(library);
      },
      (error: unknown) => setFailure({ error, fields: new Map() }),
    );
  };
  const onRaw = (text: string) => {
    if (view === 'form') return;
    setRawValue(text);
    const read = parseRaw(text, view, yaml);
    if ('error' in read) {
      setRawError(read.error);
      return;
    }
    const parsed = read.value;
    if (!isObject(parsed)) {
      setRawError(`The configuration is ${view === 'json' ? 'a JSON object' : 'a YAML mapping'} of keys.`);
      return;
    }
    setRawError(undefined);
    const next = new Map<string, { path: Path; value: Leaf }>();
    for (const [key, leaf] of leaves(parsed)) {
      if (!same(valueAt(original, leaf.path), leaf.value)) next.set(key, leaf);
    }
    setEdits(next);
    setFailure(undefined);
  };

  /** Brings the first field with a problem into view (clearing a filter that hides one of them). */
  const showProblems = (found: ReadonlyMap<string, string>) => {
    if (found.size === 0) return;
    if (visible && [...found.keys()].some((path) => known.has(path) && !visible.has(path))) setFilterText('');
    setProblemsShown((n) => n + 1);
  };

  const validate = async () => {
    setBusy(true);
    setOutcome(undefined);
    setFailure(undefined);
    try {
      const result = await must(api.POST('/api/v1/config/validate', { body: patch }));
      const found = issuesByPath(result.errors);
      setCheck({ patch: patchJson, valid: result.valid, errors: found });
      if (!result.valid) showProblems(found);
    } catch (error) {
      setFailure({ error, fields: new Map() });
    } finally {
      setBusy(false);
    }
  };

  const apply = async (mode: 'saved' | 'run') => {
    setBusy(true);
    setFailure(undefined);
    try {
      const call =
        mode === 'saved' ? api.PUT('/api/v1/config', { body: patch }) : api.PATCH('/api/v1/config', { body: patch });
      const { error, response } = await call;
      if (!response.ok || error !== undefined) throw apiError(error, response);
      const done: Outcome = {
        mode,
        applied: headerList(response, 'x-config-applied'),
        restart: headerList(response, 'x-config-restart-required'),
      };
      setOutcome(done);
      if (done.restart.length > 0) setRestart((old) => new Set([...old, ...done.restart]));
      setEdits(new Map());
      setCheck(undefined);
      config.reload();
    } catch (error) {
      const fields = error instanceof ApiError ? issuesByPath(error.details) : new Map<string, string>();
      const needing = [...fields].filter(([, message]) => /restart/i.test(message)).map(([path]) => path);
      if (needing.length > 0) setRestart((old) => new Set([...old, ...needing]));
      setFailure({ error, fields });
      showProblems(fields);
    } finally {
      setBusy(false);
    }
  };

  const reset = () => {
    setEdits(new Map());
    setCheck(undefined);
    setFailure(undefined);
    if (view !== 'form') {
      setRawValue(rawText(original, view, yaml));
      setRawError(undefined);
    }
  };

  // Problems whose path is not a control of the form (or a raw view hides the form) are listed at the top.
  const elsewhere = [...errors].filter(([path]) => view !== 'form' || !known.has(path));
  const rawName = view === 'json' ? 'JSON' : 'YAML';

  return (
    <section aria-labelledby="config-title">
      <h1 id="config-title">Config</h1>
      {!admin && (
        <p class="card" role="note">
          You are signed in with an api token: the configuration is shown read-only. Changing it needs an admin token.
        </p>
      )}
      {config.error !== undefined && <ErrorBox error={config.error} />}
      <p class="muted">Secrets are never shown. Only the keys you change are sent.</p>

      <div class="actions config-views" role="group" aria-label="View">
        <button type="button" class="secondary" aria-pressed={view === 'form'} onClick={() => show('form')}>
          Form
        </button>
        <button type="button" class="secondary" aria-pressed={view === 'yaml'} onClick={() => show('yaml')}>
          Raw YAML
        </button>
        <button type="button" class="secondary" aria-pressed={view === 'json'} onClick={() => show('json')}>
          Raw JSON
        </button>
      </div>

      {elsewhere.length > 0 && (
        <ul class="error-box" aria-label="Problems">
          {elsewhere.map(([path, message]) => (
            <li key={path}>
              <code>{path || '(configuration)'}</code>: {message}
            </li>
          ))}
        </ul>
      )}

      {view === 'form' && (
        <div class="toolbar config-filter" role="search" aria-label="Find a key">
          <div class="field">
            <label for="config-filter">Filter keys</label>
            <input
              id="config-filter"
              type="search"
              value={filterText}
              placeholder="key or description, e.g. timeout"
              autoComplete="off"
              spellcheck={false}
              aria-describedby="config-filter-count"
              onInput={(e) => setFilterText(e.currentTarget.value)}
            />
          </div>
          <span id="config-filter-count" class="muted" role="status">
            {filter ? `${matching} of ${paths.size} keys match` : `${paths.size} keys`}
          </span>
        </div>
      )}

      <div class={view === 'form' ? 'config-layout' : undefined}>
        {view === 'form' && (
          <nav class="config-index" aria-label="Config sections">
            <h2 class="config-index-title">Sections</h2>
            {shownSections.length === 0 ? (
              <p class="muted">No key matches “{filterText.trim()}”.</p>
            ) : (
              <ul>
                {shownSections.map((key) => (
                  <li key={key}>
                    <a
                      href={`#${sectionId(key)}`}
                      onClick={(e) => {
                        // The address holds the page's route: jump without changing it.
                        e.preventDefault();
                        jump(key);
                      }}
                    >
                      {key}
                    </a>
                  </li>
                ))}
              </ul>
            )}
          </nav>
        )}
        <form
          ref={formRef}
          aria-label="Configuration"
          onSubmit={(e) => {
            e.preventDefault();
            void validate();
          }}
        >
          {view === 'form' ? (
            <ConfigForm state={state} visible={visible} />
          ) : (
            <div class="field">
              <label for="config-raw">
                Configuration ({rawName}) <span class="hint">(secrets as "***": left as they are, they are kept)</span>
              </label>
              <textarea
                {...fieldProps('config-raw', rawError)}
                class="code config-raw"
                data-format={view}
                spellcheck={false}
                autocapitalize="off"
                readOnly={!admin}
                value={rawValue}
                onInput={(e) => onRaw(e.currentTarget.value)}
              />
              <FieldError id="config-raw" error={rawError} />
            </div>
          )}

          <section class="config-changes card" aria-labelledby="config-changes-title">
            <h2 id="config-changes-title">Changes</h2>
            {changes.length === 0 ? (
              <p class="muted">No changes.</p>
            ) : (
              <ul aria-label="Changed keys">
                {changes.map((change) => {
                  const secret = isRedacted(change.before);
                  return (
                    <li key={pathKey(change.path)} data-path={dotted(change.path)}>
                      <a
                        href={`#${controlId(change.path)}`}
                        onClick={(e) => {
                          e.preventDefault();
                          document.getElementById(controlId(change.path))?.focus();
                        }}
                      >
                        <code>{dotted(change.path)}</code>
                      </a>
                      : {shown(change.before, secret)} → {shown(change.after, secret)}
                    </li>
                  );
                })}
              </ul>
            )}
          </section>

          {/* Kept at the bottom of the screen: the outcome shows where the buttons are, however far the form runs. */}
          <div class="config-actionbar">
            <div class="config-outcome" role="status">
              {validated && check.valid && <p>Valid: ready to apply.</p>}
              {validated && !check.valid && (
                <>
                  <p class="field-error">Not valid: see the marked fields.</p>
                  <ProblemLinks errors={check.errors} known={known} />
                </>
              )}
              {outcome && (
                <p class="config-ok">
                  {outcome.mode === 'saved' ? 'Saved to the configuration file.' : 'Applied for this run (not saved).'}{' '}
                  {outcome.applied.length > 0 && <>In effect now: {outcome.applied.join(', ')}. </>}
                  {outcome.restart.length > 0 && <>Takes effect after a restart: {outcome.restart.join(', ')}.</>}
                </p>
              )}
            </div>
            {failure && <ErrorBox error={failure.error} />}
            {failure && failure.fields.size > 0 && <ProblemLinks errors={failure.fields} known={known} />}
            {admin && (
              <div class="actions">
                <button type="submit" disabled={busy || changes.length === 0 || rawError !== undefined}>
                  Validate
                </button>
                <button type="button" disabled={busy || !validated || !check.valid} onClick={() => void apply('saved')}>
                  Apply and save
                </button>
                <button
                  type="button"
                  class="secondary"
                  disabled={busy || !validated || !check.valid}
                  onClick={() => void apply('run')}
                >
                  Apply for this run
                </button>
                <button type="button" class="secondary" disabled={busy || changes.length === 0} onClick={reset}>
                  Discard changes
                </button>
              </div>
            )}
          </div>
        </form>
      </div>
    </section>
  );
}
