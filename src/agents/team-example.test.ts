import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentProfiles } from './index.js';
import { readConfigFile } from '../config/config.load.js';
import { defaultAgentOf } from '../config/config.references.js';
import { validateConfig } from '../config/config.schema.js';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'team', 'gatehouse.yaml');

describe('examples/team/gatehouse.yaml', () => {
  it('validates: two agents, three principals, a bound Telegram group', () => {
    const result = validateConfig(readConfigFile(EXAMPLE));
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    const config = result.config;
    expect(agentProfiles(config).map((a) => [a.id, a.provider.model, a.memoryScope])).toEqual([
      ['main', 'gpt-4o-mini', 'principal'],
      ['helper', 'gpt-4o', 'agent'],
    ]);
    expect(defaultAgentOf(config)).toBe('main');
    expect(config.gateway.auth.principals.map((p) => [p.id, p.role])).toEqual([
      ['alice', 'api'],
      ['bob', 'api'],
      ['ops', 'admin'],
    ]);
    expect(config.bindings[0]).toMatchObject({ agent: 'helper', owner: 'alice' });
  });
});
