import type { Config } from '../../config/config.schema.js';
import { ANTHROPIC_DEFAULT_MODEL, OPENAI_DEFAULT_MODEL } from './defaults.js';
import { EchoProvider } from './echo-provider.js';
import { createModelsProbe } from './provider-probe.js';

export { ProviderError, type ProviderErrorKind } from './provider-error.js';

/** A tool invocation requested by the model. */
export interface ToolCall {
  /** The provider's id for the call; tool results answer it by this id. */
  id: string;
  name: string;
  /** JSON text of the arguments as the model produced it (`{}` when it produced none). */
  arguments: string;
}

/** One entry of the conversation sent to the model, in the gateway's own (OpenAI-like) shape. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string; name: string };

/** A tool the model may call. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
}

/** Token counts the provider reported for one call (zeros when it reported none). */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

/** One model call. */
export interface ModelRequest {
  /** The conversation; the system prompt, if any, first. */
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** Aborts the call (turn interrupted, shutdown): it then fails with kind `aborted`. */
  signal?: AbortSignal;
  /**
   * Receives streamed text as it arrives, in order. An exception thrown here
   * stops the call and is rethrown as is.
   */
  onDelta?: (text: string) => void;
  /**
   * The reply's text is cut at this many bytes of UTF-8 (`limits.payloads.max_reply_bytes`): past it the call
   * is stopped, the text streamed and answered ends at the cap, and the answer says `cut`. Absent: no cap.
   */
  maxReplyBytes?: number;
  /** Headers sent with the call besides the provider's own: the W3C trace context of its span (DECISIONS §21). */
  headers?: Readonly<Record<string, string>>;
}

/** The model's answer to one call. */
export interface ModelResponse {
  /** The text, or null when the model produced none (e.g. only tool calls). */
  content: string | null;
  tool_calls: ToolCall[];
  usage: Usage;
  /** The model that answered, as the server named it (may be a dated variant of the configured one). */
  model: string;
  /** Normalised across providers: `stop`, `tool_calls`, `length`, or the server's own value otherwise. */
  finish_reason: string;
  /** The reply reached `maxReplyBytes` and was cut there (its tool calls, unfinished, are dropped). */
  cut?: true;
}

/** A model behind one interface: echo, OpenAI-compatible or Anthropic. */
export interface ModelProvider {
  readonly type: 'echo' | 'openai' | 'anthropic';
  /** The configured model, for health (`<type>:<model>`) and cost lookup. */
  readonly model: string;
  /**
   * Makes exactly one model call (no retries, no hidden extra calls).
   * Every failure rejects with a `ProviderError`; the call never outlives
   * `timeout_seconds` of silence from the server.
   */
  complete(request: ModelRequest): Promise<ModelResponse>;
  /**
   * The cheap reachability check (the provider's models list): resolves when
   * the server answers, rejects with a `ProviderError` naming the cause
   * otherwise; `signal` aborts it. Never a model call. Providers without it
   * (test doubles) are judged by their calls alone.
   */
  probe?(signal: AbortSignal): Promise<void>;
}

/** The provider block of the configuration (DECISIONS §1). */
export type ProviderConfig = Config['provider'];

/**
 * A provider whose SDK is loaded on first use, so a gateway on the `echo`
 * provider never pays the memory of the OpenAI or Anthropic SDK. Its probe
 * needs no SDK and loads none.
 */
export class LazyProvider implements ModelProvider {
  private inner: Promise<ModelProvider> | undefined;
  constructor(
    readonly type: 'openai' | 'anthropic',
    readonly model: string,
    private readonly load: () => Promise<ModelProvider>,
    private readonly probeModels?: (signal: AbortSignal) => Promise<void>,
  ) {}

  async probe(signal: AbortSignal): Promise<void> {
    if (this.probeModels) return this.probeModels(signal);
    const inner = await this.resolve();
    return inner.probe?.(signal);
  }

  /** The loaded provider (tests, diagnostics). */
  resolve(): Promise<ModelProvider> {
    this.inner ??= this.load();
    return this.inner;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    return (await this.resolve()).complete(request);
  }
}

/** Builds the configured provider; the composition root's single entry point here. */
export function createProvider(config: ProviderConfig): ModelProvider {
  switch (config.type) {
    case 'echo':
      return new EchoProvider();
    case 'openai':
      return new LazyProvider(
        'openai',
        config.model ?? OPENAI_DEFAULT_MODEL,
        async () => {
          const { OpenAIProvider } = await import('./openai-provider.js');
          return new OpenAIProvider(config);
        },
        createModelsProbe(config) ?? undefined,
      );
    case 'anthropic':
      return new LazyProvider(
        'anthropic',
        config.model ?? ANTHROPIC_DEFAULT_MODEL,
        async () => {
          const { AnthropicProvider } = await import('./anthropic-provider.js');
          return new AnthropicProvider(config);
        },
        createModelsProbe(config) ?? undefined,
      );
  }
}
