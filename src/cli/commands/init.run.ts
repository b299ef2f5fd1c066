/** What `gatehouse init` (init.ts) does: loaded only when that command runs. */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { renderConfigYaml } from '../../config/config.example.js';
import { authModes, defaultConfig, validateConfig, type AuthMode } from '../../config/config.schema.js';
import { adminTokenPath, replaceAdminToken } from '../../security/admin-token.js';
import { isLoopbackHost } from '../../security/host-origin.js';
import { CliError, EXIT, type CliIo } from '../io.js';
import { terminalPrompter, type Prompter } from '../prompt.js';
import { style } from '../terminal.js';
import type { InitOptions } from './init.js';

/** The providers `init` offers; `ollama` is the `openai` type pointed at a local Ollama. */
const PROVIDER_CHOICES = ['openai', 'anthropic', 'ollama', 'echo'] as const;
type ProviderChoice = (typeof PROVIDER_CHOICES)[number];

/** Ollama's address when OLLAMA_HOST is not set. */
export const OLLAMA_DEFAULT_URL = 'http://127.0.0.1:11434';
/** The model offered for Ollama when it has none pulled yet. */
const OLLAMA_SUGGESTED_MODEL = 'llama3.2';
/** How long the Ollama probe waits: it must not slow `init` down when nothing listens. */
const OLLAMA_PROBE_MS = 500;

/** What the environment offers: API keys present, and a local Ollama with its models. */
export interface Detected {
  openaiKey: boolean;
  anthropicKey: boolean;
  /** Ollama's base URL when it answered, with the models it has pulled; null when it did not answer. */
  ollama: { url: string; models: string[] } | null;
}

