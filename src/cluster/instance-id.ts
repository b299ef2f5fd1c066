import { createHash } from 'node:crypto';
import { closeSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { openPrivateFileSync } from '../lib/private-files.js';

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

/** Thrown when another live process of this machine already runs under the same instance id. */
export class InstanceTakenError extends Error {
  constructor(id: string, pid: number, file: string) {
    super(
      `another gateway (pid ${pid}) runs as instance ${id} from this data_dir (${file}): stop it, or give this one ` +
        'its own cluster.instance_id, gateway.port or data_dir',
    );
    this.name = 'InstanceTakenError';
  }
}

/** True when a process with this pid exists (signal 0 checks without sending). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Claims the instance id on this machine through a pid file in the data dir:
 * a file left by a dead predecessor (kill -9) is taken over; one of a live
 * other process refuses the start, since two processes under one name would
 * each take the other's turns for their own. Returns the release function.
 */
export function claimInstanceFile(dataDir: string, id: string): () => void {
  const file = join(dataDir, `instance-${id}.pid`);
  let previous: number | null = null;
  try {
    previous = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
  } catch {
    previous = null;
  }
  if (
    previous !== null &&
    Number.isSafeInteger(previous) &&
    previous > 0 &&
    previous !== process.pid &&
    alive(previous)
  ) {
    throw new InstanceTakenError(id, previous, file);
  }
  const fd = openPrivateFileSync(file, 'w');
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  };
}
