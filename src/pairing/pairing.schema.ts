import { z } from 'zod';

/**
 * The wire shapes of the pairing answers (spec: Pairing; DECISIONS §4),
 * describing POST /pair and POST /pair/verify in the OpenAPI document
 * (ADR 0016).
 */

/** POST /pair → 201: the single-use code (a secret: sent with `Cache-Control: no-store`). */
export const pairingCodeSchema = z
  .object({
    code: z.string().meta({ description: '8 characters from an unambiguous alphabet' }),
    ttl_seconds: z.number().int().min(1),
  })
  .meta({ id: 'PairingCode' });

/** POST /pair/verify → 200: the identity is paired. */
export const pairedSchema = z
  .object({ status: z.literal('paired'), platform: z.string(), user_id: z.string() })
  .meta({ id: 'Paired' });
