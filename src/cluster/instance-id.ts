import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';

/**
 * The name of this gateway among those sharing one database (ledger `owner`,
 * the bus's sender id, health's `instance_id`). A configured
 * `cluster.instance_id` wins; otherwise it is derived from the host name, the
 * resolved data dir and the main port, so a gateway restarted on the same
 * machine keeps its name and takes its own turns over at once (ADR 0029).
 */
export function instanceIdOf(input: {
  configured: string | null;
  dataDir: string;
  port: number;
  host?: string;
}): string {
  if (input.configured) return input.configured;
  const digest = createHash('sha256')
    .update(`${input.host ?? hostname()}\0${resolve(input.dataDir)}\0${input.port}`)
    .digest('hex');
  return `gw_${digest.slice(0, 20)}`;
}
