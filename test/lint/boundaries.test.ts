/**
 * The import boundaries of docs/adr/0011-import-boundaries.md, as `eslint.config.js` enforces them.
 *
 * Each case lints a few lines of code as if they lived at a path of src/ (the file need not exist) with the
 * project's own config, and checks which boundary rules fire. Every allowed form is paired with a forbidden one
 * that differs only in the path or the specifier, so a rule that stopped firing, or fired everywhere, fails here.
 *
 * The type-aware rules are switched off for these in-memory files (the TypeScript project service only knows
 * files on disk); the boundary rules need no type information.
 */
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

const PACKAGES = 'no-restricted-imports';
const SRC_PATHS = '@typescript-eslint/no-restricted-imports';
const ENVIRONMENT = 'no-restricted-properties';
const BOUNDARY_RULES = new Set([PACKAGES, SRC_PATHS, ENVIRONMENT]);

/** `@typescript-eslint/<rule>: off` for every rule that needs type information. */
function typeAwareRulesOff(): Record<string, 'off'> {
  // The package's plugin type names no rules; its rules carry `meta.docs.requiresTypeChecking`.
  const { rules } = tseslint.plugin as {
    rules?: Record<string, { meta?: { docs?: { requiresTypeChecking?: boolean } } }>;
  };
  const off: Record<string, 'off'> = {};
  for (const [name, rule] of Object.entries(rules ?? {})) {
    if (rule.meta?.docs?.requiresTypeChecking) off[`@typescript-eslint/${name}`] = 'off';
  }
  return off;
}

let eslint: ESLint;

beforeAll(() => {
  eslint = new ESLint({
    cwd: root,
    overrideConfig: {
      files: ['**/*.ts'],
      languageOptions: { parserOptions: { projectService: false } },
      rules: typeAwareRulesOff(),
    },
  });
});

interface Hit {
  rule: string;
  message: string;
}

/** The boundary-rule messages for `code` linted as `filePath`; fails on a parsing error. */
async function boundaryHits(filePath: string, code: string): Promise<Hit[]> {
  const [result] = await eslint.lintText(code, { filePath });
  if (!result) throw new Error(`no lint result for ${filePath}`);
  const fatal = result.messages.find((m) => m.fatal);
  if (fatal) throw new Error(`${filePath}: ${fatal.message}`);
  return result.messages
    .filter((m) => m.ruleId !== null && BOUNDARY_RULES.has(m.ruleId))
    .map((m) => ({ rule: m.ruleId ?? '', message: m.message }));
}

/** A module that imports `name` from `specifier` and re-exports it (so nothing is unused). */
function importing(specifier: string, name = 'thing'): string {
  return `import { ${name} } from '${specifier}';\nexport { ${name} };\n`;
}

/** `[path, code]`: where a file of the gateway would live, and what it would say. */
type Case = readonly [path: string, code: string];

/** What a forbidden case must report: exactly one message, of `rule`, containing `says`. */
interface Report {
  rule: string;
  says: string;
}

/** One test per case: the case reports exactly `report`. */
function forbids(report: Report, cases: Case[]): void {
  for (const [path, code] of cases) {
    it(`forbids ${path}: ${code.split('\n')[0]}`, async () => {
      const hits = await boundaryHits(path, code);
      expect(hits.map((h) => h.rule)).toEqual([report.rule]);
      expect(hits[0]?.message).toContain(report.says);
    });
  }
}

/** One test per case: the case reports no boundary rule. */
function allows(cases: Case[]): void {
  for (const [path, code] of cases) {
    it(`allows ${path}: ${code.split('\n')[0]}`, async () => {
      expect(await boundaryHits(path, code)).toEqual([]);
    });
  }
}

const fastify = importing('fastify', 'fastify');
const fastifyPlugin = importing('@fastify/websocket', 'websocket');
const pg = importing('pg', 'Pool');
const sqlite = importing('better-sqlite3', 'Database');
const readsEnv = 'export const port = process.env.PORT;\n';

describe('(a) Fastify only in http/, route files and the two declared channel exceptions', () => {
  forbids({ rule: PACKAGES, says: 'web framework' }, [
    ['src/memory/scratch.ts', fastify],
    ['src/memory/scratch.ts', fastifyPlugin],
    ['src/memory/scratch.ts', importing('fastify/types/request', 'FastifyRequest')],
    ['src/memory/scratch.ts', importing('fastify-plugin', 'fp')],
    ['src/store/scratch.ts', fastify],
    ['src/channels/webhook/webhook.channel.ts', fastify],
    ['src/gateway.ts', fastify],
    ['src/memory/scratch.test.ts', fastify],
  ]);
  allows([
    ['src/http/scratch.ts', fastify],
    ['src/memory/memory.routes.ts', fastify],
    ['src/channels/webhook/webhook.routes.ts', fastify],
    ['src/channels/webhook/webhook.server.ts', fastify],
    ['src/channels/websocket/websocket.channel.ts', fastifyPlugin],
  ]);
});

describe('(b2) the bus clients only in events/', () => {
  const redis = importing('ioredis', 'Redis');
  const nats = importing('@nats-io/transport-node', 'connect');
  forbids({ rule: PACKAGES, says: 'bus clients' }, [
    ['src/turns/scratch.ts', redis],
    ['src/gateway.ts', nats],
    ['src/store/scratch.ts', redis],
    ['src/http/scratch.ts', nats],
  ]);
  forbids({ rule: PACKAGES, says: 'database drivers' }, [['src/events/scratch.ts', pg]]);
  allows([
    ['src/events/bus-redis.ts', redis],
    ['src/events/bus-nats.ts', nats],
    ['src/events/bus-adapters.test.ts', redis],
  ]);
});

