import http from 'node:http';
import WebSocket from 'ws';

/**
 * One user at a time: sequential requests over one keep-alive socket, with
 * each answer's `Server-Timing` phases; and the first `delta` of a streamed
 * reply over SSE and over the WebSocket, timed in this process.
 */

/** One answer of a sequential run. */
export interface Answer {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** A keep-alive client with one socket (a single user). */
export function singleUserAgent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });
}

/** Sends one request and reads the whole answer. */
export function send(
  agent: http.Agent,
  url: string,
  request: { method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: Buffer },
  timeoutMs = 60_000,
): Promise<Answer> {
  const base = new URL(url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body) {
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = request.body.length;
    }
    const req = http.request(
      { agent, host: base.hostname, port: base.port, method: request.method, path: request.path, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(request.body);
  });
}

/** The `Server-Timing` metrics of an answer (`name;dur=ms`), by name. */
export function serverTiming(headers: http.IncomingHttpHeaders): Map<string, number> {
  const out = new Map<string, number>();
  const raw = headers['server-timing'];
  const text = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
  for (const part of text.split(',')) {
    const match = /^\s*([A-Za-z0-9_-]+)\s*;(?:.*;)?\s*dur=([0-9.]+)/.exec(part);
    if (match) out.set(match[1]!, Number(match[2]));
  }
  return out;
}

/** The value at percentile `p` of `samples` (nearest rank); NaN when empty. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** What `sequential` measured. */
export interface SequentialResult {
  /** End-to-end latency of each measured request, ms. */
  latencies: number[];
  /** Server-Timing phases of each measured request, ms, by phase name. */
  phases: Map<string, number[]>;
  /** Measured requests. */
  count: number;
  /** Measured window, s. */
  seconds: number;
  failures: number;
  firstFailure?: string;
}

/**
 * Sends `request(n)` one after the other: `warmup` requests (or as many as fit
 * in `warmupMaxSeconds`), then as many as fit in `seconds` (at most
 * `maxRequests`). `onWindowStart`/`onWindowEnd` bracket the measured requests
 * (CPU readings).
 */
export async function sequential(options: {
  url: string;
  warmup: number;
  warmupMaxSeconds?: number;
  seconds: number;
  maxRequests: number;
  expectStatus: number;
  request: (n: number) => { method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: Buffer };
  check?: (answer: Answer) => string | undefined;
  onWindowStart?: () => void;
  onWindowEnd?: () => void;
}): Promise<SequentialResult> {
  const agent = singleUserAgent();
  const latencies: number[] = [];
  const phases = new Map<string, number[]>();
  let failures = 0;
  let firstFailure: string | undefined;
  let n = 0;
  const one = async (measure: boolean): Promise<void> => {
    const spec = options.request(n++);
    const t0 = performance.now();
    let answer: Answer;
    try {
      answer = await send(agent, options.url, spec);
    } catch (err) {
      failures++;
      firstFailure ??= `${spec.method} ${spec.path} → ${(err as Error).message}`;
      return;
    }
    const elapsed = performance.now() - t0;
    const problem =
      answer.status !== options.expectStatus
        ? `HTTP ${answer.status} (expected ${options.expectStatus}): ${answer.body.slice(0, 300)}`
        : options.check?.(answer);
    if (problem) {
      failures++;
      firstFailure ??= `${spec.method} ${spec.path} → ${problem}`;
      return;
    }
    if (!measure) return;
    latencies.push(elapsed);
    for (const [name, ms] of serverTiming(answer.headers)) {
      let list = phases.get(name);
      if (!list) phases.set(name, (list = []));
      list.push(ms);
    }
  };
  try {
    const warmupEnd = performance.now() + (options.warmupMaxSeconds ?? Infinity) * 1000;
    for (let i = 0; i < options.warmup && performance.now() < warmupEnd; i++) await one(false);
    options.onWindowStart?.();
    const t0 = performance.now();
    const end = t0 + options.seconds * 1000;
    while (performance.now() < end && latencies.length + failures < options.maxRequests) await one(true);
    const seconds = (performance.now() - t0) / 1000;
    options.onWindowEnd?.();
    return {
      latencies,
      phases,
      count: latencies.length,
      seconds,
      failures,
      ...(firstFailure ? { firstFailure } : {}),
    };
  } finally {
    agent.destroy();
  }
}

/**
 * POSTs a message to `path` with `Accept: text/event-stream` and reads the
 * stream to its end; resolves with performance.now() of the first `delta`
 * event (NaN when none came) and the names of the events seen.
 */
export function sseFirstDelta(
  agent: http.Agent,
  url: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<{ firstDeltaAt: number; events: string[] }> {
  const base = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'POST',
        path,
        headers: {
          ...headers,
          accept: 'text/event-stream',
          'content-type': 'application/json',
          'content-length': body.length,
        },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`SSE answer HTTP ${res.statusCode}`));
          return;
        }
        let firstDeltaAt = NaN;
        const events: string[] = [];
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const at = performance.now();
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const name = /^event: (.+)$/m.exec(block)?.[1];
            if (!name) continue;
            events.push(name);
            if (name === 'delta' && Number.isNaN(firstDeltaAt)) firstDeltaAt = at;
          }
        });
        res.on('end', () => resolve({ firstDeltaAt, events }));
        res.on('error', reject);
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error('SSE request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** A chat client over the WebSocket: one message at a time, timing its first `delta` frame. */
export interface WsChat {
  /** Sends `text`; resolves at its `final` frame with performance.now() of its first `delta` (NaN when none). */
  ask(text: string): Promise<{ firstDeltaAt: number; status: string }>;
  close(): void;
}

/** Opens `ws://…/api/v1/ws?token=…` and waits for `auth_ok`. */
export async function openWsChat(url: string, token: string, chatId: string): Promise<WsChat> {
  const wsUrl = `${url.replace(/^http/, 'ws')}/api/v1/ws?token=${encodeURIComponent(token)}&platform=bench&user_id=ws-user&chat_id=${encodeURIComponent(chatId)}`;
  const socket = new WebSocket(wsUrl);
  type Frame = { type?: string; event_id?: string; status?: string; ref?: string; error?: { message?: string } };
  let onFrame: ((frame: Frame, at: number) => void) | null = null;
  socket.on('message', (data: Buffer) => {
    const at = performance.now();
    onFrame?.(JSON.parse(data.toString('utf8')) as Frame, at);
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('WebSocket: no auth_ok within 10 s')), 10_000);
    onFrame = (frame) => {
      if (frame.type === 'auth_ok') {
        clearTimeout(timer);
        resolve();
      } else if (frame.type === 'error') {
        clearTimeout(timer);
        reject(new Error(`WebSocket auth failed: ${JSON.stringify(frame)}`));
      }
    };
    socket.once('error', reject);
  });
  let n = 0;
  return {
    ask(text) {
      const ref = `r${++n}`;
      return new Promise((resolve, reject) => {
        let firstDeltaAt = NaN;
        const timer = setTimeout(() => reject(new Error('WebSocket: no final frame within 60 s')), 60_000);
        onFrame = (frame, at) => {
          if (frame.type === 'delta' && Number.isNaN(firstDeltaAt)) firstDeltaAt = at;
          else if (frame.type === 'final') {
            clearTimeout(timer);
            resolve({ firstDeltaAt, status: frame.status ?? '' });
          } else if (frame.type === 'error') {
            clearTimeout(timer);
            reject(new Error(`WebSocket error frame: ${JSON.stringify(frame)}`));
          }
        };
        socket.send(JSON.stringify({ type: 'message', text, ref }));
      });
    },
    close: () => socket.close(),
  };
}
