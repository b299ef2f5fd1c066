import type { ServerResponse } from 'node:http';
import { chatChunker, startBenchModel } from './model-common.js';
import { writeSse, type FakeProvider } from './fake-provider-core.js';

/**
 * A streaming OpenAI-compatible model inside the bench's own process, so the
 * moment it writes a token and the moment the bench's client reads the
 * matching `delta` are taken on one clock (time to first token). What it
 * answers depends on the last user message:
 *
 * - `ttft …`: the role chunk at once, the first token `firstTokenDelayMs`
 *   later (its write time kept in `firstTokenAt`), three more tokens 1 ms
 *   apart, then the end with usage;
 * - `slow …`: one token every `slowIntervalMs`, `slowTokens` of them (a long
 *   turn in flight);
 * - anything else: the whole answer at once.
 */
export interface StreamModel {
  /** `http://127.0.0.1:PORT` — the provider's `base_url` is this + `/v1`. */
  origin: string;
  /** performance.now() when the last `ttft` answer's first token was written. */
  readonly firstTokenAt: number;
  close(): Promise<void>;
}

export interface StreamModelOptions {
  firstTokenDelayMs?: number;
  slowIntervalMs?: number;
  slowTokens?: number;
}

interface ChatBody {
  model?: unknown;
  messages?: Array<{ role?: unknown; content?: unknown }>;
}

const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function lastUserText(body: ChatBody): string {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'user' && typeof message.content === 'string') return message.content;
  }
  return '';
}

/** Starts the model on an ephemeral loopback port. */
export async function startStreamModel(options: StreamModelOptions = {}): Promise<StreamModel> {
  const firstTokenDelayMs = options.firstTokenDelayMs ?? 10;
  const slowIntervalMs = options.slowIntervalMs ?? 200;
  const slowTokens = options.slowTokens ?? 25;
  let firstTokenAt = NaN;
  let counter = 0;

  const stream = (res: ServerResponse, body: ChatBody): void => {
    const id = `chatcmpl-stream-${++counter}`;
    const created = Math.floor(Date.now() / 1000);
    const model = typeof body.model === 'string' && body.model ? body.model : 'bench-model';
    const chunk = chatChunker(id, created, model);
    const end = (): void => {
      writeSse(res, chunk({}, 'stop', USAGE));
      if (!res.destroyed && !res.writableEnded) res.end('data: [DONE]\n\n');
    };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    writeSse(res, chunk({ role: 'assistant', content: '' }, null));
    const text = lastUserText(body);
    if (text.startsWith('ttft')) {
      fake.later(firstTokenDelayMs, () => {
        firstTokenAt = performance.now();
        writeSse(res, chunk({ content: 'first' }, null));
        let sent = 1;
        const next = (): void => {
          if (sent >= 4) return end();
          sent++;
          writeSse(res, chunk({ content: ` token ${sent}` }, null));
          fake.later(1, next);
        };
        fake.later(1, next);
      });
      return;
    }
    if (text.startsWith('slow')) {
      let sent = 0;
      const next = (): void => {
        if (sent >= slowTokens) return end();
        sent++;
        writeSse(res, chunk({ content: `t${sent} ` }, null));
        fake.later(slowIntervalMs, next);
      };
      fake.later(slowIntervalMs, next);
      return;
    }
    writeSse(res, chunk({ content: 'hello from the bench model' }, null));
    end();
  };

  const fake: FakeProvider<ChatBody> = await startBenchModel<ChatBody>('bench stream model', stream);

  return {
    origin: fake.origin,
    get firstTokenAt() {
      return firstTokenAt;
    },
    close: () => fake.close(),
  };
}
