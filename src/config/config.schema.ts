import { z } from 'zod';

/**
 * The one source of every configuration key, its type and its default
 * (DECISIONS §1). Start-up, POST /config/validate and PUT/PATCH /config all
 * validate against this schema; the README's reference is written from it.
 *
 * Objects are strict: an unknown key is an error at its dotted path.
 * Nothing is coerced: a string where a number belongs is an error.
 */

/** Marks a schema node as holding a secret: redacted as "***" everywhere. */
export const secretKeys = z.registry<{ secret: true }>();

function secret<T extends z.ZodType>(schema: T): T {
  secretKeys.add(schema, { secret: true });
  return schema;
}

const nonEmpty = z.string().min(1, 'must not be empty');
const port = z.number().int().min(0).max(65535);
const positiveInt = z.number().int().min(1);

export const authModes = ['open', 'allowlist', 'pairing'] as const;
export const securityProfiles = ['minimal', 'standard', 'extended'] as const;
export const logLevels = ['debug', 'info', 'warning', 'error'] as const;

const authSchema = z
  .strictObject({
    mode: z.enum(authModes).default('pairing'),
    allowed_users: z.array(nonEmpty).default([]),
    admin_users: z.array(nonEmpty).default([]),
    api_tokens: secret(z.array(nonEmpty).default([])),
    admin_tokens: secret(z.array(nonEmpty).default([])),
    token_header: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
      .default('X-API-Token'),
    allowed_origins: z.array(z.string()).default([]),
    allowed_hosts: z.array(z.string()).default([]),
    pairing_ttl_seconds: positiveInt.default(300),
    loopback_trust: z.boolean().default(true),
  })
  .prefault({});

const gatewaySchema = z
  .strictObject({
    host: z.string().default('127.0.0.1'),
    port: port.default(58123),
    api_prefix: z
      .string()
      .regex(/^\/[A-Za-z0-9_\-/]*[A-Za-z0-9_-]$/, 'must start with / and not end with /')
      .default('/api/v1'),
    max_body_bytes: positiveInt.default(1_048_576),
    auth: authSchema,
  })
  .prefault({});

const rateLimitsSchema = z
  .strictObject({
    read: positiveInt.default(120),
    write: positiveInt.default(30),
    analytics: positiveInt.default(10),
    lifecycle: positiveInt.default(5),
  })
  .prefault({});

const securitySchema = z
  .strictObject({
    profile: z.enum(securityProfiles).default('standard'),
    rate_limits: rateLimitsSchema,
  })
  .prefault({});

const storageSchema = z
  .strictObject({
    driver: z.enum(['sqlite', 'postgres']).default('sqlite'),
    url: secret(z.string().nullable().default(null)),
  })
  .prefault({});

const busSchema = z
  .strictObject({
    driver: z.enum(['local', 'redis', 'nats']).default('local'),
    url: secret(z.string().nullable().default(null)),
  })
  .prefault({});

const priceSchema = z.strictObject({
  input_per_mtok: z.number().min(0),
  output_per_mtok: z.number().min(0),
});

const providerSchema = z
  .strictObject({
    type: z.enum(['echo', 'openai', 'anthropic']).default('echo'),
    base_url: z.string().nullable().default(null),
    api_key: secret(z.string().nullable().default(null)),
    model: z.string().nullable().default(null),
    timeout_seconds: positiveInt.default(120),
    pricing: z.record(z.string(), priceSchema).default({}),
  })
  .prefault({});

const embeddingsSchema = z
  .strictObject({
    base_url: z.string().nullable().default(null),
    api_key: secret(z.string().nullable().default(null)),
    model: z.string().nullable().default(null),
  })
  .prefault({});

const budgetSchema = z
  .strictObject({
    daily_usd: z.number().min(0).nullable().default(null),
  })
  .prefault({});

const agentSchema = z
  .strictObject({
    system_prompt: z.string().nullable().default(null),
    max_tool_iterations: positiveInt.default(8),
    max_concurrent_turns: positiveInt.default(16),
    approval_required: z.array(nonEmpty).default([]),
  })
  .prefault({});

const webhookSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    host: z.string().default('0.0.0.0'),
    port: port.default(8080),
    path: z
      .string()
      .regex(/^\/\S*$/, 'must start with /')
      .default('/webhook'),
    secret: secret(z.string().nullable().default(null)),
    max_pending: positiveInt.default(1000),
    wait_timeout_seconds: positiveInt.default(120),
  })
  .prefault({});

const channelsSchema = z.strictObject({ webhook: webhookSchema }).prefault({});

const tasksSchema = z.strictObject({ max_concurrent: positiveInt.default(2) }).prefault({});

const logsSchema = z
  .strictObject({
    level: z.enum(logLevels).default('info'),
    buffer_entries: positiveInt.default(10_000),
  })
  .prefault({});

export const configSchema = z.strictObject({
  data_dir: z.string().min(1).default('./data'),
  gateway: gatewaySchema,
  security: securitySchema,
  storage: storageSchema,
  bus: busSchema,
  provider: providerSchema,
  embeddings: embeddingsSchema,
  budget: budgetSchema,
  agent: agentSchema,
  channels: channelsSchema,
  tasks: tasksSchema,
  logs: logsSchema,
});

/** The validated, fully defaulted configuration. */
export type Config = z.output<typeof configSchema>;
export type AuthConfig = Config['gateway']['auth'];
export type SecurityProfile = (typeof securityProfiles)[number];
export type AuthMode = (typeof authModes)[number];
export type LogLevel = (typeof logLevels)[number];

/** One validation problem, at a dotted path such as `gateway.bogus_key`. */
export interface ConfigIssue {
  path: string;
  message: string;
}

/**
 * Validates a raw (already merged) configuration object. Returns the
 * defaulted config, or every problem found — never only the first.
 */
export function validateConfig(raw: unknown): { ok: true; config: Config } | { ok: false; errors: ConfigIssue[] } {
  const result = configSchema.safeParse(raw ?? {});
  if (result.success) return { ok: true, config: result.data };
  return { ok: false, errors: zodIssuesToConfigIssues(result.error.issues) };
}

/** Flattens zod issues to dotted paths; unknown keys get one issue each. */
export function zodIssuesToConfigIssues(issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    const base = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: [...base, key].join('.'), message: 'unknown key' });
    } else {
      out.push({ path: base.join('.') || '(root)', message: issue.message });
    }
  }
  return out;
}

/** The defaults, as `npm start` with no configuration would run. */
export function defaultConfig(): Config {
  return configSchema.parse({});
}
