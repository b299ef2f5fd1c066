import { errors, type FieldIssue } from '../../http/errors.js';
import { parseJsonBody } from '../../http/json.js';

/** Longest `sender_id` / `chat_id` accepted (as POST /message). */
export const MAX_ID_LENGTH = 200;

/** A webhook message after validation (spec: Webhook channel, body JSON; DECISIONS §7). */
export interface WebhookMessage {
  /** `sender_id`, or its alias `user_id`. */
  senderId: string;
  chatId: string;
  /** `text`, or its alias `message`. */
  text: string;
  /** Default false. */
  wait: boolean;
  /** The body's `idempotency_key` when present (validated later with the header keys). */
  idempotencyKey: string | undefined;
  /** The agent a session this message creates gets (DECISIONS §17). */
  agent: string | undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses the raw body as one JSON object within the bounds of every body
 * (ADR 0013); 400 for bytes that are not UTF-8 JSON, JSON too deep, too wide
 * or with a prototype key, or not an object.
 */
function parseObject(raw: Buffer): Record<string, unknown> {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw errors.badRequest('invalid JSON body');
  }
  const value = parseJsonBody(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw errors.badRequest('request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** A field counts as given unless absent or JSON null. */
function given(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/**
 * One field that may travel under two names: the canonical one wins, the
 * alias is accepted (DECISIONS §7); both present with different values is an
 * issue rather than a silent choice.
 */
function aliased(
  body: Record<string, unknown>,
  name: string,
  alias: string,
  issues: FieldIssue[],
  rules: { maxLength?: number; label: string },
): string | undefined {
  const primary = body[name];
  const secondary = body[alias];
  const present = given(primary) ? name : given(secondary) ? alias : null;
  if (present === null) {
    issues.push({ path: `body.${name}`, message: `${rules.label} is required (${name} or ${alias})` });
    return undefined;
  }
  const value = body[present];
  if (typeof value !== 'string') {
    issues.push({ path: `body.${present}`, message: 'must be a string' });
    return undefined;
  }
  if (value.length === 0) {
    issues.push({ path: `body.${present}`, message: 'must not be empty' });
    return undefined;
  }
  if (rules.maxLength !== undefined && value.length > rules.maxLength) {
    issues.push({ path: `body.${present}`, message: `must be at most ${rules.maxLength} characters` });
    return undefined;
  }
  if (present === name && given(secondary) && secondary !== value) {
    issues.push({ path: `body.${alias}`, message: `differs from ${name}` });
    return undefined;
  }
  return value;
}

/**
 * Parses and validates a webhook body from its raw bytes (after the
 * signature check). Throws ApiError 400: a plain one for bytes that are not
 * a JSON object, else with every field issue as `[{path, message}]`.
 * Unknown fields are ignored: senders are arbitrary external systems.
 */
export function parseWebhookBody(raw: Buffer): WebhookMessage {
  const body = parseObject(raw);
  const issues: FieldIssue[] = [];
  const senderId = aliased(body, 'sender_id', 'user_id', issues, { maxLength: MAX_ID_LENGTH, label: 'sender' });
  const chatId = body.chat_id;
  if (!given(chatId)) issues.push({ path: 'body.chat_id', message: 'chat_id is required' });
  else if (typeof chatId !== 'string') issues.push({ path: 'body.chat_id', message: 'must be a string' });
  else if (chatId.length === 0) issues.push({ path: 'body.chat_id', message: 'must not be empty' });
  else if (chatId.length > MAX_ID_LENGTH) {
    issues.push({ path: 'body.chat_id', message: `must be at most ${MAX_ID_LENGTH} characters` });
  }
  const text = aliased(body, 'text', 'message', issues, { label: 'text' });
  const wait = body.wait;
  if (wait !== undefined && typeof wait !== 'boolean') issues.push({ path: 'body.wait', message: 'must be a boolean' });
  const key = body.idempotency_key;
  if (given(key) && typeof key !== 'string') {
    issues.push({ path: 'body.idempotency_key', message: 'must be a string' });
  }
  const agent = body.agent;
  if (given(agent) && (typeof agent !== 'string' || agent.length === 0 || agent.length > 64)) {
    issues.push({ path: 'body.agent', message: 'must be a string of 1-64 characters' });
  }
  if (issues.length > 0 || senderId === undefined || text === undefined || typeof chatId !== 'string') {
    throw errors.validation(issues, 'invalid body');
  }
  return {
    senderId,
    chatId,
    text,
    wait: wait === true,
    idempotencyKey: typeof key === 'string' ? key : undefined,
    agent: typeof agent === 'string' ? agent : undefined,
  };
}
