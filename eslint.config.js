// ESLint flat config. `npm run lint` runs `eslint . --max-warnings 0`, so every rule below is effectively an
// error: a warning fails the check as surely as an error does.
//
// TypeScript (src/, test/, bench/, root *.ts) is linted type-aware through the TypeScript project service,
// which finds tsconfig.json; files outside its "include" are reported, not silently skipped.
// Plain JavaScript (scripts/*.mjs, this file) gets ESLint's recommended rules only.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** Node.js globals for the plain-JS files (the `globals` package is not a direct dependency, so listed here). */
const nodeGlobals = Object.fromEntries(
  [
    'AbortController',
    'AbortSignal',
    'Buffer',
    'URL',
    'URLSearchParams',
    'TextDecoder',
    'TextEncoder',
    'clearImmediate',
    'clearInterval',
    'clearTimeout',
    'console',
    'fetch',
    'process',
    'queueMicrotask',
    'setImmediate',
    'setInterval',
    'setTimeout',
    'structuredClone',
  ].map((name) => [name, 'readonly']),
);

const tsFiles = ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'client/**/*.ts', '*.ts'];
const testFiles = ['test/**/*.ts', 'src/**/*.test.ts'];

// ---------------------------------------------------------------------------------------------------------------
// Import boundaries (shared/STYLE.md "Boundaries", docs/adr/0011-import-boundaries.md).
//
// Two rules, so that the two questions stay independent (flat config replaces a rule's options, it never merges
// them, so one rule per question keeps every block complete on its own):
//   `no-restricted-imports`                     which packages a file of src/ may import (Fastify, database drivers)
//   `@typescript-eslint/no-restricted-imports`  which files of src/ a file of src/ may import (capability indexes)
// plus `no-restricted-properties` for `process.env`.
// ---------------------------------------------------------------------------------------------------------------

const ADR = 'See docs/adr/0011-import-boundaries.md.';

/**
 * Folders of src/ that are infrastructure: layers every capability builds on, without a resource or routes of
 * their own. Any file may import them file by file. Every other folder of src/ is a capability, reached from
 * outside only through its `index.ts`.
 */
const INFRASTRUCTURE = ['lib', 'config', 'http', 'security'];

/** The deepest folder nesting below src/ that the path rules are generated for (src/a/b/c/file.ts). */
const MAX_DEPTH = 3;

/** Fastify and its plugins: only `http/`, route files and the two declared channel exceptions. */
const FASTIFY = {
  regex: '^(?:fastify(?:$|[/-])|@fastify/)',
  caseSensitive: true,
  message: `Only http/, *.routes.ts and the webhook and WebSocket channels know the web framework. ${ADR}`,
};

/** Database drivers: only `store/`. */
const DRIVERS = {
  regex: '^(?:pg|pg-[a-z0-9-]+|better-sqlite3)(?:$|/)',
  caseSensitive: true,
  message: `Only store/ knows database drivers. ${ADR}`,
};

/** The clients of the cross-process bus (Redis, NATS): only `events/` (ADR 0025). */
const BUS_CLIENTS = {
  regex: '^(?:ioredis|@nats-io/)',
  caseSensitive: true,
  message: `Only events/ knows the bus clients; the rest publishes through the event bus. ${ADR}`,
};

/** Kysely's dialect machinery: only `store/`; repositories use the query builder and `sql` alone. */
const KYSELY_DIALECTS = {
  group: ['kysely'],
  importNamePattern: '^(?:Postgres|Sqlite|Mysql|Mssql)(?:Dialect|Driver|Adapter|Introspector|QueryCompiler)$',
  message: `Only store/ picks and builds database dialects. ${ADR}`,
};

/** The files allowed to import Fastify. */
const fastifyFiles = [
  'src/http/**/*.ts',
  'src/**/*.routes.ts',
  // The webhook channel runs its own Fastify server on its own port (ADR 0011).
  'src/channels/webhook/webhook.server.ts',
  // The WebSocket is registered on the API server with @fastify/websocket outside a RouteDef (ADR 0011).
  'src/channels/websocket/**/*.ts',
];

/** A regex source matching a relative specifier that climbs from a file `depth` folders below src/ to src/. */
function toSrc(depth) {
  return depth === 0 ? '^\\./' : `^${'\\.\\./'.repeat(depth)}`;
}

/** Glob of the files exactly `depth` folders below `root`. */
function filesAtDepth(root, depth) {
  return `${root}/${'*/'.repeat(depth)}*.ts`;
}

const infrastructureList = INFRASTRUCTURE.map((folder) => `${folder}/`).join(', ');

/**
 * Any file of a folder of src/ other than its `index.js`. Not matched: infrastructure, turns/ (its own rule) and
 * `..` (a specifier climbing out of src/ altogether).
 */
