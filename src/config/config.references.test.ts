import { describe, expect, it } from 'vitest';
import { redactConfig, REDACTED, secretValues } from './config.redact.js';
import { agentIdsOf, defaultAgentOf, globMatches } from './config.references.js';
import { validateConfig, type Config } from './config.schema.js';

const invalid = (raw: unknown) => {
  const result = validateConfig(raw);
  if (result.ok) throw new Error('expected the configuration to be refused');
  return result.errors;
};
const valid = (raw: unknown): Config => {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.config;
};

describe('agents, bindings and principals: references', () => {
  it('without an agents block there is one agent, main, and it is the default', () => {
    const config = valid({});
    expect(agentIdsOf(config)).toEqual(['main']);
    expect(defaultAgentOf(config)).toBe('main');
  });

  it('default_agent: null picks main when defined, else the first agent listed', () => {
    expect(defaultAgentOf(valid({ agents: { support: {}, main: {} } }))).toBe('main');
    expect(defaultAgentOf(valid({ agents: { support: {}, sales: {} } }))).toBe('support');
    expect(defaultAgentOf(valid({ agents: { support: {}, sales: {} }, default_agent: 'sales' }))).toBe('sales');
  });

  it('a binding, a default or a principal naming an unknown agent is refused at its key', () => {
    const errors = invalid({
      agents: { main: {}, support: {} },
      default_agent: 'ghost',
      bindings: [
        { agent: 'support', match: { channel: 'slack' } },
        { agent: 'sales', match: { channel: 'x' } },
      ],
      gateway: { auth: { principals: [{ id: 'alice', tokens: ['a-token-1'], agents: ['nobody', 'sup*'] }] } },
    });
    expect(errors.map((e) => e.path).sort()).toEqual([
      'bindings.1.agent',
      'default_agent',
      'gateway.auth.principals.0.agents.0',
    ]);
    expect(errors.find((e) => e.path === 'bindings.1.agent')?.message).toMatch(/unknown agent "sales".*main, support/);
  });

  it('a token belongs to one principal: a duplicate is refused at its key, and the message never repeats it', () => {
    const errors = invalid({
      gateway: {
        auth: {
          api_tokens: ['shared-token-value'],
          principals: [
            { id: 'alice', tokens: ['alice-token-value'] },
            { id: 'bob', tokens: ['alice-token-value', 'shared-token-value'] },
          ],
        },
      },
    });
    expect(errors.map((e) => e.path).sort()).toEqual([
      'gateway.auth.principals.1.tokens.0',
      'gateway.auth.principals.1.tokens.1',
    ]);
    expect(errors[0]!.message).toMatch(/duplicate token: it is also a token of principal "(alice|default)"/);
    expect(JSON.stringify(errors)).not.toMatch(/token-value/);
  });

  it('built-in principal ids and repeated ids are refused; a binding owner must be a principal', () => {
    const errors = invalid({
      bindings: [{ agent: 'main', owner: 'carol' }],
      gateway: { auth: { principals: [{ id: 'default' }, { id: 'bob' }, { id: 'bob' }] } },
    });
    expect(errors.map((e) => e.path).sort()).toEqual([
      'bindings.0.owner',
      'gateway.auth.principals.0.id',
      'gateway.auth.principals.2.id',
    ]);
  });

  it("redacts every principal's tokens and every agent's provider key, and lists them as secrets", () => {
    const config = valid({
      agents: { main: {}, support: { provider: { type: 'openai', api_key: 'sk-support-secret' } } },
      gateway: { auth: { principals: [{ id: 'alice', tokens: ['alice-secret-1', 'alice-secret-2'] }] } },
    });
    const redacted = redactConfig(config);
    expect(redacted.gateway.auth.principals[0]!.tokens).toEqual([REDACTED, REDACTED]);
    expect(redacted.agents.support!.provider!.api_key).toBe(REDACTED);
    expect(redacted.agents.main!.provider).toBeUndefined();
    expect(JSON.stringify(redacted)).not.toMatch(/alice-secret|sk-support/);
    expect(secretValues(config).sort()).toEqual(['alice-secret-1', 'alice-secret-2', 'sk-support-secret']);
  });

  it('globs: * matches any run of characters, anything else only itself', () => {
    expect(globMatches('*', 'memory_search')).toBe(true);
    expect(globMatches('memory_*', 'memory_search')).toBe(true);
    expect(globMatches('memory_*', 'knowledge_search')).toBe(false);
    expect(globMatches('mcp__*__read', 'mcp__files__read')).toBe(true);
    expect(globMatches('mcp__*__read', 'mcp__files__write')).toBe(false);
    expect(globMatches('a*a', 'a')).toBe(false);
    expect(globMatches('ask_user', 'ask_user')).toBe(true);
  });
});
