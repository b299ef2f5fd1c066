/**
 * Small pieces the bench drivers share: environment knobs, a minimal Chrome
 * DevTools Protocol session over a `node --inspect` process's WebSocket, and
 * spawning the bench's own small servers. (What the fake models share is in
 * `model-common.ts`, which the model processes load without these imports.)
 */

import { join } from 'node:path';
import WebSocket from 'ws';
import { announcedUrl, ROOT, spawnNode, type Child } from './processes.js';

/** A positive number from the environment (`fallback` when unset or blank); throws on anything else. */
export function envNumber(name: string, fallback: number, integer: boolean): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A minimal Chrome DevTools Protocol session; `params` is sent only when given. */
export interface CdpSession {
  send: (method: string, params?: object) => Promise<unknown>;
  close: () => void;
}

/** Opens a Chrome DevTools Protocol session over the inspector WebSocket at `url`. */
export async function cdpSession(url: string): Promise<CdpSession> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString('utf8')) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  const send = (method: string, params?: object): Promise<unknown> =>
    new Promise((resolve) => {
      const n = ++id;
      pending.set(n, (result) => {
        pending.delete(n);
        resolve(result);
      });
      socket.send(JSON.stringify(params === undefined ? { id: n, method } : { id: n, method, params }));
    });
  return { send, close: () => socket.close() };
}

/**
 * Spawns one of the bench's own small servers (`file`, next to this module)
 * as a child process; its URL is the one it announces. Its stdin stays open:
 * these servers exit when it closes.
 */
export function spawnBenchServer(name: string, file: string): Child {
  return spawnNode({
    name,
    args: [join(import.meta.dirname, file)],
    cwd: ROOT,
    env: { PATH: process.env.PATH },
    findUrl: announcedUrl,
    startTimeoutMs: 10_000,
    stdin: 'pipe',
    keepLines: 0,
  });
}