describe('(b) database drivers and dialects only in store/', () => {
  forbids({ rule: PACKAGES, says: 'database drivers' }, [
    ['src/memory/scratch.ts', pg],
    ['src/memory/memory.repo.ts', sqlite],
    ['src/http/scratch.ts', pg],
    ['src/memory/memory.routes.ts', sqlite],
  ]);
  forbids({ rule: PACKAGES, says: 'dialects' }, [
    ['src/memory/scratch.ts', importing('kysely', 'SqliteDialect')],
    ['src/memory/memory.routes.ts', importing('kysely', 'PostgresDialect')],
  ]);
  allows([
    ['src/store/scratch.ts', pg],
    ['src/store/sqlite/scratch.ts', sqlite],
    ['src/store/postgres/scratch.ts', importing('kysely', 'PostgresDialect')],
    ['src/memory/memory.repo.ts', importing('kysely', 'sql')],
  ]);
});

describe('(c) process.env only in config/ and main.ts', () => {
  forbids({ rule: ENVIRONMENT, says: 'environment' }, [
    ['src/memory/scratch.ts', readsEnv],
    ['src/memory/scratch.ts', 'const { env } = process;\nexport const port = env.PORT;\n'],
    ['src/memory/scratch.ts', "export const port = process['env'].PORT;\n"],
    ['src/gateway.ts', readsEnv],
    ['src/store/scratch.ts', readsEnv],
  ]);
  allows([
    ['src/config/scratch.ts', readsEnv],
    ['src/main.ts', readsEnv],
    ['src/memory/scratch.ts', 'export const args = process.argv;\n'],
  ]);
});

describe('(d) another capability only through its index.ts; infrastructure by file', () => {
  forbids({ rule: SRC_PATHS, says: 'through its index.ts' }, [
    ['src/memory/scratch.ts', importing('../sessions/sessions.repo.js')],
    ['src/memory/scratch.ts', "export { thing } from '../sessions/sessions.repo.js';\n"],
    ['src/memory/scratch.ts', "import type { Database } from '../store/database.js';\nexport type { Database };\n"],
    ['src/memory/scratch.ts', importing('../runtime/providers/index.js')],
    ['src/http/scratch.ts', importing('../logs/logger.js')],
    ['src/gateway.ts', importing('./memory/memory.service.js')],
    ['src/main.ts', importing('./settings/settings.service.js')],
    ['src/channels/webhook/scratch.ts', importing('../../events/event-bus.js')],
    ['src/runtime/providers/scratch.ts', importing('../../store/store.js')],
  ]);
  allows([
    ['src/memory/scratch.ts', importing('../sessions/index.js')],
    ['src/memory/scratch.ts', "import type { Database } from '../store/index.js';\nexport type { Database };\n"],
    ['src/memory/scratch.ts', importing('./memory.repo.js')],
    ['src/channels/scratch.ts', importing('./webhook/webhook.channel.js')],
    ['src/channels/webhook/scratch.ts', importing('../channel.js')],
    ['src/memory/scratch.ts', importing('../http/route.js')],
    ['src/memory/scratch.ts', importing('../lib/clock.js')],
    ['src/channels/websocket/scratch.ts', importing('../../config/config.schema.js')],
    ['src/http/scratch.ts', importing('../security/tokens.js')],
    ['src/gateway.ts', importing('./memory/index.js')],
    ['src/main.ts', importing('./config/config.load.js')],
    // Unit tests beside the code reach the internals they test.
    ['src/memory/scratch.test.ts', importing('../sessions/sessions.repo.js')],
  ]);
});

describe('(e) turns/ only through turns/index.ts', () => {
  forbids({ rule: SRC_PATHS, says: 'one door' }, [
    ['src/memory/scratch.ts', importing('../turns/turn-runner.js')],
    ['src/channels/webhook/scratch.ts', importing('../../turns/intake.js')],
    ['src/gateway.ts', importing('./turns/message-path.js')],
    ['src/http/scratch.ts', importing('../turns/turns.repo.js')],
  ]);
  allows([
    ['src/memory/scratch.ts', importing('../turns/index.js')],
    ['src/channels/webhook/scratch.ts', importing('../../turns/index.js')],
    ['src/turns/scratch.ts', importing('./turn-runner.js')],
    ['src/turns/scratch.ts', importing('../sessions/index.js')],
  ]);
});

describe('(f) lib/ imports nothing from the rest of src/', () => {
  forbids({ rule: SRC_PATHS, says: 'lib/ imports nothing' }, [
    ['src/lib/scratch.ts', importing('../config/config.schema.js')],
    ['src/lib/scratch.ts', importing('../logs/index.js')],
  ]);
  allows([
    ['src/lib/scratch.ts', importing('./clock.js')],
    ['src/lib/scratch.ts', importing('node:crypto', 'randomUUID')],
  ]);
});

describe('test/', () => {
  allows([['test/routes/scratch.test.ts', fastify + importing('../../src/turns/turn-runner.js', 'other') + readsEnv]]);
});
