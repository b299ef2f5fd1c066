import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { configKeyDocs, exampleConfigYaml, renderConfigYaml, type ConfigKeyDoc } from './config.example.js';
import { loadConfig } from './config.load.js';
import { defaultConfig, validateConfig } from './config.schema.js';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'gatehouse.yaml');

function leaves(docs: ConfigKeyDoc[]): ConfigKeyDoc[] {
  return docs.flatMap((doc) => (doc.children ? [doc, ...leaves(doc.children)] : [doc]));
}

describe('examples/gatehouse.yaml', () => {
  it('is what the schema generates (npm run example-config rewrites it)', () => {
    expect(readFileSync(EXAMPLE, 'utf8')).toBe(exampleConfigYaml());
  });

  it('loads without errors, as the defaults', () => {
    const loaded = loadConfig({ argv: ['--config', EXAMPLE], env: {}, cwd: tmpdir() });
    expect(loaded.warnings).toEqual([]);
    expect(loaded.config).toEqual({ ...defaultConfig(), data_dir: join(tmpdir(), 'data') });
  });

  it('documents every key: each has a description, and every key of the defaults is written', () => {
    const docs = leaves(configKeyDocs());
    expect(docs.filter((doc) => doc.description.trim() === '').map((doc) => doc.path)).toEqual([]);
    const written = parse(exampleConfigYaml()) as Record<string, unknown>;
    expect(written).toEqual(JSON.parse(JSON.stringify(defaultConfig())));
  });

  it('marks secrets and lists the allowed values of enums', () => {
    const docs = new Map(leaves(configKeyDocs()).map((doc) => [doc.path, doc]));
    expect(docs.get('provider.api_key')?.secret).toBe(true);
    expect(docs.get('provider.model')?.secret).toBe(false);
    expect(docs.get('gateway.auth.mode')?.values).toEqual(['open', 'allowlist', 'pairing']);
    expect(exampleConfigYaml()).toMatch(/One of: open, allowlist, pairing\.\n\s+mode: pairing\n/);
  });
});

describe('renderConfigYaml with values (gatehouse init)', () => {
  const values = {
    gateway: { host: '0.0.0.0', auth: { mode: 'allowlist', allowed_users: ['telegram:42', 'ops: night'] } },
    provider: { type: 'openai', base_url: 'http://127.0.0.1:11434/v1', model: 'llama3.2' },
    channels: { webhook: { enabled: true, secret: 'whsec-"quoted"\nline' } },
    agent: { system_prompt: 'Be brief.\nAnswer in English.' },
  };

  it('writes the chosen values and comments out the rest, and loads as exactly those values', () => {
    const text = renderConfigYaml({ header: ['test'], values, commentUnset: true });
    expect(parse(text)).toEqual(values);
    expect(text).toContain('\n# storage:\n');
    expect(text).toContain('\n  # port: 58123\n');
    expect(text).toMatch(/Default:\s+(# )?127\.0\.0\.1\.\n {2}host: 0\.0\.0\.0\n/);
    const checked = validateConfig(parse(text));
    expect(checked.ok).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-example-'));
    writeFileSync(join(dir, 'gatehouse.yaml'), text);
    const loaded = loadConfig({ argv: [], env: {}, cwd: dir });
    expect(loaded.config.gateway.auth.allowed_users).toEqual(values.gateway.auth.allowed_users);
    expect(loaded.config.channels.webhook.secret).toBe(values.channels.webhook.secret);
    expect(loaded.providerSource).toBe('file');
  });
});
