import { z } from 'zod';
import { didYouMean } from '../lib/did-you-mean.js';
import { API_PREFIX_PATTERN, BASE_DEFAULTS, securityProfiles } from './config.file.js';
import { referenceIssues } from './config.references.js';
import { limitsSchema } from './limits/limits.schema.js';
import { about, nonEmpty, port, positiveInt } from './schema-meta.js';

/**
 * The one source of every configuration key, its type, its default and its
 * description (DECISIONS §1). Start-up, POST /config/validate and PUT/PATCH
 * /config all validate against this schema; examples/gatehouse.yaml and the
 * file `gatehouse init` writes are generated from it (config.example.ts).
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

export const authModes = ['open', 'allowlist', 'pairing'] as const;
export { securityProfiles };
export const logLevels = ['debug', 'info', 'warning', 'error'] as const;

const rateLimitsSchema = z
  .strictObject({
    read: positiveInt.default(120).meta(about('GET requests.')),
    write: positiveInt.default(30).meta(about('Requests of every other method.')),
    analytics: positiveInt.default(10).meta(about('The /analytics routes.')),
    lifecycle: positiveInt
      .default(5)
      .meta(about('Channel reconnect/disable/enable, configuration PUT/PATCH, knowledge reindex.')),
  })
  .prefault({})
  .meta(about('Requests per minute per token, in fixed one-minute windows, by route group.'));

/** An id of an agent or a principal: lower-case letters, digits, `_` and `-`, starting with a letter or digit. */
const idSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,63}$/,
    'must be 1-64 lower-case letters, digits, "_" or "-", starting with a letter or digit',
  );

const dailyBudgetSchema = z
  .strictObject({
    daily_usd: z
      .number()
      .min(0)
      .nullable()
      .default(null)
      .meta(about('Spend cap per UTC day in USD, checked before each model call; null: no cap.')),
  })
  .prefault({});

