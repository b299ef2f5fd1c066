import { parseJsonBounded, type JsonLimits, JSON_LIMITS } from '../lib/json.js';
import { errors } from './errors.js';

/**
 * A JSON body from a client (API and webhook servers, ADR 0013): parsed
 * within `JSON_LIMITS` before any validation sees it. Throws ApiError 400
 * BAD_REQUEST — "invalid JSON body" for bad syntax, otherwise the bound or
 * the key refused, with the limit in the details.
 */
export function parseJsonBody(text: string, limits: JsonLimits = JSON_LIMITS): unknown {
  const parsed = parseJsonBounded(text, limits);
  if (parsed.ok) return parsed.value;
  if (parsed.reason === 'syntax') throw errors.badRequest('invalid JSON body');
  throw errors.badRequest(parsed.message, parsed.details);
}
