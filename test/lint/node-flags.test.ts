/**
 * The gateway's `node` flags (ADR 0019) are written in three places: package.json's start script, the
 * shebang of src/main.ts (the `gatehouse` command) and `GATEWAY_NODE_FLAGS`, with which the tests and the
 * bench spawn it. They must agree, or what is measured is not what users run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GATEWAY_NODE_FLAGS } from '../../bench/processes.js';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the gateway node flags', () => {
  it('are the same in package.json start, the main shebang and GATEWAY_NODE_FLAGS', () => {
    expect(GATEWAY_NODE_FLAGS.length).toBeGreaterThan(0);
    const flags = GATEWAY_NODE_FLAGS.join(' ');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
    expect(pkg.scripts.start).toContain(`exec node ${flags} dist/src/main.js`);
    const shebang = readFileSync(join(ROOT, 'src', 'main.ts'), 'utf8').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${flags}`);
  });
});