const principalSchema = z.strictObject({
  id: idSchema.meta(about('The principal: who owns the sessions, turns, tasks and memory its tokens create.')),
  role: z
    .enum(['api', 'admin'])
    .default('api')
    .meta(about('api: sees and changes only what it owns; admin: everything.')),
  tokens: secret(z.array(nonEmpty).default([]).meta(about('Its tokens (secrets).'))),
  token_sha256: z
    .array(z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits'))
    .default([])
    .meta(about('Its tokens as SHA-256 hex digests, so the file holds no secret.')),
  agents: z.array(nonEmpty).default(['*']).meta(about('Agents it may use: ids or globs ("*": all).')),
  budget: dailyBudgetSchema.meta(about("Its own spend cap per UTC day, on top of the agents' and the gateway's.")),
  rate_limits: rateLimitsSchema
    .nullable()
    .default(null)
    .meta(about('Its requests per minute by route group, counted over all its tokens; null: security.rate_limits.')),
  tokens_rotated_at: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date, YYYY-MM-DD')
    .nullable()
    .default(null)
    .meta(about('When its tokens were last replaced (the security audit flags admins without one).')),
});

const authSchema = z
  .strictObject({
    mode: z
      .enum(authModes)
      .default('pairing')
      .meta(
        about(
          'Which platform users may talk to the agent: open (everyone), allowlist (allowed_users and',
          'admin_users), pairing (those plus users paired with a one-time code).',
        ),
      ),
    allowed_users: z
      .array(nonEmpty)
      .default([])
      .meta(
        about(
          'Users allowed under allowlist and pairing: user_id (any platform) or platform:user_id (wins when',
          'both match).',
        ),
      ),
    admin_users: z
      .array(nonEmpty)
      .default([])
      .meta(about('Users with full rights in chat; same formats as allowed_users.')),
    api_tokens: secret(
      z
        .array(nonEmpty)
        .default([])
        .meta(
          about(
            'Tokens with read and chat access. With no token configured at all, an admin token is generated',
            'on first start into data_dir/gateway_auth/admin_token (gatehouse token show).',
          ),
        ),
    ),
    admin_tokens: secret(
      z.array(nonEmpty).default([]).meta(about('Tokens with every right; when empty, api_tokens carry admin rights.')),
    ),
    token_header: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
      .default('X-API-Token')
      .meta(about('Header carrying a raw token; Authorization: Bearer <token> is always accepted too.')),
    allowed_origins: z
      .array(z.string())
      .default([])
      .meta(
        about(
          "Browser origins allowed to call the API (CORS); the gateway's own origin always is. Wildcards are",
          'ignored.',
        ),
      ),
    allowed_hosts: z
      .array(z.string())
      .default([])
      .meta(
        about(
          'Host header values accepted on admin routes (on every route under profile extended). Empty with',
          'a loopback bind: localhost, 127.0.0.1 and [::1].',
        ),
      ),
    principals: z
      .array(principalSchema)
      .default([])
      .meta(
        about(
          'Several users behind one gateway (DECISIONS §18): each token belongs to one principal, which sees only',
          'what it owns. api_tokens and admin_tokens belong to the principal "default".',
        ),
      ),
    pairing_ttl_seconds: positiveInt.default(300).meta(about('Lifetime of a pairing code, in seconds.')),
    loopback_trust: z
      .boolean()
      .default(true)
      .meta(
        about(
          'Loopback peers skip the user check (they still need tokens); set false behind a reverse proxy',
          'on the same host.',
        ),
      ),
  })
  .prefault({})
  .meta(about('Who may use the gateway: tokens, user checks, Origin and Host rules. Changes here need a restart.'));

const gatewaySchema = z
  .strictObject({
    host: z
      .string()
      .default(BASE_DEFAULTS.host)
      .meta(about('Bind address. A non-loopback address needs tokens (auth.api_tokens or auth.admin_tokens).')),
    port: port.default(BASE_DEFAULTS.port).meta(about('TCP port; 0 picks a free one.')),
    api_prefix: z
      .string()
      .regex(API_PREFIX_PATTERN, 'must start with / and not end with /')
      .default(BASE_DEFAULTS.api_prefix)
      .meta(about('Path prefix of every API route; each route is also served under /api.')),
    max_body_bytes: positiveInt
      .default(1_048_576)
      .meta(about('Largest request body accepted, in bytes; a larger one is answered 413.')),
    auth: authSchema,
  })
  .prefault({})
  .meta(about('The main server: REST API, WebSocket, dashboard and the OpenAI-compatible API.'));

const securitySchema = z
  .strictObject({
    profile: z
      .enum(securityProfiles)
      .default(BASE_DEFAULTS.profile)
      .meta(
        about(
          'minimal: no tokens, no rate limits, loopback only (local development); standard: tokens,',
          'Origin and Host checks, rate limits; extended: standard plus the Host check on every route and',
          'every token use audited.',
        ),
      ),
    rate_limits: rateLimitsSchema,
  })
  .prefault({})
  .meta(about('The security profile and the rate limits.'));

const storageSchema = z
  .strictObject({
    driver: z
      .enum(['sqlite', 'postgres'])
      .default('sqlite')
      .meta(about('sqlite: data_dir/gatehouse.db, one process; postgres: shared by several gateways.')),
    url: secret(
      z
        .string()
        .nullable()
        .default(null)
        .meta(about('postgres://user:password@host:5432/db when the driver is postgres; DATABASE_URL fills it.')),
    ),
  })
  .prefault({})
  .meta(about('The database. DATABASE_URL (postgres://…) selects PostgreSQL when this block is absent.'));

const busSchema = z
  .strictObject({
    driver: z
      .enum(['local', 'redis', 'nats'])
      .default('local')
      .meta(about('local: in-process; redis or nats: across gateway processes.')),
    url: secret(
      z
        .string()
        .nullable()
        .default(null)
        .meta(
          about(
            'URL of the Redis (redis://host:6379, rediss:// for TLS) or NATS (nats://host:4222) server.',
            'Required when driver is redis or nats.',
          ),
        ),
    ),
    namespace: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" and "-" only (1 to 64)')
      .default('gatehouse')
      .meta(
        about(
          'Prefix of every channel (Redis) or subject (NATS) the gateways use, so two clusters sharing one',
          'server do not mix. Every gateway of one cluster must use the same.',
        ),
      ),
    max_message_bytes: z
      .number()
      .int()
      .min(1024)
      .max(1_048_576)
      .default(262_144)
      .meta(
        about(
          'Largest message put on the bus. A larger live-feed event is not sent to other gateways (counted in',
          'gatehouse_bus_dropped_total); a larger turn event is replaced by a wake-up that makes them read it',
          'from the store.',
        ),
      ),
  })
  .prefault({})
  .meta(
    about(
      'Cross-process events for several gateways on one PostgreSQL: the live feed, turn events (SSE and',
      'WebSocket streams, waits) and heartbeats. REDIS_URL selects redis when this block is absent; REDIS_URL or',
      'NATS_URL fills an unset url.',
    ),
  );

const clusterSchema = z
  .strictObject({
    instance_id: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, ".", "_" and "-" only (1 to 64)')
      .nullable()
      .default(null)
      .meta(
        about(
          'Name of this gateway among those sharing one database. A restarted gateway with the same name takes',
          'over its own turns at once. Default: derived from the host name, data_dir and gateway.port, so a',
          'restart on the same machine keeps it. Every gateway of a cluster needs a different one.',
        ),
      ),
    takeover_after_ms: z
      .number()
      .int()
      .min(1_000)
      .max(300_000)
      .default(10_000)
      .meta(
        about(
          'A gateway sharing the database that has been silent this long is dead: the others run its accepted',
          'turns and end its running ones interrupted (process_restart). Heartbeats go every fifth of it.',
        ),
      ),
  })
  .prefault({})
  .meta(about("Several gateways on one PostgreSQL: names and takeover of a dead gateway's turns."));

const priceSchema = z.strictObject({
  input_per_mtok: z.number().min(0).meta(about('USD per million input tokens.')),
  output_per_mtok: z.number().min(0).meta(about('USD per million output tokens.')),
});

const providerSchema = z
  .strictObject({
    type: z
      .enum(['echo', 'openai', 'anthropic'])
      .default('echo')
      .meta(
        about(
          'echo: offline, answers with the message itself; openai: any OpenAI-compatible server (OpenAI,',
          'Ollama, vLLM, llama.cpp); anthropic: the Anthropic API.',
        ),
      ),
    base_url: z
      .string()
      .nullable()
      .default(null)
      .meta(
        about(
          "Server URL; null: the provider's own (OpenAI's or Anthropic's). OPENAI_BASE_URL fills it for",
          'openai. A local Ollama: http://127.0.0.1:11434/v1.',
        ),
      ),
    api_key: secret(
      z
        .string()
        .nullable()
        .default(null)
        .meta(
          about(
            'null: read from OPENAI_API_KEY (openai) or ANTHROPIC_API_KEY (anthropic). Keep keys in the',
            'environment rather than in this file.',
          ),
        ),
    ),
    model: z.string().nullable().default(null).meta(about("Model name; null: the provider's default model.")),
    timeout_seconds: positiveInt
      .default(120)
      .meta(about('A model call fails after this many seconds without data from the server.')),
    pricing: z
      .record(z.string(), priceSchema)
      .default({})
      .meta(
        about(
          'Prices per model, e.g. {my-model: {input_per_mtok: 0.5, output_per_mtok: 1.5}} (USD per million',
          'tokens); a built-in table covers well-known models.',
        ),
      ),
  })
  .prefault({})
  .meta(
    about(
      'The model provider. When this block is absent, OPENAI_API_KEY selects openai, else',
      'ANTHROPIC_API_KEY selects anthropic, else echo is used.',
    ),
  );

const embeddingsSchema = z
  .strictObject({
    base_url: z
      .string()
      .nullable()
      .default(null)
      .meta(about('Server URL of the /embeddings endpoint; null: full-text search only.')),
    api_key: secret(z.string().nullable().default(null).meta(about('Key of the embeddings server, if it needs one.'))),
    model: z.string().nullable().default(null).meta(about("Embedding model; null: the client's default model.")),
  })
  .prefault({})
  .meta(
    about(
      'Optional: an OpenAI-compatible /embeddings endpoint adds vector similarity to memory and knowledge',
      'search.',
    ),
  );

/** The gateway's own spend cap: the same shape as an agent's and a principal's. */
const budgetSchema = dailyBudgetSchema.meta(about('Spending limits.'));

const agentSchema = z
  .strictObject({
    system_prompt: z
      .string()
      .nullable()
      .default(null)
      .meta(about("Instructions added to the agent's system prompt; null: none.")),
    max_tool_iterations: positiveInt.default(8).meta(about('Rounds of tool calls a turn may make at most.')),
    max_concurrent_turns: positiveInt.default(16).meta(about('Turns running at once, across all sessions.')),
    max_queued_turns: positiveInt
      .max(1_000_000)
      .default(10_000)
      .meta(
        about(
          'Accepted turns that may wait for a slot, across all sessions; beyond it a new message is refused with',
          '503 UNAVAILABLE (retry later). Read at start-up.',
        ),
      ),
    approval_required: z
      .array(nonEmpty)
      .default([])
      .meta(about('Tool names that pause a turn (waiting_approval) until an admin approves the call.')),
  })
  .prefault({})
  .meta(about('The agent loop.'));

const agentProviderSchema = z
  .strictObject({
    type: z.enum(['echo', 'openai', 'anthropic']).optional().meta(about('As provider.type.')),
    base_url: z.string().nullable().optional().meta(about('As provider.base_url.')),
    api_key: secret(z.string().nullable().optional().meta(about('As provider.api_key.'))),
    model: z.string().nullable().optional().meta(about('As provider.model.')),
    timeout_seconds: positiveInt.optional().meta(about('As provider.timeout_seconds.')),
    pricing: z.record(z.string(), priceSchema).optional().meta(about('As provider.pricing.')),
  })
  .meta(about('Its model provider: each key absent here is taken from the top-level provider block.'));

const agentEntrySchema = z.strictObject({
  provider: agentProviderSchema.optional(),
  system_prompt: z
    .string()
    .nullable()
    .default(null)
    .meta(about("Instructions added to this agent's system prompt; null: none.")),
  tools: z
    .strictObject({
      allow: z.array(nonEmpty).default(['*']).meta(about('Tool names or globs it may call ("*": all).')),
      deny: z.array(nonEmpty).default([]).meta(about('Tool names or globs it may not call (wins over allow).')),
    })
    .prefault({})
    .meta(about('Which tools it gets: built-in and MCP tool names, globs allowed.')),
  approval_required: z
    .array(nonEmpty)
    .default([])
    .meta(about('Tool names that pause its turns (waiting_approval) until an admin approves the call.')),
  memory_scope: z
    .enum(['principal', 'agent'])
    .default('principal')
    .meta(
      about(
        "principal: each principal's memory is its own; agent: every principal using this agent shares one",
        'memory.',
      ),
    ),
  budget: dailyBudgetSchema.meta(about('Its own spend cap per UTC day, on top of the gateway budget.')),
});

const bindingSchema = z.strictObject({
  agent: idSchema.meta(about('The agent a new session matching this binding gets.')),
  match: z
    .strictObject({
      channel: nonEmpty.optional().meta(about('The entry point: api, websocket, webhook, telegram, slack, openai…')),
      platform: nonEmpty.optional().meta(about('The sender platform.')),
      chat_id: nonEmpty.optional().meta(about('The chat.')),
      user_id: nonEmpty.optional().meta(about('The sender.')),
      principal: nonEmpty.optional().meta(about('The principal whose token asked.')),
    })
    .prefault({})
    .meta(about('Every key given must match; the binding with the most keys wins, a tie goes to the first.')),
  owner: idSchema
    .nullable()
    .default(null)
    .meta(
      about('The principal owning the sessions a platform channel creates through it; null: only admins see them.'),
    ),
});

const webhookSchema = z
  .strictObject({
    enabled: z.boolean().default(false).meta(about('Runs the webhook server.')),
    host: z.string().default('0.0.0.0').meta(about('Bind address of the webhook server.')),
    port: port.default(8080).meta(about('Port of the webhook server, apart from the API; 0 picks a free one.')),
    path: z
      .string()
      .regex(/^\/\S*$/, 'must start with /')
      .default('/webhook')
      .meta(about('Path senders POST to; GET {path}/health answers too.')),
    secret: secret(
      z
        .string()
        .nullable()
        .default(null)
        .meta(
          about(
            'HMAC-SHA256 key: X-Signature: sha256=<hex of the body> or Standard Webhooks headers (a whsec_…',
            'secret is used as its base64 key). null: signatures are not checked.',
          ),
        ),
    ),
    max_pending: positiveInt
      .default(1000)
      .meta(about('Webhook messages accepted and not yet answered, at most; more are refused with 503.')),
    wait_timeout_seconds: positiveInt
      .default(120)
      .meta(about('How long a request with "wait": true waits for the reply before 504.')),
  })
  .prefault({})
  .meta(about('The signed-webhook server: any system POSTs signed JSON messages to it.'));

const telegramSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .meta(about('Runs the Telegram bot. Default true when TELEGRAM_BOT_TOKEN is set and no block is given.')),
    bot_token: secret(
      z.string().nullable().default(null).meta(about('Bot token from @BotFather; env TELEGRAM_BOT_TOKEN.')),
    ),
    mode: z
      .enum(['polling', 'webhook'])
      .default('polling')
      .meta(about('polling: long-polls getUpdates; webhook: Telegram POSTs to /telegram/<bot id> (the gateway port).')),
    webhook_secret: secret(
      z
        .string()
        .nullable()
        .default(null)
        .meta(about('Webhook mode: the secret_token given to setWebhook, checked in X-Telegram-Bot-Api-Secret-Token.')),
    ),
    api_root: z
      .string()
      .regex(/^https?:\/\/\S+$/, 'must be an http(s) URL')
      .nullable()
      .default(null)
      .meta(about('Bot API root, e.g. a local Bot API server; null: https://api.telegram.org.')),
    groups: z.boolean().default(false).meta(about('Answers in group chats too, only when mentioned or replied to.')),
  })
  .prefault({})
  .meta(about('The Telegram channel (grammY): direct messages, and groups when enabled.'));

const slackSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .meta(about('Runs the Slack app. Default true when SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET are set.')),
    bot_token: secret(z.string().nullable().default(null).meta(about('Bot token (xoxb-…); env SLACK_BOT_TOKEN.'))),
    signing_secret: secret(
      z
        .string()
        .nullable()
        .default(null)
        .meta(about('Signing secret checking Events API requests (X-Slack-Signature); env SLACK_SIGNING_SECRET.')),
    ),
    app_token: secret(
      z
        .string()
        .nullable()
        .default(null)
        .meta(about('App-level token (xapp-…); env SLACK_APP_TOKEN. Set: Socket Mode instead of HTTP events.')),
    ),
    events_path: z
      .string()
      .regex(/^\/\S*$/, 'must start with /')
      .default('/slack/events')
      .meta(about("Events API request URL path, on the webhook server's port (the API port when it is off).")),
    api_url: z
      .string()
      .regex(/^https?:\/\/\S+$/, 'must be an http(s) URL')
      .nullable()
      .default(null)
      .meta(about('Web API base URL (tests); null: https://slack.com/api/.')),
    groups: z
      .boolean()
      .default(false)
      .meta(about('Answers in channels too: app mentions, and replies in threads the bot is in.')),
  })
  .prefault({})
  .meta(about('The Slack channel (Events API or Socket Mode): direct messages, and channels when enabled.'));

