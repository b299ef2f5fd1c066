import type { ServerResponse } from 'node:http';
import { chatChunker } from './model-common.js';
import { announce, exitWithParent } from './child-server.js';
import { playReply, Script, sendJson, startFakeProvider, writeSse, type FakeProvider } from './fake-provider-core.js';

/**
 * An instant OpenAI-compatible model server for the benchmark (a child
 * process): `POST /v1/chat/completions` answers at once, streaming (SSE
 * chunks: role, content, finish + usage, `[DONE]`) or as one JSON
 * completion. Built on the fake-provider core like the tests' fakes; its
 * script answers every chat call by design (`always`), and it records
 * nothing, so memory stays flat over a long run.
 */

const MODEL = 'bench-model';
const CONTENT = 'hello from the bench model';
const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

interface ChatBody {
  stream?: unknown;
  model?: unknown;
}

let counter = 0;

/** The one answer of the bench model: `CONTENT` with `USAGE`, at once. */
function answerInstantly(res: ServerResponse, body: ChatBody): void {
  const id = `chatcmpl-bench-${++counter}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body.model === 'string' && body.model ? body.model : MODEL;
  if (body.stream !== true) {
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: CONTENT }, finish_reason: 'stop', logprobs: null }],
      usage: USAGE,
    });
    return;
  }
  const chunk = chatChunker(id, created, model);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  writeSse(res, chunk({ role: 'assistant', content: '' }, null));
  writeSse(res, chunk({ content: CONTENT }, null));
  writeSse(res, chunk({}, 'stop', USAGE));
  res.end('data: [DONE]\n\n');
}

const chat = new Script<{ instant: true }>();
chat.always({ instant: true });

const fake: FakeProvider<ChatBody> = await startFakeProvider<ChatBody>({
  name: 'bench model',
  record: false,
  keepAliveTimeoutMs: 30_000,
  route({ method, path, body, res }): boolean {
    // The gateway's provider health check lists the models.
    if (method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: [{ id: 'bench-model', object: 'model' }] });
      return true;
    }
    if (method !== 'POST' || path !== '/v1/chat/completions') return false;
    return playReply(fake, res, body, chat.next(), {
      answer: (response, request) => answerInstantly(response, request),
      errorBody: (status) => ({ error: { message: `bench model error ${status}`, type: 'server_error' } }),
    });
  },
});

exitWithParent(() => fake.close());
announce(fake.origin);
