import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../config/config.schema.js';
import { AnthropicProvider } from './anthropic-provider.js';
import { EchoProvider } from './echo-provider.js';
import { OpenAIProvider } from './openai-provider.js';
import type { LazyProvider } from './provider.js';
import { createProvider, ProviderError, type ProviderConfig } from './provider.js';

function config(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return { ...defaultConfig().provider, ...overrides };
}

describe('createProvider', () => {
  it('builds the configured provider, echo by default', async () => {
    const echo = createProvider(defaultConfig().provider);
    expect(echo).toBeInstanceOf(EchoProvider);
    expect(`${echo.type}:${echo.model}`).toBe('echo:echo');
    expect(await (createProvider(config({ type: 'openai' })) as LazyProvider).resolve()).toBeInstanceOf(OpenAIProvider);
    expect(await (createProvider(config({ type: 'anthropic' })) as LazyProvider).resolve()).toBeInstanceOf(
      AnthropicProvider,
    );
    expect(createProvider(config({ type: 'openai', model: 'llama3.1:8b' })).model).toBe('llama3.1:8b');
  });
});

describe('echo provider', () => {
  it('answers with the last user message, streamed, at no cost', async () => {
    const provider = createProvider(config());
    const deltas: string[] = [];
    const res = await provider.complete({
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'echo: first' },
        { role: 'user', content: 'hello brave new world' },
      ],
      tools: [{ name: 't', description: 'd', parameters: { type: 'object' } }],
      onDelta: (d) => deltas.push(d),
    });
    expect(res).toEqual({
      content: 'echo: hello brave new world',
      tool_calls: [],
      usage: { input_tokens: 0, output_tokens: 0 },
      model: 'echo',
      finish_reason: 'stop',
    });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.length).toBeLessThanOrEqual(3);
    expect(deltas.join('')).toBe('echo: hello brave new world');
  });

  it('fails with kind aborted when the signal is already aborted', async () => {
    const err = await createProvider(config())
      .complete({ messages: [{ role: 'user', content: 'x' }], tools: [], signal: AbortSignal.abort() })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).kind).toBe('aborted');
  });
});
