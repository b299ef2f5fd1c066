/**
 * The agent runtime: the loop (model → tools → … → outcome), the tool registry the capabilities register their
 * tools in, and the model providers behind one interface.
 */
export {
  emptyTotals,
  runAgent,
  type AgentOptions,
  type AgentOutcome,
  type AgentPorts,
  type PendingState,
  type Resolution,
  type ToolCallReport,
  type TurnTotals,
} from './agent.js';
export {
  ASK_USER_TOOL,
  ToolRegistry,
  type AgentTool,
  type ToolContext,
  type ToolSet,
  type ToolSource,
} from './tools.js';
export {
  BUILTIN_PRICES,
  costNanoUsd,
  createProvider,
  priceFor,
  ProviderError,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type Price,
  type ProviderConfig,
  type ProviderErrorKind,
  type ToolCall,
  type ToolSpec,
  type Usage,
} from './providers/index.js';
