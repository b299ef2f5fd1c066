import { randomUUID } from 'node:crypto';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { runGuardedStream, stoppedError, type CallGuard } from './call-guard.js';
import { HttpStatusError, SseJsonClient, StreamErrorEvent } from './sse-client.js';
import type {
  ChatMessage,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ProviderConfig,
  ToolCall,
  ToolSpec,
} from './provider.js';
import { isRecord, networkCode, ProviderError, upstreamDetail } from './provider-error.js';

/** The model and endpoint used when `provider.model` / `provider.base_url` are null. */
export { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_MODEL } from './defaults.js';
import { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_MODEL } from './defaults.js';
import { createModelsProbe } from './provider-probe.js';

/** Sent when no key is configured: local servers (Ollama, vLLM, llama.cpp) need none; some proxies insist on one. */
const PLACEHOLDER_KEY = 'not-needed';

/**
 * Chat Completions against any OpenAI-compatible server (OpenAI, Ollama,
 * vLLM, llama.cpp), over a lean streaming HTTP client (ADR 0026; the official
 * SDK's types describe the wire). Always streams, with usage requested in the
 * final chunk; never retries (the gateway decides about retries).
 */
export class OpenAIProvider implements ModelProvider {
  readonly type = 'openai' as const;
  readonly model: string;
  private readonly client: SseJsonClient;
  private readonly timeoutMs: number;
  private readonly secrets: string[];
  /** The reachability check: `GET {base_url}/models` (ModelProvider.probe). */
  readonly probe: (signal: AbortSignal) => Promise<void>;