const channelsSchema = z
  .strictObject({ webhook: webhookSchema, telegram: telegramSchema, slack: slackSchema })
  .prefault({})
  .meta(about('Message channels besides the API and the WebSocket.'));

const tasksSchema = z
  .strictObject({ max_concurrent: positiveInt.default(2).meta(about('Tasks running at once.')) })
  .prefault({})
  .meta(about('The background task runner.'));

/** A wait of a retry schedule: seconds, or a duration (`5s`, `5m`, `2h`, `1d`); seconds once parsed. */
const retryWait = z
  .union([
    z.number().int().min(1),
    z.string().regex(/^[1-9][0-9]{0,5}(s|m|h|d)$/, 'must be seconds or a duration such as "5s", "5m", "2h" or "1d"'),
  ])
  .transform((wait) =>
    typeof wait === 'number'
      ? wait
      : Number(wait.slice(0, -1)) * { s: 1, m: 60, h: 3600, d: 86_400 }[wait.slice(-1) as 's'],
  )
  .pipe(z.number().int().min(1).max(604_800, 'must be at most 7 days'));

const subscriptionsSchema = z
  .strictObject({
    allow_private_targets: z
      .boolean()
      .default(false)
      .meta(
        about(
          'Let subscription URLs resolve to loopback, private, link-local and other non-public addresses (a',
          'receiver on this machine or the LAN). Cloud metadata addresses stay refused.',
        ),
      ),
    allow_http: z.boolean().default(false).meta(about('Accept http:// subscription URLs; only https:// otherwise.')),
    retry_schedule: z
      .array(retryWait)
      .min(1)
      .max(20)
      .prefault(['5s', '5m', '30m', '2h', '5h', '10h', '10h'])
      .meta(
        about(
          'Waits before each retry of a delivery that timed out, failed to connect or was answered other than 2xx,',
          'in seconds or as durations ("5s", "5m", "2h", "1d"); after the last one the delivery is failed (listed',
          'and retryable by hand).',
        ),
      ),
    timeout_seconds: z
      .number()
      .positive()
      .max(300)
      .default(10)
      .meta(about('How long one attempt (connect, send, answer) may take before it counts as failed.')),
    max_concurrent: positiveInt.max(256).default(8).meta(about('Delivery attempts in flight at once per gateway.')),
    max_body_bytes: positiveInt
      .max(16 * 1024 * 1024)
      .default(262_144)
      .meta(about("Largest event body sent; a larger event's data is replaced by a note saying it was cut.")),
    max_response_bytes: positiveInt
      .max(1_048_576)
      .default(4096)
      .meta(about("Bytes of a receiver's answer read; the rest is discarded unread.")),
    keep_deliveries: positiveInt
      .default(1000)
      .meta(about('Finished deliveries kept per subscription; older delivered and failed ones are removed.')),
  })
  .prefault({})
  .meta(about('Event subscriptions: signed webhooks sent to subscribers (DECISIONS §20).'));

