import { z } from 'zod';
import { about } from '../schema-meta.js';
import { overloadSchema } from './overload.schema.js';
import { payloadsSchema } from './payloads.schema.js';
import { streamsSchema } from './streams.schema.js';

/**
 * `limits`: what keeps the gateway's memory bounded under any load (ADR 0043):
 * shedding new work past capacity or a memory watermark, bounded buffers for
 * readers that don't read, and caps on large payloads.
 */
export const limitsSchema = z
  .strictObject({
    overload: overloadSchema,
    streams: streamsSchema,
    payloads: payloadsSchema,
  })
  .prefault({})
  .meta(about('Bounds on memory under load: shedding, slow readers, large payloads.'));
