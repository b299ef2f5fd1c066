/** What the bench's fake OpenAI-compatible models share: stream chunks and their two routes. */

import type { ServerResponse } from 'node:http';
import { sendJson, startFakeProvider, type FakeProvider } from './fake-provider-core.js';

/** Builds the `chat.completion.chunk` objects of one streamed completion. */
export function chatChunker(id: string, created: number, model: string) {
  return (delta: object, finish: string | null, usage?: object) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage ? { usage } : {}),
  });
}

/**
 * Starts a fake OpenAI-compatible bench model (no request record, 30 s
 * keep-alive): `GET /v1/models` lists `bench-model`, and each
 * `POST /v1/chat/completions` goes to `answer`.
 */
export function startBenchModel<Body>(
  name: string,
  answer: (res: ServerResponse, body: Body) => void,
): Promise<FakeProvider<Body>> {
  return startFakeProvider<Body>({
    name,
    record: false,
    keepAliveTimeoutMs: 30_000,
    route({ method, path, body, res }): boolean {
      if (method === 'GET' && path === '/v1/models') {
        sendJson(res, 200, { object: 'list', data: [{ id: 'bench-model', object: 'model' }] });
        return true;
      }
      if (method !== 'POST' || path !== '/v1/chat/completions') return false;
      answer(res, body);
      return true;
    },
  });
}
