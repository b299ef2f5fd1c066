/**
 * The dashboard's build (ADR 0020): Vite from `web/` into `dist/web/` (`index.html` + `assets/`), served by the
 * gateway at `/` under a strict Content-Security-Policy (DECISIONS §14), so the output holds no inline script
 * or style: the module-preload polyfill (an inline script) is off and CSS is emitted as files. JSX is Vite's
 * own transform with Preact's automatic runtime. `scripts/build-if-needed.mjs` runs it with this file.
 */
import { defineConfig } from 'vite';

const webRoot = new URL('.', import.meta.url).pathname;
const clientIndex = new URL('../client/index.ts', import.meta.url).pathname;

export default defineConfig({
  root: webRoot,
  base: '/',
  // Nothing from `public/`: every asset is imported, hashed and under `assets/`.
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: {
    alias: [{ find: /^(?:\.\.\/)+client\/index\.js$/, replacement: clientIndex }],
  },
  build: {
    outDir: new URL('../dist/web', import.meta.url).pathname,
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    cssCodeSplit: true,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    sourcemap: false,
    // dist/web/.vite/manifest.json: the chunk graph the build script reads to size the first screen.
    manifest: true,
  },
});
