import { ANTHROPIC_DEFAULT_BASE_URL, OPENAI_DEFAULT_BASE_URL } from './defaults.js';
import type { ProviderConfig } from './provider.js';
import { networkCode, ProviderError, upstreamDetail } from './provider-error.js';

/** `anthropic-version` sent with the Anthropic models call (the one the SDK sends). */
const ANTHROPIC_VERSION = '2023-06-01';
/** Most bytes of an error body read for its message. */
const MAX_ERROR_BODY_BYTES = 8 * 1024;
/**
 * Answers that show a server is there though it lists no models: `/models`
 * not offered (404, 405). A wrong `base_url` is seen on the turns' own calls.
 */
const REACHABLE_STATUSES = new Set([404, 405]);

/**
 * The cheap reachability call of a provider, with plain `fetch` so that
 * checking never loads an SDK: OpenAI-compatible `GET {base_url}/models`,
 * Anthropic `GET {base_url}/v1/models?limit=1`. The returned function
 * resolves when the server answered 2xx (or 404/405: there, but no models
 * list) and otherwise rejects with a ProviderError whose message names the
 * cause (`openai: cannot reach the server (ECONNREFUSED)`, `anthropic: HTTP
 * 401: …`) and never holds the api key. `signal` aborts it (kind `aborted`).
 * Null for `echo`, which is always reachable.
 */
export function createModelsProbe(config: ProviderConfig): ((signal: AbortSignal) => Promise<void>) | null {
  if (config.type === 'echo') return null;
  const label = config.type;
  const secrets = config.api_key ? [config.api_key] : [];
  let url: string;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (config.type === 'openai') {
    url = `${trimSlashes(config.base_url ?? OPENAI_DEFAULT_BASE_URL)}/models`;
    if (config.api_key) headers.authorization = `Bearer ${config.api_key}`;
  } else {
    url = `${trimSlashes(config.base_url ?? ANTHROPIC_DEFAULT_BASE_URL)}/v1/models?limit=1`;
    headers['anthropic-version'] = ANTHROPIC_VERSION;
    if (config.api_key) headers['x-api-key'] = config.api_key;
  }

  return async (signal) => {
    let response: Response;
    try {
      // A redirect is answered as it is: the key is never sent on to another address.
      response = await fetch(url, { headers, signal, redirect: 'manual' });
    } catch (err) {
      if (signal.aborted) throw new ProviderError(`${label}: models call aborted`, 'aborted');
      const code = networkCode(err);
      throw new ProviderError(
        `${label}: cannot reach the server${code ? ` (${code})` : ''}`,
        'network',
        undefined,
        code ?? undefined,
      );
    }
    if (response.ok || REACHABLE_STATUSES.has(response.status)) {
      await response.body?.cancel().catch(() => undefined);
      return;
    }
    const detail = upstreamDetail(parseJson(await readBounded(response)), secrets);
    throw new ProviderError(`${label}: HTTP ${response.status}`, 'http', response.status, undefined, detail);
  };
}

function trimSlashes(url: string): string {
  return url.replace(/\/+$/, '');
}

/** The first MAX_ERROR_BODY_BYTES of a body as text (the rest is not read); '' when it cannot be read. */
async function readBounded(response: Response): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (!reader) return '';
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ERROR_BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.byteLength;
    }
  } catch {
    return '';
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(parts).subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
