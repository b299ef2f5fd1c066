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

const tsFiles = ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', '*.ts'];
const testFiles = ['test/**/*.ts', 'src/**/*.test.ts'];

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'data/', 'coverage/', '.vitest/']),

  // Plain JavaScript: build/CI scripts and this config.
  {
    files: ['scripts/**/*.mjs', '*.js', '*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: nodeGlobals },
  },

  // TypeScript, type-aware.
  {
    files: tsFiles,
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

  // Production code logs through pino, never the console.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: { 'no-console': 'error' },
  },

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