/** Ollama's base URL from OLLAMA_HOST (`host`, `host:port` or a URL; a wildcard bind is reached on loopback). */
export function ollamaUrl(env: NodeJS.ProcessEnv): string {
  const raw = env.OLLAMA_HOST?.trim();
  if (!raw) return OLLAMA_DEFAULT_URL;
  try {
    const url = new URL(/^https?:\/\//.test(raw) ? raw : `http://${raw}`);
    if (url.hostname === '0.0.0.0' || url.hostname === '') url.hostname = '127.0.0.1';
    if (url.hostname === '[::]') url.hostname = '[::1]';
    if (url.port === '' && !/^https?:\/\//.test(raw)) url.port = '11434';
    return url.origin;
  } catch {
    return OLLAMA_DEFAULT_URL;
  }
}

/** Asks Ollama (GET /api/tags) for its models within a short timeout; null when nothing answers as Ollama. */
async function probeOllama(url: string): Promise<{ url: string; models: string[] } | null> {
  try {
    const response = await fetch(`${url}/api/tags`, { signal: AbortSignal.timeout(OLLAMA_PROBE_MS) });
    if (!response.ok) return null;
    const body = (await response.json()) as { models?: Array<{ name?: unknown }> };
    if (!Array.isArray(body.models)) return null;
    const models = body.models.map((m) => m.name).filter((name): name is string => typeof name === 'string');
    return { url, models };
  } catch {
    return null;
  }
}

/** Looks at the environment and for a local Ollama. */
export async function detectProviders(env: NodeJS.ProcessEnv): Promise<Detected> {
  return {
    openaiKey: Boolean(env.OPENAI_API_KEY),
    anthropicKey: Boolean(env.ANTHROPIC_API_KEY),
    ollama: await probeOllama(ollamaUrl(env)),
  };
}

/** The provider suggested: a key in the environment first (as the gateway would pick), then Ollama, then echo. */
function suggestedProvider(detected: Detected): ProviderChoice {
  if (detected.openaiKey) return 'openai';
  if (detected.anthropicKey) return 'anthropic';
  if (detected.ollama) return 'ollama';
  return 'echo';
}

/** The answers `init` writes. */
interface Answers {
  provider: ProviderChoice;
  /** Null: the provider's default model. */
  model: string | null;
  host: string;
  port: number;
  mode: AuthMode;
  allowedUsers: string[];
  webhook: { enabled: boolean; port: number };
}

function defaultAnswers(detected: Detected): Answers {
  const defaults = defaultConfig();
  const provider = suggestedProvider(detected);
  return {
    provider,
    model: provider === 'ollama' ? (detected.ollama?.models[0] ?? OLLAMA_SUGGESTED_MODEL) : null,
    host: defaults.gateway.host,
    port: defaults.gateway.port,
    mode: defaults.gateway.auth.mode,
    allowedUsers: [],
    webhook: { enabled: false, port: defaults.channels.webhook.port },
  };
}

function portCheck(answer: string): string | null {
  return /^\d+$/.test(answer) && Number(answer) <= 65535 ? null : 'a port is a number from 0 to 65535';
}

/** Asks every question, offering `initial` as the defaults. */
async function askAnswers(prompter: Prompter, io: CliIo, detected: Detected, initial: Answers): Promise<Answers> {
  const colour = io.stdoutIsTTY;
  const note = (text: string): string => style(colour, 'dim', text);
  const ollamaNote = detected.ollama
    ? `running at ${detected.ollama.url} (${detected.ollama.models.length} model(s))`
    : `not found at ${ollamaUrl(io.env)}`;
  io.out(
    `${style(colour, 'bold', 'Model provider')}\n` +
      `  openai     ${note(detected.openaiKey ? 'OPENAI_API_KEY is set' : 'needs OPENAI_API_KEY (or any OpenAI-compatible server)')}\n` +
      `  anthropic  ${note(detected.anthropicKey ? 'ANTHROPIC_API_KEY is set' : 'needs ANTHROPIC_API_KEY')}\n` +
      `  ollama     ${note(ollamaNote)}\n` +
      `  echo       ${note('offline: answers with the message itself, no model')}\n`,
  );
  const provider = (await prompter.ask('Provider', initial.provider, (answer) =>
    (PROVIDER_CHOICES as readonly string[]).includes(answer) ? null : `one of: ${PROVIDER_CHOICES.join(', ')}`,
  )) as ProviderChoice;
  let model: string | null = null;
  if (provider === 'ollama') {
    const pulled = detected.ollama?.models ?? [];
    if (pulled.length > 0) io.out(`  ${note(`pulled: ${pulled.join(', ')}`)}\n`);
    model = await prompter.ask('Model', pulled[0] ?? OLLAMA_SUGGESTED_MODEL, (a) => (a ? null : 'name a model'));
  } else if (provider !== 'echo') {
    model = (await prompter.ask("Model (empty: the provider's default)", '')) || null;
  }

  io.out(`\n${style(colour, 'bold', 'Where the gateway listens')}\n`);
  const host = await prompter.ask('Bind address', initial.host, (a) => (a ? null : 'an address, e.g. 127.0.0.1'));
  if (!isLoopbackHost(host)) {
    io.out(`  ${note('not a loopback address: an admin token is generated now, since tokens are required')}\n`);
  }
  const port = Number(await prompter.ask('Port', String(initial.port), portCheck));

  io.out(
    `\n${style(colour, 'bold', 'Who may talk to the agent')}\n` +
      `  ${note('open: everyone; allowlist: the users you list; pairing: those plus users paired with a code')}\n`,
  );
  const mode = (await prompter.ask('Auth mode', initial.mode, (a) =>
    (authModes as readonly string[]).includes(a) ? null : `one of: ${authModes.join(', ')}`,
  )) as AuthMode;
  let allowedUsers: string[] = [];
  if (mode === 'allowlist') {
    const list = await prompter.ask('Allowed users, comma-separated (user_id or platform:user_id)', '');
    allowedUsers = list
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean);
  }

  io.out(`\n${style(colour, 'bold', 'Webhook')}\n  ${note('a server where any system POSTs signed messages')}\n`);
  const enabled = await prompter.confirm('Enable the webhook server', initial.webhook.enabled);
  const webhookPort = enabled
    ? Number(await prompter.ask('Webhook port', String(initial.webhook.port), portCheck))
    : initial.webhook.port;
  return { provider, model, host, port, mode, allowedUsers, webhook: { enabled, port: webhookPort } };
}

/** The raw configuration object of the answers: only what differs from, or pins, a default. No API key ever. */
function configValues(answers: Answers, detected: Detected, webhookSecret: string): Record<string, unknown> {
  const provider: Record<string, unknown> =
    answers.provider === 'ollama'
      ? { type: 'openai', base_url: `${detected.ollama?.url ?? OLLAMA_DEFAULT_URL}/v1` }
      : { type: answers.provider };
  if (answers.model) provider.model = answers.model;
  const webhook: Record<string, unknown> = { enabled: answers.webhook.enabled, secret: webhookSecret };
  if (answers.webhook.enabled) webhook.port = answers.webhook.port;
  return {
    gateway: {
      host: answers.host,
      port: answers.port,
      auth: { mode: answers.mode, ...(answers.allowedUsers.length > 0 ? { allowed_users: answers.allowedUsers } : {}) },
    },
    provider,
    channels: { webhook },
  };
}

/** What to tell about the provider after writing. */
function providerSummary(answers: Answers, io: CliIo, detected: Detected): string {
  const model = answers.model ? `, model ${answers.model}` : '';
  switch (answers.provider) {
    case 'openai':
      return io.env.OPENAI_API_KEY
        ? `openai${model} (the key is read from OPENAI_API_KEY at start; it is not in the file)`
        : `openai${model}; set OPENAI_API_KEY before starting (the key is never written to the file)`;
    case 'anthropic':
      return io.env.ANTHROPIC_API_KEY
        ? `anthropic${model} (the key is read from ANTHROPIC_API_KEY at start; it is not in the file)`
        : `anthropic${model}; set ANTHROPIC_API_KEY before starting (the key is never written to the file)`;
    case 'ollama':
      return `Ollama${model} over its OpenAI-compatible API${
        answers.model && !detected.ollama?.models.includes(answers.model)
          ? `; pull the model first: ollama pull ${answers.model}`
          : ''
      }`;
    case 'echo':
      return 'echo (offline; edit provider in the file to use a model)';
  }
}

export async function init(io: CliIo, options: InitOptions): Promise<void> {
  if (!options.yes && !io.stdinIsTTY) {
    throw new CliError(
      'init asks questions, and standard input is not a terminal; pass --yes to write the defaults',
      EXIT.usage,
    );
  }
  const output = resolve(io.cwd, options.output);
  if (existsSync(output) && !options.force) {
    throw new CliError(`${output} already exists; pass --force to overwrite it, or --output to write elsewhere`);
  }
  if (!existsSync(dirname(output))) throw new CliError(`cannot write ${output}: ${dirname(output)} does not exist`);

  const detected = await detectProviders(io.env);
  let answers = defaultAnswers(detected);
  if (!options.yes) {
    const prompter = terminalPrompter((text) => io.out(text));
    try {
      answers = await askAnswers(prompter, io, detected, answers);
    } finally {
      prompter.close();
    }
  }

  const webhookSecret = randomBytes(32).toString('base64url');
  const values = configValues(answers, detected, webhookSecret);
  const text = renderConfigYaml({
    header: [
      'Gatehouse configuration, written by `gatehouse init`. Uncomment a key to change it; the commented value is',
      'its default. Every key is described in examples/gatehouse.yaml of the package.',
      'API keys stay in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY), never in this file.',
      'Check it: gatehouse doctor --config FILE. Start it: gatehouse serve --config FILE.',
    ],
    values,
    commentUnset: true,
  });
  // What is written must load: checked before anything touches the disk.
  const checked = validateConfig(parseYaml(text));
  if (!checked.ok) {
    throw new CliError(
      `the answers do not form a valid configuration: ${checked.errors.map((e) => e.path).join(', ')}`,
    );
  }
  writeFileSync(output, text, { mode: 0o600, flag: options.force ? 'w' : 'wx' });
  chmodSync(output, 0o600); // an overwritten file keeps its old mode otherwise

  const colour = io.stdoutIsTTY;
  const shown = relative(io.cwd, output) || output;
  const configFlag = output === resolve(io.cwd, 'gatehouse.yaml') ? '' : ` --config ${shown}`;
  const lines = [
    `${options.yes ? '' : '\n'}Wrote ${style(colour, 'bold', output)} (mode 0600)`,
    `  provider  ${providerSummary(answers, io, detected)}`,
    `  listens   ${answers.host}:${answers.port}`,
    `  auth      ${answers.mode}${answers.allowedUsers.length ? ` (${answers.allowedUsers.join(', ')})` : ''}`,
    `  webhook   ${
      answers.webhook.enabled
        ? `on, port ${answers.webhook.port}; senders sign with channels.webhook.secret from the file`
        : 'off (a generated secret is in the file for when you enable it)'
    }`,
  ];
  // A non-loopback bind needs a token to start (DECISIONS §4): the admin token file is what the gateway reads.
  const dataDir = resolve(io.cwd, checked.config.data_dir);
  if (!isLoopbackHost(answers.host) && !existsSync(adminTokenPath(dataDir))) {
    const token = randomBytes(32).toString('base64url');
    replaceAdminToken(dataDir, token);
    lines.push(
      `  token     ${answers.host} is not a loopback address, so an admin token was generated and saved to`,
      `            ${adminTokenPath(dataDir)} (mode 0600). Admin token (shown once): ${token}`,
    );
  }
  lines.push(
    '',
    'Next:',
    `  gatehouse doctor${configFlag}   check the configuration, the data dir, the provider and the ports`,
    `  gatehouse serve${configFlag}    start the gateway`,
  );
  io.out(`${lines.join('\n')}\n`);
}
