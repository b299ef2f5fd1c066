/**
 * Which configuration keys take effect while the gateway runs (PUT/PATCH
 * /config, DECISIONS §9). Everything else — host, port, storage, bus,
 * provider type/URL/key/model/timeout, embeddings, channels, data_dir,
 * concurrency of turns, log buffer size — is read once at start-up and
 * needs a restart. `gateway.auth` is never live (spec: Configuration) and
 * cannot be changed through the API at all.
 */

/**
 * Dotted keys applied live; a key also covers everything under it
 * (`security.rate_limits` covers `security.rate_limits.read`, and
 * `provider.pricing` every model entry). Each needs a listener on the
 * settings service that pushes the new value into the running component.
 */
export const LIVE_CONFIG_KEYS: readonly string[] = [
  'logs.level',
  'security.rate_limits',
  'agent.system_prompt',
  'agent.max_tool_iterations',
  'agent.approval_required',
  'budget.daily_usd',
  'provider.pricing',
  'tasks.max_concurrent',
  // Several agents (DECISIONS §17): new sessions and turns take these; an agent's provider needs a restart.
  'default_agent',
  'bindings',
  'agents.*.system_prompt',
  'agents.*.tools',
  'agents.*.approval_required',
  'agents.*.memory_scope',
  'agents.*.budget',
  'agents.*.provider.pricing',
];

/** Keys that can never change at runtime: a change is refused (spec: "never live-reloaded"). */
export const LOCKED_CONFIG_KEYS: readonly string[] = ['gateway.auth'];

const live = LIVE_CONFIG_KEYS.map((key) => key.split('.'));
const locked = LOCKED_CONFIG_KEYS.map((key) => key.split('.'));

function under(path: readonly string[], prefixes: readonly string[][]): boolean {
  return prefixes.some(
    (prefix) => prefix.length <= path.length && prefix.every((key, i) => key === '*' || path[i] === key),
  );
}

/** True when a change at `path` (array of keys) is applied without a restart. */
export function isLiveConfigPath(path: readonly string[]): boolean {
  return under(path, live);
}

/** True when `path` lies under a key that the API may never change (`gateway.auth`). */
export function isLockedConfigPath(path: readonly string[]): boolean {
  return under(path, locked);
}
