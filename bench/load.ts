import http from 'node:http';

/** One request the load generator sends; built fresh for every request (`n` counts from 0). */
export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

export interface LoadOptions {
  /** Base URL; must be http://127.0.0.1:<port>. */
  url: string;
  /** More base URLs (several gateways): request `n` goes to `[url, ...alsoUrls][n % count]`. */
  alsoUrls?: string[];
  /** Requests in flight at any time (also the agent's maxSockets). */
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Hard cap on requests issued, warm-up included. */
  maxRequests: number;
  /** A request (or its response) taking longer than this fails with a timeout. */
  requestTimeoutMs: number;
  /** The status every response should have. */
  expectStatus: number;
  request: (n: number) => LoadRequest;
  /** Optional check of a response body with the expected status (`n` as for `request`); returns an error or undefined. */
  check?: (body: string, n: number) => string | undefined;
  /** Polled before every request: true stops the run early (e.g. the server under test exited). */
  stop?: () => boolean;
  /** Called synchronously when the measured window opens and when it closes; must not throw. */
  onWindowStart?: () => void;
  onWindowEnd?: () => void;
}

export interface LoadResult {
  /** Requests completed inside the measured window. */
  completed: number;
  /** Of those, the ones answered with `expectStatus` (and passing `check`). */
  completedOk: number;
  /** Measured window, in seconds. */
  seconds: number;
  rps: number;
  /** `completedOk` per second: the server's throughput of the work asked for, without its refusals. */
  okRps: number;
  p50Ms: number;
  p99Ms: number;
  /** Every request issued (warm-up, window and the tail after it). */
  issued: number;
  /** Responses with any status that is not 2xx. */
  non2xx: number;
  /** Transport failures, unexpected statuses and failed body checks. */
  errors: number;
  statuses: Record<string, number>;
  firstError?: string;
}

/** The allowed target: loopback only. */
function assertLoopback(url: URL): void {
  if (url.protocol !== 'http:' || url.hostname !== '127.0.0.1') {
    throw new Error(`load generator targets 127.0.0.1 only, not ${url.href}`);
  }
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

interface Outcome {
  status: number;
  body: string;
}

function send(agent: http.Agent, base: URL, spec: LoadRequest, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...spec.headers };
    if (spec.body) {
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = spec.body.length;
    }
    const req = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: spec.method,
        path: spec.path,
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(spec.body);
  });
}

/**
 * Keeps `concurrency` requests in flight for warm-up + duration over a keep-alive
 * agent, then waits for the stragglers. Latency and throughput count only the
 * responses that complete inside the measured window. Stops by itself: no new
 * request after the window closes or after `maxRequests`.
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const bases = [options.url, ...(options.alsoUrls ?? [])].map((url) => new URL(url));
  for (const base of bases) assertLoopback(base);
  const agent = new http.Agent({
    keepAlive: true,
    // Per origin: with several, each may hold every request in flight.
    maxSockets: options.concurrency,
    maxFreeSockets: options.concurrency,
  });
  const start = performance.now();
  const windowStart = start + options.warmupMs;
  const windowEnd = windowStart + options.durationMs;
  let windowOpened = false;
  let windowClosed = false;
  let latencies = new Float64Array(1 << 16);
  let completed = 0;
  let completedOk = 0;
  let issued = 0;
  let non2xx = 0;
  let errors = 0;
  const statuses: Record<string, number> = {};
  let firstError: string | undefined;
  const fail = (message: string): void => {
    errors++;
    firstError ??= message;
  };

  const hook = (fn: (() => void) | undefined): void => {
    try {
      fn?.();
    } catch (err) {
      fail(`window hook failed: ${(err as Error).message}`);
    }
  };
  // Open and close the window on time even when responses are slow.
  const openTimer = setTimeout(() => {
    windowOpened = true;
    hook(options.onWindowStart);
  }, options.warmupMs);
  const closeTimer = setTimeout(() => {
    windowClosed = true;
    hook(options.onWindowEnd);
  }, options.warmupMs + options.durationMs);

  const worker = async (): Promise<void> => {
    while (issued < options.maxRequests && performance.now() < windowEnd && !options.stop?.()) {
      const n = issued++;
      const spec = options.request(n);
      const t0 = performance.now();
      try {
        const { status, body } = await send(agent, bases[n % bases.length]!, spec, options.requestTimeoutMs);
        const t1 = performance.now();
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status < 200 || status > 299) non2xx++;
        let ok = false;
        if (status !== options.expectStatus) {
          fail(
            `${spec.method} ${spec.path} → HTTP ${status} (expected ${options.expectStatus}): ${body.slice(0, 300)}`,
          );
        } else if (options.check) {
          const problem = options.check(body, n);
          if (problem) fail(`${spec.method} ${spec.path} → ${problem}: ${body.slice(0, 300)}`);
          else ok = true;
        } else ok = true;
        if (t1 >= windowStart && t1 <= windowEnd) {
          if (ok) completedOk++;
          if (completed === latencies.length) {
            const grown = new Float64Array(latencies.length * 2);
            grown.set(latencies);
            latencies = grown;
          }
          latencies[completed++] = t1 - t0;
        }
      } catch (err) {
        statuses.error = (statuses.error ?? 0) + 1;
        fail(`${spec.method} ${spec.path} → ${(err as Error).message}`);
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: options.concurrency }, () => worker()));
  } finally {
    clearTimeout(openTimer);
    clearTimeout(closeTimer);
    agent.destroy();
  }
  // A run that stopped early (maxRequests) still reports a closed window.
  if (!windowOpened) hook(options.onWindowStart);
  if (!windowClosed) hook(options.onWindowEnd);

  const measuredEnd = Math.min(performance.now(), windowEnd);
  const seconds = Math.max(0.001, (measuredEnd - windowStart) / 1000);
  const sorted = latencies.slice(0, completed).sort();
  return {
    completed,
    completedOk,
    seconds,
    rps: completed / seconds,
    okRps: completedOk / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    issued,
    non2xx,
    errors,
    statuses,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}
