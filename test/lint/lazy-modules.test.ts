/**
 * Idle memory (ADR 0019): the libraries of optional parts are loaded only when those parts are configured.
 * Loading the gateway's module graph (the built `dist/src/gateway.js`, as `npm start` does, without starting
 * it) must not load the model SDKs, the PostgreSQL driver, the bus clients or the chat platforms' libraries;
 * loading the module that uses one does (the check can fail).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const OPTIONAL = ['grammy', '@slack/web-api', '@slack/socket-mode', 'openai', '@anthropic-ai/sdk', 'pg', 'ioredis'];

/** The optional packages present in the CommonJS module cache after importing `modules` (paths under dist/src). */
function loadedAfterImporting(...modules: string[]): string[] {
  const imports = modules.map(
    (m) => `await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'src', m)).href)});`,
  );
  const script = `
    import { createRequire } from 'node:module';
    ${imports.join('\n')}
    const cache = Object.keys(createRequire(import.meta.url).cache);
    const names = ${JSON.stringify(OPTIONAL)};
    console.log(JSON.stringify(names.filter((name) => cache.some((file) => file.includes('/node_modules/' + name + '/')))));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1)!) as string[];
}

describe('optional libraries are loaded only when used', () => {
  it('the gateway module graph loads none of them', () => {
    expect(loadedAfterImporting('gateway.js')).toEqual([]);
  });

  it('the Telegram and Slack transports load theirs (the check sees a loaded library)', () => {
    expect(
      loadedAfterImporting('channels/telegram/telegram.transport.js', 'channels/slack/slack.transport.js').sort(),
    ).toEqual(['@slack/socket-mode', '@slack/web-api', 'grammy']);
  });
});
