import {
  Anthropic,
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  RawMessageStreamEvent,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import { runGuardedStream, stoppedError, type CallGuard } from './call-guard.js';
import type {
  ChatMessage,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ProviderConfig,
  ToolCall,
  ToolSpec,
} from './provider.js';
import { isRecord, ProviderError, sdkErrorToProviderError, type SdkErrorClasses } from './provider-error.js';

/** The model and endpoint used when `provider.model` / `provider.base_url` are null. */
export { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL } from './defaults.js';
import { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL } from './defaults.js';
import { createModelsProbe } from './provider-probe.js';

/** The SDK's error classes, for the shared error mapping. */
const SDK_ERRORS: SdkErrorClasses = { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError };

/** Upper bound of output tokens per call. */
export const ANTHROPIC_MAX_TOKENS = 4096;
const PLACEHOLDER_KEY = 'not-configured';

/**
 * The Messages API over the official SDK, streamed. The system prompt goes in
 * `system`, tool results travel as `tool_result` blocks in user messages, and
 * stop reasons are normalised to the OpenAI vocabulary (`stop`, `tool_calls`,
 * `length`). Never retries.
 */
export class AnthropicProvider implements ModelProvider {
  readonly type = 'anthropic' as const;
  readonly model: string;
  private readonly client: Anthropic;
  private readonly timeoutMs: number;
  private readonly secrets: string[];
  /** The reachability check: `GET {base_url}/v1/models` (ModelProvider.probe). */
  readonly probe: (signal: AbortSignal) => Promise<void>;

  constructor(config: ProviderConfig) {
    this.model = config.model ?? ANTHROPIC_DEFAULT_MODEL;
    this.probe = createModelsProbe(config) ?? (() => Promise.resolve());
    this.timeoutMs = config.timeout_seconds * 1000;
    this.secrets = config.api_key ? [config.api_key] : [];
    // Explicit values everywhere the SDK would read the environment or
    // credential files: only config/ reads the environment.
    this.client = new Anthropic({
      baseURL: config.base_url ?? ANTHROPIC_DEFAULT_BASE_URL,
      apiKey: config.api_key ?? PLACEHOLDER_KEY,
      webhookKey: null,
      timeout: this.timeoutMs,
      maxRetries: 0,
      logLevel: 'off',
      openTelemetry: false,
    });
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    return runGuardedStream({
      label: 'anthropic',
      timeoutMs: this.timeoutMs,
      signal: request.signal,
      onDelta: request.onDelta,
      maxReplyBytes: request.maxReplyBytes,
      // Building the request inside the guarded call: a mapping failure is a ProviderError too.
      open: async (signal) => {
        const { system, messages } = toAnthropicMessages(request.messages);
        const params: MessageCreateParamsStreaming = {
          model: this.model,
          max_tokens: ANTHROPIC_MAX_TOKENS,
          messages,
          stream: true,
          ...(system !== null ? { system } : {}),
          ...(request.tools.length > 0 ? { tools: request.tools.map(toAnthropicTool) } : {}),
        };
        return this.client.messages.create(params, request.headers ? { signal, headers: request.headers } : { signal });
      },
      accumulator: new EventAccumulator(this.model),
      toError: (err, guard) => this.toProviderError(err, guard),
    });
  }

  private stopped(why: 'timeout' | 'aborted'): ProviderError {
    return stoppedError('anthropic', why, this.timeoutMs);
  }

  private toProviderError(err: unknown, guard: CallGuard): ProviderError {
    return sdkErrorToProviderError(err, {
      label: 'anthropic',
      classes: SDK_ERRORS,
      secrets: this.secrets,
      stoppedBy: guard.outcome,
      stopped: (why) => this.stopped(why),
    });
  }
}

/**
 * Maps the gateway's history to the Messages API: system messages become the
 * `system` parameter; assistant tool calls become `tool_use` blocks; tool
 * results become `tool_result` blocks in a user message; consecutive messages
 * of one role are merged (the API wants the roles to alternate).
 */
export function toAnthropicMessages(history: ChatMessage[]): { system: string | null; messages: MessageParam[] } {
  const systemParts: string[] = [];
  const turns: Array<{ role: 'user' | 'assistant'; content: ContentBlockParam[] }> = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]): void => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const message of history) {
    switch (message.role) {
      case 'system':
        if (message.content) systemParts.push(message.content);
        break;
      case 'user':
        push('user', textBlocks(message.content));
        break;
      case 'assistant':
        push('assistant', [
          ...textBlocks(message.content),
          ...(message.tool_calls ?? []).map((call): ContentBlockParam => ({
            type: 'tool_use',
            id: call.id,
            name: call.name,
            input: parseToolInput(call.arguments),
          })),
        ]);
        break;
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: message.content }]);
        break;
    }
  }
  return { system: systemParts.length > 0 ? systemParts.join('\n\n') : null, messages: turns };
}