function deepImport(depth) {
  const exempt = ['\\.\\.', ...INFRASTRUCTURE, 'turns'].join('|');
  return {
    regex: `${toSrc(depth)}(?!(?:${exempt})/)[^/]+/(?!index\\.js$)`,
    caseSensitive: true,
    message: `Reach another capability through its index.ts ("<capability>/index.js"); only ${infrastructureList} may be imported file by file. ${ADR}`,
  };
}

/** Any file of turns/ other than its `index.js` and `turn-status.js` (a leaf of constants the CLI reads too). */
function turnsDoor(depth) {
  return {
    regex: `${toSrc(depth)}turns/(?!(?:index|turn-status)\\.js$)`,
    caseSensitive: true,
    message: `The message path has one door: import "turns/index.js", never a file of turns/. ${ADR}`,
  };
}

/** Anything outside lib/, for a file `depth` folders below src/ inside lib/. */
function leaveLib(depth) {
  return {
    regex: toSrc(depth),
    caseSensitive: true,
    message: `lib/ imports nothing from the rest of src/. ${ADR}`,
  };
}

const depths = Array.from({ length: MAX_DEPTH + 1 }, (_, depth) => depth);
const srcPathRule = '@typescript-eslint/no-restricted-imports';

/**
 * The boundary rules. Tests beside the code (`*.test.ts`) keep the package and environment rules but may import
 * the files of other folders: a unit test reaches the internals it tests and the store's test backends.
 * test/lint/boundaries.test.ts pins every rule.
 */
const boundaries = [
  // Packages. Later blocks replace the options of earlier ones for the files they match.
  {
    name: 'boundaries/packages',
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [FASTIFY, DRIVERS, KYSELY_DIALECTS, BUS_CLIENTS] }] },
  },
  {
    name: 'boundaries/packages: the web framework',
    files: fastifyFiles,
    rules: { 'no-restricted-imports': ['error', { patterns: [DRIVERS, KYSELY_DIALECTS, BUS_CLIENTS] }] },
  },
  {
    name: 'boundaries/packages: the store',
    files: ['src/store/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [FASTIFY, BUS_CLIENTS] }] },
  },
  {
    name: 'boundaries/packages: the bus',
    files: ['src/events/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [FASTIFY, DRIVERS, KYSELY_DIALECTS] }] },
  },

  // The environment.
  {
    name: 'boundaries/environment',
    files: ['src/**/*.ts'],
    ignores: ['src/config/**', 'src/main.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: `Only config/ (and main.ts, which hands it over) reads the environment. ${ADR}`,
        },
      ],
    },
  },

  // Files of src/: one block per folder depth, because relative specifiers are written from the importing file.
  ...depths.map((depth) => ({
    name: `boundaries/capabilities: depth ${depth}`,
    files: [filesAtDepth('src', depth)],
    ignores: ['src/**/*.test.ts'],
    rules: { [srcPathRule]: ['error', { patterns: [deepImport(depth), turnsDoor(depth)] }] },
  })),
  ...depths.slice(1).map((depth) => ({
    name: `boundaries/lib, depth ${depth}`,
    files: [filesAtDepth('src/lib', depth - 1)],
    ignores: ['src/**/*.test.ts'],
    rules: { [srcPathRule]: ['error', { patterns: [leaveLib(depth)] }] },
  })),
];

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'data/', 'coverage/', '.vitest/', 'client/schema.d.ts']),

  // Plain JavaScript: build/CI scripts and this config.
  {
    files: ['scripts/**/*.mjs', '*.js', '*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: nodeGlobals },
  },

  // Browser JavaScript served as files (the API docs page, ADR 0018): browser globals, no console.
  {
    files: ['src/**/page/**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'document',
          'location',
          'history',
          'sessionStorage',
          'fetch',
          'performance',
          'URL',
          'URLSearchParams',
          'TextDecoder',
          'AbortController',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: { 'no-console': 'error' },
  },

  // TypeScript, type-aware: the server, tests, bench and client, and the dashboard (web/, ADR 0020: browser
  // TypeScript and TSX, type-aware through web/tsconfig.json, found by the project service).
  {
    files: [...tsFiles, 'web/**/*.{ts,tsx}'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // House rules (shared/STYLE.md, "Habits").
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',

      // Practical relaxations of recommended-type-checked.
      // `_`-prefixed names mark deliberately unused parameters, variables and caught errors.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
      // A synchronous implementation of an async interface (e.g. a better-sqlite3 repo behind a
      // Promise-returning store contract) is naturally `async` without an `await`.
      '@typescript-eslint/require-await': 'off',
    },
  },

  // Production code logs through pino, never the console; the dashboard has no console either.
  {
    files: ['src/**/*.ts', 'web/**/*.{ts,tsx}'],
    ignores: ['src/**/*.test.ts'],
    rules: { 'no-console': 'error' },
  },

  ...boundaries,

  // Tests: values from fixtures, JSON bodies and mocks are loosely typed by nature.
  {
    files: testFiles,
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // `expect(fake.method).toHaveBeenCalled()` passes a method unbound on purpose.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
