/**
 * A real OTLP/HTTP trace receiver for tests: a node:http server on 127.0.0.1 that takes what an OpenTelemetry
 * exporter POSTs to `/v1/traces` (OTLP JSON, gzip or not), answers as a collector does, and keeps every span
 * decoded into a flat shape: hex ids, attributes as plain values, times in ns, and its resource's attributes.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';

/** One received span. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  status: { code?: number };
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:PORT/v1/traces`: the exporter's URL. */
  readonly url: string;
  /** Every span received so far, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** POST requests received (exports), whatever their content. */
  readonly posts: number;
  /** Resolves once `predicate` holds for the spans received (checked at each export); rejects after `timeoutMs`. */
  waitFor(what: string, predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
};
type OtlpAttribute = { key: string; value: OtlpValue };

function valueOf(value: OtlpValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = valueOf(value);
  return out;
}

/** OTLP JSON ids are hex; a base64 one (the protobuf JSON mapping) is turned into hex too. */
function hexId(id: string | undefined, bytes: number): string {
  if (!id) return '';
  if (new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(id)) return id;
  return Buffer.from(id, 'base64').toString('hex');
}

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId?: string;
        spanId?: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        startTimeUnixNano?: string | number;
        endTimeUnixNano?: string | number;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
      }>;
    }>;
  }>;
}

/** Decodes one export request into spans. */
export function decodeExport(body: ExportRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          traceId: hexId(span.traceId, 16),
          spanId: hexId(span.spanId, 8),
          parentSpanId: hexId(span.parentSpanId, 8),
          name: span.name,
          kind: span.kind ?? 0,
          startNs: BigInt(span.startTimeUnixNano ?? 0),
          endNs: BigInt(span.endTimeUnixNano ?? 0),
          attributes: attributesOf(span.attributes),
          resource,
          status: span.status ?? {},
        });
      }
    }
  }
  return spans;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const raw = Buffer.concat(parts);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

/** Starts a receiver on an ephemeral loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let posts = 0;
  const watchers = new Set<() => void>();
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    posts++;
    readBody(req).then(
      (body) => {
        const type = String(req.headers['content-type'] ?? '');
        if (!type.includes('json')) {
          res.writeHead(415, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        spans.push(...decodeExport(JSON.parse(body.toString('utf8')) as ExportRequest));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        for (const watcher of [...watchers]) watcher();
      },
      () => res.writeHead(400).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    get posts() {
      return posts;
    },
    waitFor(what, predicate, timeoutMs = 10_000) {
      if (predicate(spans)) return Promise.resolve(spans);
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (!predicate(spans)) return;
          cleanup();
          resolve(spans);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(`gave up waiting for ${what}: received ${spans.map((s) => s.name).join(', ') || 'nothing'}`),
          );
        }, timeoutMs);
        const cleanup = (): void => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
