/** Model providers: one interface over echo, OpenAI-compatible and Anthropic servers, plus pricing. */
export {
  createProvider,
  ProviderError,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ProviderConfig,
  type ProviderErrorKind,
  type ToolCall,
  type ToolSpec,
  type Usage,
} from './provider.js';
export { BUILTIN_PRICES, costNanoUsd, priceFor, type Price } from './pricing.js';
