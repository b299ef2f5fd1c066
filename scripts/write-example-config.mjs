// Writes examples/gatehouse.yaml: every configuration key with its description and default, generated from the
// configuration schema of the built gateway (dist/src/config/config.example.js), so the example cannot drift from
// the schema. `npm run example-config` builds first when sources changed; src/config/config.example.test.ts
// fails while the checked-in file differs from what this writes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { exampleConfigYaml } = await import(
  pathToFileURL(join(root, 'dist', 'src', 'config', 'config.example.js')).href
);
const target = join(root, 'examples', 'gatehouse.yaml');
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, exampleConfigYaml());
process.stderr.write(`gatehouse: wrote ${target}\n`);