const logsSchema = z
  .strictObject({
    level: z.enum(logLevels).default('info').meta(about('Lines below this level are not logged.')),
    buffer_entries: positiveInt
      .default(10_000)
      .meta(about('Entries kept in memory for GET /logs and the live feed; older ones are in data_dir/logs/.')),
  })
  .prefault({})
  .meta(about('Logging: JSON lines on standard output, day files in data_dir/logs/, GET /logs.'));

const tracingSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .meta(
        about(
          'Export one OpenTelemetry trace per turn over OTLP/HTTP (DECISIONS §21). Also turned on by',
          'OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; OTEL_SDK_DISABLED=true turns it off.',
        ),
      ),
    endpoint: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
      .nullable()
      .default(null)
      .meta(
        about(
          'The OTLP/HTTP traces URL (http://collector:4318/v1/traces). Null: the standard OTEL_EXPORTER_OTLP_*',
          'variables decide, else http://localhost:4318/v1/traces.',
        ),
      ),
    service_name: nonEmpty
      .nullable()
      .default(null)
      .meta(about('The `service.name` of the traces; null: OTEL_SERVICE_NAME, else "gatehouse".')),
    capture_content: z
      .boolean()
      .default(false)
      .meta(
        about(
          'Put message text, model input and output and tool arguments and results on spans. Off: spans carry',
          'ids (event, session, agent, principal), names and counts only.',
        ),
      ),
  })
  .prefault({})
  .meta(about('OpenTelemetry tracing of turns; the standard OTEL_* variables configure the exporter and sampler.'));

