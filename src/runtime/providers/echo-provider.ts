import type { ModelProvider, ModelRequest, ModelResponse } from './provider.js';
import { ProviderError } from './provider-error.js';

/**
 * The offline default (DECISIONS §10): answers `echo: <text of the last user
 * message>`, streamed in a few pieces, with no tool calls and zero usage, so
 * the whole gateway runs and costs nothing without a model.
 */
export class EchoProvider implements ModelProvider {
  readonly type = 'echo' as const;
  readonly model = 'echo';

  /** Always reachable: there is no server. */
  probe(): Promise<void> {
    return Promise.resolve();
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    if (request.signal?.aborted) throw new ProviderError('echo: call aborted', 'aborted');
    let text = '';
    for (let i = request.messages.length - 1; i >= 0; i--) {
      const message = request.messages[i];
      if (message?.role === 'user') {
        text = message.content;
        break;
      }
    }
    const content = `echo: ${text}`;
    if (request.onDelta) for (const piece of splitPieces(content)) request.onDelta(piece);
    return {
      content,
      tool_calls: [],
      usage: { input_tokens: 0, output_tokens: 0 },
      model: 'echo',
      finish_reason: 'stop',
    };
  }
}

/** Splits text into at most three pieces at word boundaries (concatenation gives the text back). */
function splitPieces(text: string): string[] {
  const words = text.split(/(?<=\s)/);
  const size = Math.max(1, Math.ceil(words.length / 3));
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += size) pieces.push(words.slice(i, i + size).join(''));
  return pieces;
}
