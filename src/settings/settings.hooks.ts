import type { Config, LogLevel } from '../config/config.schema.js';
import type { RateGroup } from '../lib/rate-groups.js';
import type { SettingsListener } from './settings.service.js';

/**
 * Ready-made `SettingsService.onChange` listeners that push live keys into
 * running components (see `LIVE_CONFIG_KEYS`). `gateway.ts` registers them;
 * each one ignores changes that are not its own.
 */

const PINO_LEVELS: Record<LogLevel, string> = { debug: 'debug', info: 'info', warning: 'warn', error: 'error' };

/** The pino level name for a configured `logs.level` (`warning` → `warn`). */
export function pinoLevelName(level: LogLevel): string {
  return PINO_LEVELS[level];
}

function touches(changedPaths: readonly string[], key: string): boolean {
  return changedPaths.some((path) => path === key || path.startsWith(`${key}.`));
}

/**
 * `logs.level` → the root logger's level. Pino child loggers that did not set
 * their own level follow their parent, so the whole process changes at once.
 */
export function logLevelListener(logger: { level: string }): SettingsListener {
  return (next, changedPaths) => {
    if (touches(changedPaths, 'logs.level')) logger.level = pinoLevelName(next.logs.level);
  };
}

/**
 * `security.rate_limits.*` → the limits object the rate limiter reads on every
 * request. Pass the same (mutable) object given to `createRateLimiter`; counts
 * in the current window are kept.
 */
export function rateLimitListener(limits: Record<RateGroup, number>): SettingsListener {
  return (next, changedPaths) => {
    if (touches(changedPaths, 'security.rate_limits')) Object.assign(limits, next.security.rate_limits);
  };
}

/** The live agent settings, in the turn runner's terms (`AgentOptions` + daily budget). */
export interface LiveAgentSettings {
  systemPrompt: string | null;
  maxToolIterations: number;
  approvalRequired: ReadonlySet<string>;
  pricing: Record<string, { input_per_mtok: number; output_per_mtok: number }>;
  dailyBudgetUsd: number | null;
}

/** Reads the live agent settings from a configuration. */
export function liveAgentSettings(config: Config): LiveAgentSettings {
  return {
    systemPrompt: config.agent.system_prompt,
    maxToolIterations: config.agent.max_tool_iterations,
    approvalRequired: new Set(config.agent.approval_required),
    pricing: structuredClone(config.provider.pricing),
    dailyBudgetUsd: config.budget.daily_usd,
  };
}

const AGENT_KEYS = [
  'agent.system_prompt',
  'agent.max_tool_iterations',
  'agent.approval_required',
  'provider.pricing',
  'budget.daily_usd',
];

/**
 * `agent.system_prompt`, `agent.max_tool_iterations`, `agent.approval_required`,
 * `provider.pricing`, `budget.daily_usd` → `apply` with all five values
 * (turns that start after the change use them).
 */
export function agentListener(apply: (settings: LiveAgentSettings) => void): SettingsListener {
  return (next, changedPaths) => {
    if (AGENT_KEYS.some((key) => touches(changedPaths, key))) apply(liveAgentSettings(next));
  };
}

/** `tasks.max_concurrent` → `apply` (for the task runner). */
export function taskConcurrencyListener(apply: (maxConcurrent: number) => void): SettingsListener {
  return (next, changedPaths) => {
    if (touches(changedPaths, 'tasks.max_concurrent')) apply(next.tasks.max_concurrent);
  };
}
