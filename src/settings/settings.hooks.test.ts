import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../config/config.schema.js';
import { createLogger } from '../logs/logger.js';
import { createRateLimiter } from '../security/rate-limit.js';
import {
  agentListener,
  type LiveAgentSettings,
  logLevelListener,
  pinoLevelName,
  rateLimitListener,
  taskConcurrencyListener,
} from './settings.hooks.js';
import { SettingsService } from './settings.service.js';

function service(): SettingsService {
  return new SettingsService({ config: defaultConfig(), configPath: null });
}

describe('live-apply listeners', () => {
  it('logs.level changes the root logger and its existing children', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', stdout: { write: (line) => void lines.push(line) } });
    const child = logger.child({ source: 'turns' });
    const settings = service();
    settings.onChange(logLevelListener(logger));
    child.debug('hidden');
    await settings.update({ logs: { level: 'debug' } }, { persist: false });
    child.debug('shown');
    await settings.update({ logs: { level: 'warning' } }, { persist: false });
    expect(logger.level).toBe('warn');
    child.info('hidden again');
    expect(lines.map((l) => (JSON.parse(l) as { message: string }).message)).toEqual(['shown']);
    expect(pinoLevelName('warning')).toBe('warn');
  });

  it('security.rate_limits changes the limiter in place', async () => {
    const limits = { ...defaultConfig().security.rate_limits };
    const limiter = createRateLimiter({ limits, clock: { now: () => 1_000 } });
    const settings = service();
    settings.onChange(rateLimitListener(limits));
    await settings.update({ security: { rate_limits: { lifecycle: 1 } } }, { persist: false });
    expect(limiter.hit('tok', 'lifecycle')).toMatchObject({ allowed: true, limit: 1 });
    expect(limiter.hit('tok', 'lifecycle').allowed).toBe(false);
    await settings.update({ security: { rate_limits: { lifecycle: 3 } } }, { persist: false });
    expect(limiter.hit('tok', 'lifecycle')).toMatchObject({ allowed: true, limit: 3, remaining: 1 });
  });

  it('agent keys reach the agent callback with all five values; other keys do not', async () => {
    const seen: LiveAgentSettings[] = [];
    const settings = service();
    settings.onChange(agentListener((s) => seen.push(s)));
    await settings.update({ logs: { level: 'debug' } }, { persist: false });
    expect(seen).toHaveLength(0);
    await settings.update(
      {
        agent: { system_prompt: 'Be brief.', approval_required: ['shell'] },
        provider: { pricing: { m: { input_per_mtok: 1, output_per_mtok: 2 } } },
        budget: { daily_usd: 3 },
      },
      { persist: false },
    );
    expect(seen).toEqual([
      {
        systemPrompt: 'Be brief.',
        maxToolIterations: 8,
        approvalRequired: new Set(['shell']),
        pricing: { m: { input_per_mtok: 1, output_per_mtok: 2 } },
        dailyBudgetUsd: 3,
      },
    ]);
  });

  it('tasks.max_concurrent reaches the task callback', async () => {
    const seen: number[] = [];
    const settings = service();
    settings.onChange(taskConcurrencyListener((n) => seen.push(n)));
    await settings.update({ tasks: { max_concurrent: 5 } }, { persist: false });
    expect(seen).toEqual([5]);
  });
});
