import type { Config } from '../config/config.schema.js';
import { normalizeVector } from './vectors.js';

/** The `embeddings` block of the configuration (DECISIONS §1). */
export type EmbeddingsConfig = Config['embeddings'];

/** Model used when `embeddings.model` is not set. */
export const DEFAULT_EMBEDDING_MODEL = 'text-embedding-3-small';

/** Turns texts into vectors through an OpenAI-compatible `POST {base_url}/embeddings`. */
export interface EmbeddingsClient {
  /** The model asked for; stored with every vector so vectors of another model are never compared. */
  readonly model: string;
  /**
   * One unit-length vector per text, in order. Large lists are sent in
   * several requests. Rejects with EmbeddingsError on any failure (network,
   * timeout, non-2xx, malformed answer); `signal` aborts it.
   */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

/** An embeddings request failed; the message is safe to log (never holds the API key). */
export class EmbeddingsError extends Error {
  /** The HTTP status when the server answered with an error; null for network errors, timeouts, bad answers. */
  readonly status: number | null;
  constructor(message: string, options?: ErrorOptions & { status?: number }) {
    super(message, options);
    this.name = 'EmbeddingsError';
    this.status = options?.status ?? null;
  }

  /** True when the server refused these inputs (400, 413, 422): retrying the same texts cannot succeed. */
  get rejectedInput(): boolean {
    return this.status === 400 || this.status === 413 || this.status === 422;
  }
}

/** Transport and batching knobs (tests shorten the timeout). */
export interface EmbeddingsClientOptions {
  /** Per-request timeout; default 30 s. */
  timeoutMs?: number;
  /** Most texts per request; default 96. */
  batchSize?: number;
}

/**
 * The client for the configured provider, or null when `embeddings.base_url`
 * is not set (search then ranks by full text alone). `api_key`, when set, is
 * sent as `Authorization: Bearer`.
 */
export function createEmbeddingsClient(
  config: EmbeddingsConfig,
  options: EmbeddingsClientOptions = {},
): EmbeddingsClient | null {
  if (config.base_url === null || config.base_url.trim() === '') return null;
  const url = `${config.base_url.replace(/\/+$/, '')}/embeddings`;
  const model = config.model ?? DEFAULT_EMBEDDING_MODEL;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const batchSize = options.batchSize ?? 96;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (config.api_key) headers.authorization = `Bearer ${config.api_key}`;

  const request = async (texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> => {
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model, input: texts, encoding_format: 'float' }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      const reason = timeout.aborted ? `timed out after ${timeoutMs} ms` : describe(error);
      throw new EmbeddingsError(`embeddings request failed: ${reason}`, { cause: error });
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      throw new EmbeddingsError(`embeddings answer is not JSON (HTTP ${response.status})`, {
        cause: error,
        ...(response.ok ? {} : { status: response.status }),
      });
    }
    if (!response.ok) {
      throw new EmbeddingsError(`embeddings request failed: HTTP ${response.status}${providerMessage(body)}`, {
        status: response.status,
      });
    }
    return parseAnswer(body, texts.length);
  };

  return {
    model,
    async embed(texts, signal) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += batchSize) {
        out.push(...(await request(texts.slice(i, i + batchSize), signal)));
      }
      return out;
    },
  };
}

function parseAnswer(body: unknown, expected: number): Float32Array[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== expected) {
    throw new EmbeddingsError(`embeddings answer must hold ${expected} vectors`);
  }
  const out = new Array<Float32Array | undefined>(expected);
  data.forEach((item: unknown, position) => {
    const entry = item as { index?: unknown; embedding?: unknown } | null;
    const index = typeof entry?.index === 'number' ? entry.index : position;
    const vector = readEmbedding(entry?.embedding);
    if (!Number.isInteger(index) || index < 0 || index >= expected || out[index] !== undefined || !vector) {
      throw new EmbeddingsError('embeddings answer holds a malformed vector');
    }
    out[index] = vector;
  });
  const dimensions = out[0]?.length;
  if (out.some((v) => v === undefined || v.length !== dimensions)) {
    throw new EmbeddingsError('embeddings answer vectors differ in dimension');
  }
  return out as Float32Array[];
}

/** A vector given as numbers, or as base64 little-endian float32 (servers that ignore `encoding_format`). */
function readEmbedding(value: unknown): Float32Array | null {
  if (Array.isArray(value)) {
    if (value.length === 0 || !value.every((x) => typeof x === 'number' && Number.isFinite(x))) return null;
    return normalizeVector(value as number[]);
  }
  if (typeof value === 'string' && value.length > 0) {
    const bytes = Buffer.from(value, 'base64');
    if (bytes.byteLength === 0 || bytes.byteLength % 4 !== 0) return null;
    const floats: number[] = [];
    for (let i = 0; i < bytes.byteLength; i += 4) floats.push(bytes.readFloatLE(i));
    return normalizeVector(floats);
  }
  return null;
}

function providerMessage(body: unknown): string {
  const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
  return typeof message === 'string' ? `: ${message.slice(0, 200)}` : '';
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
