/** Model used by the `openai` provider when `provider.model` is null. */
export const OPENAI_DEFAULT_MODEL = 'gpt-4o-mini';
/** Model used by the `anthropic` provider when `provider.model` is null. */
export const ANTHROPIC_DEFAULT_MODEL = 'claude-sonnet-4-6';
