/** Model used by the `openai` provider when `provider.model` is null. */
export const OPENAI_DEFAULT_MODEL = 'gpt-4o-mini';
/** Model used by the `anthropic` provider when `provider.model` is null. */
export const ANTHROPIC_DEFAULT_MODEL = 'claude-sonnet-4-6';
/** Endpoint of the `openai` provider when `provider.base_url` is null. */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
/** Endpoint of the `anthropic` provider when `provider.base_url` is null (the API's paths start with `/v1/`). */
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
