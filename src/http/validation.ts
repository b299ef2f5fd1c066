import { z } from 'zod';
import { errors, type FieldIssue } from './errors.js';

/** Turns zod issues into `[{path, message}]`, with unknown keys one issue each. */
export function toFieldIssues(issues: readonly z.core.$ZodIssue[], root: string): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of issues) {
    const base = [root, ...issue.path.map(String)].filter(Boolean);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: [...base, key].join('.'), message: 'unknown field' });
    } else {
      out.push({ path: base.join('.') || root, message: issue.message });
    }
  }
  return out;
}

/**
 * Validates one part of the request. Never coerces: a boolean is never an
 * integer, a string is never a number. Throws 400 with every issue listed.
 */
export function validatePart<T extends z.ZodType>(
  schema: T,
  value: unknown,
  part: 'body' | 'query' | 'params',
): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw errors.validation(toFieldIssues(result.error.issues, part), `invalid ${part}`);
}

/**
 * What a query parameter means, for the OpenAPI document: the wire carries
 * strings and the `q` helpers parse them strictly, but a client should see
 * `integer` with its bounds, `boolean`, a `date-time`. `http/openapi.ts`
 * replaces the generated (string) schema of a registered node with this one;
 * validation is untouched.
 */
export const queryWireTypes = z.registry<{ schema: Record<string, unknown> }>();

/** Registers `schema` as documented by `described` (see `queryWireTypes`). */
function documented<T extends z.ZodType>(schema: T, described: Record<string, unknown>): T {
  queryWireTypes.add(schema, { schema: described });
  return schema;
}

/** A strict integer in [min, max] from its query-string text. */
function intText(min: number, max: number) {
  return z
    .string()
    .regex(/^-?\d+$/, 'must be an integer')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be between ${min} and ${max}`).max(max, `must be between ${min} and ${max}`));
}

/**
 * Query-string helpers: query values arrive as strings, so these parse
 * strictly (`limit=1.5`, `limit=` and `limit=abc` are errors, never clamped).
 * Each documents its meaning in `queryWireTypes`.
 */
export const q = {
  /** An integer in [min, max]; absent → `fallback`. */
  int(min: number, max: number, fallback: number) {
    return documented(
      intText(min, max)
        .optional()
        .transform((v) => v ?? fallback),
      { type: 'integer', minimum: min, maximum: max, default: fallback },
    );
  },
  /** An optional integer in [min, max]. */
  optionalInt(min: number, max: number) {
    return documented(intText(min, max).optional(), { type: 'integer', minimum: min, maximum: max });
  },
  /** `true`/`false` (also `1`/`0`); absent → `fallback`. */
  bool(fallback: boolean) {
    return documented(
      z
        .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
        .transform((v) => v === 'true' || v === '1')
        .optional()
        .transform((v) => v ?? fallback),
      { type: 'boolean', default: fallback, description: '`true` or `false` (`1` and `0` are accepted too)' },
    );
  },
  /** An ISO 8601 timestamp, kept as epoch milliseconds. */
  timestamp() {
    return documented(
      z
        .string()
        .refine((v) => /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 timestamp')
        .transform((v) => Date.parse(v))
        .optional(),
      { type: 'string', format: 'date-time' },
    );
  },
  /** One of a closed set of values; absent → `fallback`; anything else → 400 naming the allowed values. */
  oneOf<const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) {
    return documented(
      z
        .enum(values, { message: `must be one of ${values.join(', ')}` })
        .optional()
        .transform((v) => v ?? fallback),
      { type: 'string', enum: [...values], default: fallback },
    );
  },
  /** A comma-separated list of values of a closed set (deduplicated); absent → `fallback`. */
  listOf<const T extends readonly [string, ...string[]]>(values: T, fallback: readonly T[number][]) {
    const allowed = new Set<string>(values);
    return documented(
      z
        .string()
        .max(1000)
        .transform((text) => [...new Set(text.split(',').map((v) => v.trim()))])
        .refine((list) => list.length > 0 && list.every((v) => allowed.has(v)), {
          message: `must be a comma-separated list of ${values.join(', ')}`,
        })
        .transform((list) => list as T[number][])
        .optional()
        .transform((v) => v ?? [...fallback]),
      {
        type: 'string',
        default: fallback.join(','),
        description: `A comma-separated list of: ${values.join(', ')}`,
      },
    );
  },
};

/**
 * A body that must be a JSON object (arrays, null and scalars are 400).
 * Unknown fields are dropped, not rejected, so newer clients keep working.
 */
export function objectBody<S extends z.core.$ZodLooseShape>(shape: S) {
  return z.object(shape, {
    error: (issue) => (issue.code === 'invalid_type' ? 'body must be a JSON object' : undefined),
  });
}