  constructor(config: ProviderConfig) {
    this.model = config.model ?? OPENAI_DEFAULT_MODEL;
    this.probe = createModelsProbe(config) ?? (() => Promise.resolve());
    this.timeoutMs = config.timeout_seconds * 1000;
    this.secrets = config.api_key ? [config.api_key] : [];
    const base = (config.base_url ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.client = new SseJsonClient(`${base}/chat/completions`, {
      authorization: `Bearer ${config.api_key ?? PLACEHOLDER_KEY}`,
    });
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    return runGuardedStream({
      label: 'openai',
      timeoutMs: this.timeoutMs,
      signal: request.signal,
      onDelta: request.onDelta,
      maxReplyBytes: request.maxReplyBytes,
      // Building the request inside the guarded call: a mapping failure is a ProviderError too.
      open: async (signal) => {
        const params: ChatCompletionCreateParamsStreaming = {
          model: this.model,
          messages: toOpenAIMessages(request.messages),
          stream: true,
          stream_options: { include_usage: true },
          ...(request.tools.length > 0 ? { tools: request.tools.map(toOpenAITool) } : {}),
        };
        return (await this.client.stream(params, signal, request.headers)) as AsyncIterable<ChatCompletionChunk>;
      },
      accumulator: new ChunkAccumulator(this.model),
      toError: (err, guard) => this.toProviderError(err, guard),
    });
  }

  private stopped(why: 'timeout' | 'aborted'): ProviderError {
    return stoppedError('openai', why, this.timeoutMs);
  }

  /** Maps anything the call threw to a ProviderError whose message never carries the api key. */
  private toProviderError(err: unknown, guard: CallGuard): ProviderError {
    if (err instanceof ProviderError) return err;
    if (guard.outcome) return this.stopped(guard.outcome);
    if (err instanceof HttpStatusError || err instanceof StreamErrorEvent) {
      const detail = upstreamDetail(err instanceof HttpStatusError ? err.body : { error: err.error }, this.secrets);
      return err instanceof HttpStatusError
        ? new ProviderError(`openai: HTTP ${err.status}`, 'http', err.status, undefined, detail)
        : new ProviderError('openai: error in stream', 'http', undefined, undefined, detail);
    }
    if (err instanceof SyntaxError) {
      return new ProviderError('openai: malformed stream (invalid JSON)', 'invalid_response');
    }
    const code = networkCode(err);
    if (code) {
      return new ProviderError(`openai: cannot reach the server (${code})`, 'network', undefined, code);
    }
    return new ProviderError('openai: unexpected response from the server', 'invalid_response');
  }
}

/** Maps the gateway's history to the Chat Completions message shape. */
export function toOpenAIMessages(messages: ChatMessage[]): ChatCompletionMessageParam[] {
  return messages.map((message): ChatCompletionMessageParam => {
    switch (message.role) {
      case 'system':
        return { role: 'system', content: message.content };
      case 'user':
        return { role: 'user', content: message.content };
      case 'assistant':
        return {
          role: 'assistant',
          content: message.content,
          ...(message.tool_calls && message.tool_calls.length > 0
            ? {
                tool_calls: message.tool_calls.map((call) => ({
                  id: call.id,
                  type: 'function' as const,
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        };
      case 'tool':
        return { role: 'tool', tool_call_id: message.tool_call_id, content: message.content };
    }
  });
}

function toOpenAITool(tool: ToolSpec): ChatCompletionTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

/**
 * Folds streamed chunks into one response: text deltas concatenated, tool-call
 * deltas merged by index (id and name in the first, arguments split across
 * the rest), usage from the chunk that carries it.
 */
class ChunkAccumulator {
  private text = '';
  private readonly calls = new Map<number, PendingCall>();
  private lastIndex = -1;
  private usage = { input_tokens: 0, output_tokens: 0 };
  private finishReason: string | null = null;
  private chunks = 0;

  constructor(private model: string) {}

  /** Takes one chunk; returns its text delta (empty when it has none). */
  add(chunk: ChatCompletionChunk): string {
    if (!isRecord(chunk))
      throw new ProviderError('openai: malformed stream (event is not an object)', 'invalid_response');
    this.chunks++;
    if (typeof chunk.model === 'string' && chunk.model) this.model = chunk.model;
    if (isRecord(chunk.usage)) {
      this.usage = {
        input_tokens: toCount(chunk.usage.prompt_tokens),
        output_tokens: toCount(chunk.usage.completion_tokens),
      };
    }
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isRecord(choice)) return '';
    if (typeof choice.finish_reason === 'string' && choice.finish_reason) this.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (!isRecord(delta)) return '';
    const toolDeltas: unknown = delta.tool_calls;
    if (Array.isArray(toolDeltas)) for (const part of toolDeltas as unknown[]) this.addToolDelta(part);
    if (typeof delta.content === 'string' && delta.content) {
      this.text += delta.content;
      return delta.content;
    }
    return '';
  }

  private addToolDelta(part: unknown): void {
    if (!isRecord(part)) return;
    // `index` is in the spec; a few compatible servers omit it and send one call per id.
    let index: number;
    if (typeof part.index === 'number') index = part.index;
    else if (part.id && ![...this.calls.values()].some((c) => c.id === part.id)) index = this.calls.size;
    else index = Math.max(this.lastIndex, 0);
    this.lastIndex = index;
    let slot = this.calls.get(index);
    if (!slot) {
      slot = { id: '', name: '', args: '' };
      this.calls.set(index, slot);
    }
    if (typeof part.id === 'string' && part.id) slot.id = part.id;
    const fn: unknown = part.function;
    if (isRecord(fn)) {
      if (typeof fn.name === 'string' && fn.name) slot.name = fn.name;
      if (typeof fn.arguments === 'string') slot.args += fn.arguments;
      else if (isRecord(fn.arguments)) slot.args += JSON.stringify(fn.arguments);
    }
  }

  /** The complete response; fails when the stream ended before the model finished. */
  sofar(): Pick<ModelResponse, 'content' | 'usage' | 'model'> {
    return { content: this.text.length > 0 ? this.text : null, usage: this.usage, model: this.model };
  }

  finish(): ModelResponse {
    if (this.chunks === 0) throw new ProviderError('openai: empty stream', 'invalid_response');
    if (this.finishReason === null) {
      throw new ProviderError('openai: stream ended before the model finished', 'invalid_response');
    }
    const toolCalls: ToolCall[] = [];
    for (const [index, call] of [...this.calls.entries()].sort((a, b) => a[0] - b[0])) {
      if (!call.name) throw new ProviderError(`openai: tool call ${index} has no name`, 'invalid_response');
      toolCalls.push({ id: call.id || `call_${randomUUID()}`, name: call.name, arguments: call.args || '{}' });
    }
    return {
      content: this.text.length > 0 ? this.text : null,
      tool_calls: toolCalls,
      usage: this.usage,
      model: this.model,
      finish_reason: this.finishReason,
    };
  }
}

function toCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}