/** The API rejects empty text blocks, so empty text contributes none. */
function textBlocks(text: string | null): ContentBlockParam[] {
  return text ? [{ type: 'text', text }] : [];
}

/** `tool_use.input` must be an object; arguments that are not a JSON object become `{}`. */
function parseToolInput(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args);
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

function toAnthropicTool(tool: ToolSpec): Tool {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: { ...tool.parameters, type: 'object' },
  };
}

const STOP_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
};

type Block = { kind: 'text' } | { kind: 'tool'; id: string; name: string; json: string } | { kind: 'other' };

/** Folds stream events into one response. */
class EventAccumulator {
  private text = '';
  private readonly blocks = new Map<number, Block>();
  private usage = { input_tokens: 0, output_tokens: 0 };
  private stopReason: string | null = null;
  private started = false;
  private stoppedCleanly = false;

  constructor(private model: string) {}

  /** Takes one event; returns its text delta (empty when it has none). */
  add(event: RawMessageStreamEvent): string {
    if (!isRecord(event)) {
      throw new ProviderError('anthropic: malformed stream (event is not an object)', 'invalid_response');
    }
    switch (event.type) {
      case 'message_start': {
        this.started = true;
        const message: unknown = event.message;
        if (isRecord(message)) {
          if (typeof message.model === 'string' && message.model) this.model = message.model;
          this.readUsage(message.usage);
        }
        return '';
      }
      case 'content_block_start': {
        const block: unknown = event.content_block;
        if (isRecord(block) && block.type === 'tool_use') {
          const id = typeof block.id === 'string' ? block.id : '';
          const name = typeof block.name === 'string' ? block.name : '';
          // Input normally arrives as input_json_delta; a non-empty start input is taken as is.
          const initial =
            isRecord(block.input) && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : '';
          this.blocks.set(event.index, { kind: 'tool', id, name, json: initial });
          return '';
        }
        if (isRecord(block) && block.type === 'text') {
          this.blocks.set(event.index, { kind: 'text' });
          return typeof block.text === 'string' ? this.appendText(block.text) : '';
        }
        this.blocks.set(event.index, { kind: 'other' });
        return '';
      }
      case 'content_block_delta': {
        const delta: unknown = event.delta;
        if (!isRecord(delta)) return '';
        if (delta.type === 'text_delta' && typeof delta.text === 'string') return this.appendText(delta.text);
        if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          const block = this.blocks.get(event.index);
          if (block?.kind === 'tool') block.json += delta.partial_json;
        }
        return '';
      }
      case 'message_delta': {
        const delta: unknown = event.delta;
        if (isRecord(delta) && typeof delta.stop_reason === 'string') this.stopReason = delta.stop_reason;
        this.readUsage(event.usage);
        return '';
      }
      case 'message_stop':
        this.stoppedCleanly = true;
        return '';
      case 'content_block_stop':
        return '';
    }
    return '';
  }

  private appendText(text: string): string {
    this.text += text;
    return text;
  }

  /** `message_start` carries input tokens; `message_delta` carries cumulative output tokens. */
  private readUsage(usage: unknown): void {
    if (!isRecord(usage)) return;
    if (typeof usage.input_tokens === 'number' && usage.input_tokens >= 0) this.usage.input_tokens = usage.input_tokens;
    if (typeof usage.output_tokens === 'number' && usage.output_tokens >= 0) {
      this.usage.output_tokens = usage.output_tokens;
    }
  }

  /** The complete response; fails when the stream ended before `message_stop`. */
  sofar(): Pick<ModelResponse, 'content' | 'usage' | 'model'> {
    return { content: this.text.length > 0 ? this.text : null, usage: { ...this.usage }, model: this.model };
  }

  finish(): ModelResponse {
    if (!this.started) throw new ProviderError('anthropic: stream without message_start', 'invalid_response');
    if (!this.stoppedCleanly) {
      throw new ProviderError('anthropic: stream ended before the model finished', 'invalid_response');
    }
    const toolCalls: ToolCall[] = [];
    for (const [index, block] of [...this.blocks.entries()].sort((a, b) => a[0] - b[0])) {
      if (block.kind !== 'tool') continue;
      if (!block.id || !block.name) {
        throw new ProviderError(`anthropic: tool_use block ${index} lacks id or name`, 'invalid_response');
      }
      let input: unknown;
      try {
        input = block.json ? JSON.parse(block.json) : {};
      } catch {
        throw new ProviderError(`anthropic: tool_use block ${index} has invalid JSON input`, 'invalid_response');
      }
      toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(input) });
    }
    const reason = this.stopReason ?? 'stop';
    return {
      content: this.text.length > 0 ? this.text : null,
      tool_calls: toolCalls,
      usage: { ...this.usage },
      model: this.model,
      finish_reason: STOP_REASONS[reason] ?? reason,
    };
  }
}
