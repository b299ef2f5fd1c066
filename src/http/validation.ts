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
 * Query-string helpers: query values arrive as strings, so these parse
 * strictly (`limit=1.5`, `limit=` and `limit=abc` are errors, never clamped).
 */
export const q = {
  /** An integer in [min, max]; absent → `fallback`. */
  int(min: number, max: number, fallback: number) {
    return z
      .string()
      .regex(/^-?\d+$/, 'must be an integer')
      .transform(Number)
      .pipe(
        z.number().int().min(min, `must be between ${min} and ${max}`).max(max, `must be between ${min} and ${max}`),
      )
      .optional()
      .transform((v) => v ?? fallback);
  },
  /** An optional integer in [min, max]. */
  optionalInt(min: number, max: number) {
    return z
      .string()
      .regex(/^-?\d+$/, 'must be an integer')
      .transform(Number)
      .pipe(
        z.number().int().min(min, `must be between ${min} and ${max}`).max(max, `must be between ${min} and ${max}`),
      )
      .optional();
  },
  /** `true`/`false` (also `1`/`0`); absent → `fallback`. */
  bool(fallback: boolean) {
    return z
      .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
      .transform((v) => v === 'true' || v === '1')
      .optional()
      .transform((v) => v ?? fallback);
  },
  /** An ISO 8601 timestamp, kept as epoch milliseconds. */
  timestamp() {
    return z
      .string()
      .refine((v) => /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 timestamp')
      .transform((v) => Date.parse(v))
      .optional();
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
