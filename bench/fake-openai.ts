import http from 'node:http';
import { exitWithParent, listenAndAnnounce } from './child-server.js';

/**
 * An instant OpenAI-compatible model server for the benchmark:
 * `POST /v1/chat/completions` answers at once, streaming (SSE chunks: role,
 * content, finish + usage, `[DONE]`) or as one JSON completion.
 */

const MODEL = 'bench-model';
const CONTENT = 'hello from the bench model';
const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

let counter = 0;

function chunk(id: string, created: number, model: string, delta: object, finish: string | null, usage?: object) {
  return `data: ${JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage ? { usage } : {}),
  })}\n\n`;
}

function notFound(res: http.ServerResponse): void {
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/chat/completions') return notFound(res);
    let body: { stream?: unknown; model?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: unknown; model?: unknown };
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'invalid JSON', type: 'invalid_request_error' } }));
      return;
    }
    const id = `chatcmpl-bench-${++counter}`;
    const created = Math.floor(Date.now() / 1000);
    const model = typeof body.model === 'string' && body.model ? body.model : MODEL;
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(
        chunk(id, created, model, { role: 'assistant', content: '' }, null) +
          chunk(id, created, model, { content: CONTENT }, null) +
          chunk(id, created, model, {}, 'stop', USAGE) +
          'data: [DONE]\n\n',
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          { index: 0, message: { role: 'assistant', content: CONTENT }, finish_reason: 'stop', logprobs: null },
        ],
        usage: USAGE,
      }),
    );
  });
});

exitWithParent(server);
listenAndAnnounce(server);