/** A tool allow/deny pair (names or globs). */
const toolFilterSchema = z
  .strictObject({
    allow: z.array(nonEmpty).default(['*']).meta(about('Tool names or globs let through ("*": all).')),
    deny: z.array(nonEmpty).default([]).meta(about('Tool names or globs kept out (wins over allow).')),
  })
  .prefault({});

const mcpServerSchema = z
  .strictObject({
    transport: z
      .enum(['stdio', 'http'])
      .default('stdio')
      .meta(about('stdio: a child process speaking MCP on its standard streams; http: Streamable HTTP at url.')),
    command: nonEmpty.nullable().default(null).meta(about('stdio: the program to start.')),
    args: z.array(z.string()).default([]).meta(about('stdio: its arguments.')),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), secret(z.string()))
      .default({})
      .meta(
        about(
          'stdio: the only environment variables the child gets (values are secrets), besides PATH. The',
          "gateway's own environment is not passed on.",
        ),
      ),
    inherit_env: z
      .boolean()
      .default(false)
      .meta(
        about(
          "stdio: pass the gateway's whole environment on (its secrets too) as well as env. Off: only env and PATH;",
          'the security audit reports it on.',
        ),
      ),
    cwd: nonEmpty.nullable().default(null).meta(about("stdio: its working directory; null: the gateway's.")),
    url: nonEmpty.nullable().default(null).meta(about('http: the Streamable HTTP endpoint (http or https).')),
    headers: z
      .record(z.string().regex(/^[A-Za-z0-9-]+$/, 'must be a header name'), secret(z.string()))
      .default({})
      .meta(about('http: headers sent on every request (values are secrets: Authorization and the like).')),
    tools: toolFilterSchema.meta(about("Which of the server's tools the agents are offered, by the server's names.")),
    approval: z
      .union([z.enum(['never', 'always']), z.record(nonEmpty, z.enum(['never', 'always']))])
      .default('never')
      .meta(
        about(
          'never | always | {<tool>: always|never}: which calls pause the turn (waiting_approval) until an admin',
          'approves them, as approval_required does for built-in tools.',
        ),
      ),
    timeout_seconds: z
      .number()
      .min(0.1)
      .max(3600)
      .default(60)
      .meta(about('A call still running after this long ends as a tool error; the turn goes on.')),
  })
  .superRefine((server, ctx) => {
    if (server.transport === 'stdio' && server.command === null) {
      ctx.addIssue({ code: 'custom', path: ['command'], message: 'a stdio server needs a command' });
    }
    if (server.transport === 'http') {
      let url: URL | null = null;
      try {
        url = server.url === null ? null : new URL(server.url);
      } catch {
        url = null;
      }
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
        ctx.addIssue({ code: 'custom', path: ['url'], message: 'an http server needs an http(s) url' });
      }
    }
  });

