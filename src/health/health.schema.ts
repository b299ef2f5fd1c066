import { z } from 'zod';
import type { ComponentHealth, HealthReport, MemoryHealth, PeerHealth } from './health.service.js';

/** One component of the report (ADR 0024). */
export const componentHealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded', 'failing', 'unknown']).meta({
      description:
        '`ok`; `degraded`: works with less (the echo provider); `failing`: does not work now; `unknown`: not checked yet',
    }),
    message: z.string().optional().meta({ description: 'Why, when it is not plain `ok`' }),
  })
  .meta({ id: 'ComponentHealth' }) satisfies z.ZodType<ComponentHealth>;

/** The memory component (`limits.overload`, ADR 0043). */
export const memoryHealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']).meta({ description: '`degraded` while new work is refused for memory' }),
    message: z.string().optional().meta({ description: 'While shedding: the value against the watermark' }),
    measure: z.enum(['rss', 'heap']).meta({ description: '`limits.overload.memory_measure`' }),
    value_mb: z.number().int().min(0).meta({ description: 'The measure at the last sample (twice a second), MB' }),
    watermark_mb: z
      .number()
      .int()
      .min(1)
      .nullable()
      .meta({ description: '`limits.overload.memory_watermark_mb`; null: none' }),
    shedding: z.boolean().meta({ description: 'True while new work is refused (503) because the value is above it' }),
  })
  .meta({ id: 'MemoryHealth' }) satisfies z.ZodType<MemoryHealth>;

/** A gateway seen on the shared bus (ADR 0025). */
export const peerHealthSchema = z
  .object({
    instance_id: z.string().meta({ description: 'Its instance id' }),
    version: z.string().meta({ description: 'Its gateway version' }),
    last_seen_seconds: z.number().int().min(0).meta({ description: 'Whole seconds since its last message' }),
  })
  .meta({ id: 'PeerHealth' }) satisfies z.ZodType<PeerHealth>;

/**
 * The health report on the wire (spec: Health; DECISIONS §9; ADR 0024), as
 * `healthReport` builds it; 200 when healthy or degraded, 503 when
 * unhealthy (then with `error`). Describes GET /health in the OpenAPI
 * document (ADR 0016).
 */
export const healthReportSchema = z
  .object({
    status: z.enum(['healthy', 'degraded', 'unhealthy']),
    message: z
      .string()
      .optional()
      .meta({ description: 'When not healthy: the components that make it so, and why (`provider: …; channels: …`)' }),
    server_running: z.boolean().meta({ description: 'False once draining began' }),
    active_channels: z.record(z.string(), z.string()).meta({ description: 'Channel name → its state' }),
    ws_clients: z.number().int().min(0),
    provider: z.string().meta({ description: '`<type>:<model>`' }),
    media_cache_mb: z.number().min(0),
    active_sessions: z.number().int().min(0),
    total_sessions: z.number().int().min(0),
    version: z.string().meta({ description: 'The gateway version' }),
    uptime_seconds: z.number().int().min(0).meta({ description: 'Whole seconds since the gateway started' }),
    instance_id: z
      .string()
      .meta({ description: 'This gateway process: its heartbeats on the bus, the `owner` of the turns it runs' }),
    peers: z
      .array(peerHealthSchema)
      .optional()
      .meta({
        description:
          'With a shared bus (`bus.driver` redis or nats): the other gateways heard from within their last three ' +
          'heartbeats (one every 5 s)',
      }),
    components: z
      .object({
        store: componentHealthSchema,
        provider: componentHealthSchema,
        channels: componentHealthSchema,
        bus: componentHealthSchema,
        mcp: componentHealthSchema,
        memory: memoryHealthSchema,
      })
      .meta({
        description:
          'The state of each part; a `degraded` or `failing` one makes the report `degraded` (the store: ' +
          '`unhealthy`). `provider`: reachability (its models list, at most once a minute) and the last model ' +
          'calls of turns; `degraded` on the echo provider. `bus`: `failing` while the connection to a shared bus ' +
          'is lost (the gateway reconnects; turns still end through the store, more slowly). `mcp`: the configured MCP ' +
          'servers, `degraded` while some are not ready (connecting, or failed and waiting to restart), `failing` ' +
          'when every one failed, the message naming them; `ok` with none configured. `memory`: the memory watermark ' +
          'of load shedding (`limits.overload`), `degraded` while new work is refused because the measure is above it',
      }),
    error: z
      .object({ code: z.literal('UNAVAILABLE'), message: z.string() })
      .optional()
      .meta({ description: 'When unhealthy: why (store unreachable, or draining)' }),
  })
  .meta({ id: 'HealthReport' }) satisfies z.ZodType<HealthReport>;
