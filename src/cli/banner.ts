import type { ProviderSource } from '../config/config.load.js';
import { dashboardSignInLink } from '../security/admin-token.js';
import { style } from './terminal.js';

/**
 * The start-up banner of `gatehouse serve`: where the gateway listens, which provider and model it uses and why,
 * and the admin token (shown once, on the first start; later only where its file is). Every start says how to open
 * the dashboard: the first with a link that signs in, later ones with its address and where the token is. Human
 * lines on a terminal, JSON lines (the log entry's shape) otherwise, never both. Written to standard error, never
 * through the logger: it is shown whatever `logs.level` is, and the first-start token reaches no log line, log
 * file or log API.
 */

/** What the banner tells. */
export interface BannerFacts {
  /** Base URL the gateway listens on, e.g. `http://127.0.0.1:58123`. */
  url: string;
  apiPrefix: string;
  version: string;
  provider: {
    type: string;
    model: string;
    /** True when `provider.model` is set; false when the provider's default model is used. */
    modelConfigured: boolean;
    source: ProviderSource;
    /** The environment variable that selected the provider (source `environment`). */
    variable: string | null;
  };
  /** The configuration file read, or null (built-in defaults). */
  configPath: string | null;
  dataDir: string;
  /** The webhook server's address when it is enabled, else null. */
  webhookUrl: string | null;
  /** The admin token this start generated, and its file: printed once. */
  generatedToken: { token: string; path: string } | null;
  /** The admin token file of an earlier start (never its content), else null. */
  adminTokenFile: string | null;
}

/** Why the provider is the one in use, in words. */
export function providerReason(facts: BannerFacts): string {
  const { source, variable } = facts.provider;
  switch (source) {
    case 'file':
      return `set in ${facts.configPath ?? 'the configuration file'}`;
    case 'environment':
      return `${variable ?? 'an API key'} is set and the configuration has no provider block`;
    case 'default':
      return 'the default: no provider.type in the configuration, and neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set';
  }
}

/**
 * How to sign in to the dashboard on a start that generated no token: with the token in the admin token file
 * (never printed again), or with one of the configured tokens.
 */
export function signInHint(facts: BannerFacts): string {
  if (facts.adminTokenFile) return `sign in with the token in ${facts.adminTokenFile} (gatehouse token show)`;
  return `sign in with a token set under gateway.auth (admin_tokens, api_tokens) in ${facts.configPath ?? 'the configuration'}`;
}

/** `openai, model gpt-4o-mini (the provider's default model)`, or the echo provider's note. */
function providerLine(facts: BannerFacts): string {
  const { type, model, modelConfigured } = facts.provider;
  if (type === 'echo') return 'echo (answers with the message itself; no model is called)';
  return `${type}, model ${model}${modelConfigured ? '' : " (the provider's default model)"}`;
}

/** The banner as human lines for a terminal (one string, lines ending in a newline). */
export function humanBanner(facts: BannerFacts, colour: boolean): string {
  const label = (text: string): string => style(colour, 'dim', text.padEnd(12));
  const api = `${facts.url}${facts.apiPrefix}`;
  const lines = [
    `Gatehouse listening on ${style(colour, 'bold', facts.url)} (version ${facts.version})`,
    `  ${label('provider')}${style(colour, facts.provider.type === 'echo' ? 'yellow' : 'green', providerLine(facts))}`,
    `  ${label('')}${style(colour, 'dim', `why: ${providerReason(facts)}`)}`,
    `  ${label('dashboard')}${facts.url}/${facts.generatedToken ? '' : ` (${signInHint(facts)})`}`,
    `  ${label('api')}${api} (health: ${api}/health, docs: ${api}/docs)`,
    ...(facts.webhookUrl ? [`  ${label('webhook')}${facts.webhookUrl}`] : []),
    `  ${label('config')}${facts.configPath ?? 'none: built-in defaults (gatehouse init writes a gatehouse.yaml)'}`,
    `  ${label('data')}${facts.dataDir}`,
  ];
  if (facts.adminTokenFile) {
    lines.push(`  ${label('admin token')}in ${facts.adminTokenFile} (not shown again; gatehouse token show)`);
  }
  if (facts.generatedToken) {
    const { token, path } = facts.generatedToken;
    lines.push(
      '',
      `First start: an admin token was generated and saved to ${path} (mode 0600).`,
      `  Admin token: ${style(colour, 'bold', token)}`,
      `  Open the dashboard (signed in): ${dashboardSignInLink(facts.url, token)}`,
      `  Try: curl -H "X-API-Token: <token>" ${api}/health`,
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** One JSON line in the shape of a log entry (`timestamp`, `level`, `source`, `message`, fields). */
function jsonLine(now: Date, level: 'info' | 'warning', message: string, fields: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ timestamp: now.toISOString(), level, source: 'lifecycle', message, ...fields })}\n`;
}

/**
 * The banner as JSON lines. The first starts with `listening on <url>` and carries the facts as fields; on the
 * first start two more lines carry the admin token and the signed-in dashboard link inside their messages,
 * each followed by a space, so the link can be cut out of the text. A later start has one more line instead: the
 * dashboard's address and how to sign in, without the token.
 */
export function jsonBanner(facts: BannerFacts, now: Date): string {
  const api = `${facts.url}${facts.apiPrefix}`;
  const model = facts.provider.type === 'echo' ? null : facts.provider.model;
  let text = jsonLine(
    now,
    'info',
    `listening on ${facts.url}: provider ${facts.provider.type}${model ? `, model ${model}` : ''} (${providerReason(facts)})`,
    {
      url: facts.url,
      version: facts.version,
      dashboard: `${facts.url}/`,
      api,
      provider: facts.provider.type,
      model,
      provider_source: facts.provider.source,
      config_file: facts.configPath,
      data_dir: facts.dataDir,
      ...(facts.webhookUrl ? { webhook: facts.webhookUrl } : {}),
      ...(facts.adminTokenFile ? { admin_token_file: facts.adminTokenFile } : {}),
    },
  );
  if (!facts.generatedToken) {
    text += jsonLine(now, 'info', `Open the dashboard: ${facts.url}/ and ${signInHint(facts)}`, {
      dashboard: `${facts.url}/`,
      ...(facts.adminTokenFile ? { admin_token_file: facts.adminTokenFile } : {}),
    });
  } else {
    const { token, path } = facts.generatedToken;
    text += jsonLine(now, 'warning', `Admin token: ${token} (generated on first start; shown only this once)`, {
      admin_token_file: path,
    });
    text += jsonLine(
      now,
      'info',
      `Open the dashboard (signed in): ${dashboardSignInLink(facts.url, token)} (the token is in the fragment, which the browser never sends)`,
    );
  }
  return text;
}
