import type { ServerResponse } from 'node:http';
import { chatChunker, startBenchModel } from './model-common.js';
import { announce, exitWithParent } from './child-server.js';
import { writeSse, type FakeProvider } from './fake-provider-core.js';

/**
 * The model of the memory scenarios and the soak (a child process): an
 * OpenAI-compatible streaming server whose answer is chosen by `key=value`
 * words in the last user message, so one gateway serves every kind of turn:
 *
 * - `delay=<ms>`: the answer starts that much later (a model taking its time,
 *   so the gateway's capacity is its turn slots, not the CPU);
 * - `reply=long bytes=<n> chunk=<n> interval=<ms>`: a long reply of `bytes`
 *   in deltas of `chunk` bytes, one every `interval` ms (0: as fast as the
 *   socket takes them);
 * - `tool=<name> tool_bytes=<n>`: first a call of the tool `<name>` with
 *   `{"bytes": n}`; once the tool's result is in the conversation, a short
 *   reply naming the result's length (`tool result: <n> bytes`);
 * - anything else: a short reply at once.
 *
 * It records nothing, so its memory stays flat over a long run.
 */

interface ChatMessage {
  role?: unknown;
  content?: unknown;
}

interface ChatBody {
  model?: unknown;
  messages?: ChatMessage[];
}

const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

/** The `key=value` words of a text. */
function wordsOf(text: string): Map<string, string> {
  const words = new Map<string, string>();
  for (const match of text.matchAll(/(\w+)=(\S+)/g)) words.set(match[1]!, match[2]!);
  return words;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return (content as unknown[])
      .map((part) => {
        const text = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
        return typeof text === 'string' ? text : '';
      })
      .join('');
  }
  return '';
}

let counter = 0;

function answer(res: ServerResponse, body: ChatBody): void {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = messages.at(-1);
  let userText = '';
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user') {
      userText = textOf(messages[i]!.content);
      break;
    }
  }
  const words = wordsOf(userText);
  const number = (key: string, fallback: number): number => {
    const value = Number(words.get(key));
    return Number.isFinite(value) && value >= 0 ? value : fallback;
  };
  const id = `chatcmpl-mixed-${++counter}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body.model === 'string' && body.model ? body.model : 'bench-model';
  const chunk = chatChunker(id, created, model);
  const end = (finish: string): void => {
    writeSse(res, chunk({}, finish, USAGE));
    if (!res.destroyed && !res.writableEnded) res.end('data: [DONE]\n\n');
  };
  const start = (): void => {
    if (res.destroyed) return;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    writeSse(res, chunk({ role: 'assistant', content: '' }, null));
    const tool = words.get('tool');
    if (tool !== undefined) {
      if (last?.role === 'tool') {
        const result = textOf(last.content);
        const said = result.startsWith('{"error"')
          ? `tool error: ${result.slice(0, 200)}`
          : `tool result: ${Buffer.byteLength(result)} bytes`;
        writeSse(res, chunk({ content: said }, null));
        end('stop');
        return;
      }
      const args = JSON.stringify({ bytes: number('tool_bytes', 1_000_000) });
      writeSse(
        res,
        chunk(
          { tool_calls: [{ index: 0, id: `call_${id}`, type: 'function', function: { name: tool, arguments: '' } }] },
          null,
        ),
      );
      writeSse(res, chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] }, null));
      end('tool_calls');
      return;
    }
    if (words.get('reply') === 'long') {
      const total = number('bytes', 1_000_000);
      const size = Math.max(1, number('chunk', 16_384));
      const interval = number('interval', 0);
      const piece = 'x'.repeat(size);
      let sent = 0;
      const next = (): void => {
        if (res.destroyed) return;
        while (sent < total) {
          const n = Math.min(size, total - sent);
          sent += n;
          writeSse(res, chunk({ content: n === size ? piece : piece.slice(0, n) }, null));
          if (interval > 0) {
            fake.later(interval, next);
            return;
          }
          // As fast as the gateway reads: wait for the socket to drain.
          if (res.writableNeedDrain) {
            res.once('drain', next);
            return;
          }
        }
        end('stop');
      };
      next();
      return;
    }
    writeSse(res, chunk({ content: 'hello from the mixed bench model' }, null));
    end('stop');
  };
  const delay = number('delay', 0);
  if (delay > 0) fake.later(delay, start);
  else start();
}

const fake: FakeProvider<ChatBody> = await startBenchModel<ChatBody>('mixed bench model', answer);

exitWithParent(() => fake.close());
announce(fake.origin);
