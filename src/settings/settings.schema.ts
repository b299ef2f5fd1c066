import { z } from 'zod';
import { configSchema } from '../config/config.schema.js';
import type { ConfigCheck } from './settings.service.js';

/**
 * The wire shapes of the configuration API (spec: Configuration; DECISIONS
 * §9), describing its answers in the OpenAPI document (ADR 0016).
 */

/**
 * The active configuration, every secret as `"***"` (a list of secrets: each
 * element), null secrets left null: the config schema's own output shape.
 */
export const redactedConfigSchema = configSchema.meta({
  id: 'Config',
  description: 'The merged configuration; every secret is "***" (null when none is set)',
});

/** POST /config/validate. */
export const configCheckSchema = z
  .object({
    valid: z.boolean(),
    errors: z.array(z.object({ path: z.string().meta({ description: 'Dotted path' }), message: z.string() })),
  })
  .meta({ id: 'ConfigCheck' }) satisfies z.ZodType<ConfigCheck>;