/** A server's name: what its tools are called by (`mcp__<server>__<tool>`). */
const mcpServerName = idSchema.refine((name) => !name.includes('__'), 'must not contain "__"');

const mcpSchema = z
  .strictObject({
    servers: z
      .record(mcpServerName, mcpServerSchema)
      .default({})
      .meta(about('MCP servers whose tools the agents may call, as mcp__<server>__<tool> (DECISIONS §19).')),
    allow_private_targets: z
      .boolean()
      .default(false)
      .meta(
        about(
          'Let http servers be on loopback, private or link-local addresses (a server on this machine or the',
          'LAN). Off: such a url is refused and never connected.',
        ),
      ),
    max_output_bytes: positiveInt
      .default(262_144)
      .meta(about('A tool result longer than this is cut, with a note to the model that it was.')),
    server: z
      .strictObject({
        enabled: z.boolean().default(true).meta(about('Serve /mcp (Streamable HTTP) to api tokens.')),
      })
      .prefault({})
      .meta(about("Gatehouse's own MCP server at /mcp.")),
  })
  .prefault({})
  .meta(about('The Model Context Protocol: servers whose tools the agents use, and the /mcp server.'));

export const configSchema = z.strictObject({
  data_dir: z
    .string()
    .min(1)
    .default(BASE_DEFAULTS.data_dir)
    .meta(
      about(
        "The gateway's state: gatehouse.db (SQLite), gateway_auth/ (audit log, admin token), logs/.",
        'Relative to the working directory.',
      ),
    ),
  gateway: gatewaySchema,
  security: securitySchema,
  storage: storageSchema,
  bus: busSchema,
  cluster: clusterSchema,
  provider: providerSchema,
  embeddings: embeddingsSchema,
  budget: budgetSchema,
  agent: agentSchema,
  agents: z
    .record(idSchema, agentEntrySchema)
    .default({})
    .meta(
      about(
        'Several agents (DECISIONS §17), by id. Empty: one agent, "main", made of the provider, agent and',
        'budget blocks.',
      ),
    ),
  default_agent: idSchema
    .nullable()
    .default(null)
    .meta(about('The agent a session gets when no binding matches; null: "main" if defined, else the first agent.')),
  bindings: z
    .array(bindingSchema)
    .default([])
    .meta(about('Which agent a new session gets, by where it came from; applied live to new sessions.')),
  mcp: mcpSchema,
  channels: channelsSchema,
  tasks: tasksSchema,
  subscriptions: subscriptionsSchema,
  logs: logsSchema,
  tracing: tracingSchema,
  limits: limitsSchema,
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
  // Without zod's compiled fast path: a configuration is parsed a few times in a run, and compiling the parser
  // of this schema costs three times the parse (about 10 ms of every start; ADR 0044).
  const result = configSchema.safeParse(raw ?? {}, { jitless: true });
  if (result.success) {
    const issues = referenceIssues(result.data);
    return issues.length === 0 ? { ok: true, config: result.data } : { ok: false, errors: issues };
  }
  return { ok: false, errors: zodIssuesToConfigIssues(result.error.issues) };
}

/** Flattens zod issues to dotted paths; unknown keys get one issue each. */
export function zodIssuesToConfigIssues(issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    const base = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      const known = keysAt(configSchema, base);
      for (const key of issue.keys) {
        const near = didYouMean(key, known);
        out.push({
          path: [...base, key].join('.'),
          message: near ? `unknown key (did you mean ${near}?)` : 'unknown key',
        });
      }
    } else {
      out.push({ path: base.join('.') || '(root)', message: issue.message });
    }
  }
  return out;
}

/** The keys an object of the schema accepts at `path` (through defaults, optionals and arrays), or none. */
function keysAt(schema: z.core.$ZodType, path: readonly string[]): string[] {
  let node: z.core.$ZodType | undefined = schema;
  const unwrap = (t: z.core.$ZodType): z.core.$ZodType => {
    const def = t._zod.def as { innerType?: z.core.$ZodType; in?: z.core.$ZodType; element?: z.core.$ZodType };
    const inner = def.innerType ?? def.in;
    return inner ? unwrap(inner) : t;
  };
  for (const step of path) {
    node = unwrap(node);
    const def = node._zod.def as { shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType };
    node = /^\d+$/.test(step) ? def.element : def.shape?.[step];
    if (!node) return [];
  }
  const def = unwrap(node)._zod.def as { shape?: Record<string, unknown> };
  return def.shape ? Object.keys(def.shape) : [];
}

/** The defaults, as `npm start` with no configuration would run. */
export function defaultConfig(): Config {
  return configSchema.parse({}, { jitless: true });
}
