import { z } from 'zod';
import { OpenApiComponents, type Json } from '../../http/openapi.js';
import { MAX_ID_LENGTH } from './webhook.schema.js';
import { TIMESTAMP_TOLERANCE_SECONDS } from './webhook.signature.js';

/** The body of POST {path} (spec: Webhook channel; DECISIONS §7). Validated by `parseWebhookBody`. */
const webhookBody = z
  .looseObject({
    sender_id: z.string().min(1).max(MAX_ID_LENGTH).optional().meta({ description: 'The sender; or `user_id`' }),
    user_id: z.string().min(1).max(MAX_ID_LENGTH).optional().meta({ description: 'Alias of `sender_id`' }),
    chat_id: z.string().min(1).max(MAX_ID_LENGTH),
    text: z.string().min(1).optional().meta({ description: 'The message; or `message`' }),
    message: z.string().min(1).optional().meta({ description: 'Alias of `text`' }),
    wait: z.boolean().optional().meta({ description: 'Answer with the reply (200) instead of the 202 ack' }),
    idempotency_key: z.string().optional().meta({ description: 'Must agree with an idempotency header' }),
    agent: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .meta({ description: 'The agent a session this message creates gets (DECISIONS §17)' }),
  })
  .meta({
    description:
      'One JSON object. `sender_id` (or `user_id`) and `text` (or `message`) are required; both names with different values are 400. Unknown fields are ignored.',
  });

const acceptedBody = z.object({ status: z.literal('accepted'), correlation_id: z.string() });
const replyBody = z.object({
  correlation_id: z.string(),
  response: z.string().nullable().meta({ description: 'The reply text; null when the turn ended without one' }),
});
const healthBody = z.object({ status: z.literal('ok') });

const REQUEST_HEADERS: Array<[string, string]> = [
  ['X-Signature', 'With a secret: `sha256=<hex>` (or bare `<hex>`), HMAC-SHA256 of the raw body'],
  ['webhook-id', 'Standard Webhooks: the message id; the idempotency key when no other is given'],
  ['webhook-timestamp', `Standard Webhooks: Unix seconds; more than ${TIMESTAMP_TOLERANCE_SECONDS} s away is 401`],
  [
    'webhook-signature',
    'Standard Webhooks: `v1,<base64>` HMAC-SHA256 over `id.timestamp.body` (a `whsec_` secret is base64 after the prefix)',
  ],
  ['Idempotency-Key', 'Makes the request idempotent: a retry with the same key and content answers as the original'],
  ['X-Idempotency-Key', 'The same as `Idempotency-Key`'],
];

/**
 * The webhook server's own OpenAPI 3.1 document (ADR 0016), served at
 * `GET {path}/openapi.json` on the webhook port without a token: POST
 * {path} with its body, signature headers and answers, and GET
 * {path}/health. Built with the API document's helpers.
 */
export function buildWebhookOpenApi(options: { path: string; version: string }): Json {
  const base = options.path.length > 1 && options.path.endsWith('/') ? options.path.slice(0, -1) : options.path;
  const sub = (name: string): string => (base === '/' ? `/${name}` : `${base}/${name}`);
  const components = new OpenApiComponents();
  const json = (schema: z.ZodType) => [{ type: 'application/json', schema: components.schema(schema, 'output') }];
  const common = ['X-Request-Id'];
  const post: Json = {
    operationId: 'post_webhook',
    summary: 'Submit a message from an external system; 202 once durably accepted, or the reply with `wait`',
    tags: ['webhook'],
    security: [],
    parameters: REQUEST_HEADERS.map(([name, description]) => components.headerParameter(name, description)),
    requestBody: {
      required: true,
      content: { 'application/json': { schema: components.schema(webhookBody, 'input') } },
    },
    responses: {
      '200': components.response('With `wait`: the reply', common, json(replyBody)),
      '202': components.response(
        'Accepted once durably stored (a replay answers it again)',
        common,
        json(acceptedBody),
      ),
      ...Object.fromEntries(
        [400, 401, 409, 413, 429, 500, 502, 503, 504].map((status) => [
          String(status),
          components.errorResponse(status, common),
        ]),
      ),
    },
  };
  const get = (operationId: string, summary: string, body: Array<{ type: string; schema: Json }>): Json => ({
    operationId,
    summary,
    tags: ['webhook'],
    security: [],
    responses: {
      '200': components.response(summary, common, body),
      '400': components.errorResponse(400, common),
      '503': components.errorResponse(503, common),
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse webhook',
      version: options.version,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'The webhook channel on its own port. With a secret, every POST is signed (X-Signature or the Standard Webhooks headers) and checked over the raw bytes before parsing. Errors use the API envelope; the idempotency conflict is 409 {"error": "<message>"}.',
    },
    servers: [{ url: '/', description: 'The webhook server that served this document' }],
    tags: [{ name: 'webhook', description: 'Messages from external systems' }],
    paths: {
      [base]: { post },
      [sub('health')]: { get: get('get_webhook_health', 'Liveness of the webhook server', json(healthBody)) },
      [sub('openapi.json')]: {
        get: get('get_webhook_openapi', 'This document', json(z.looseObject({ openapi: z.string() }))),
      },
    },
    components: components.components({}),
  };
}
