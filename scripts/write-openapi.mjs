// Writes the OpenAPI documents of the built gateway (dist/) and the typed client's schema (ADR 0016):
//   dist/openapi/gatehouse.json  GET /api/v1/openapi.json of a gateway on the default configuration
//   dist/openapi/webhook.json    the webhook server's document (GET {path}/openapi.json)
//   client/schema.d.ts           openapi-typescript's types of gatehouse.json (not committed)
// The gateway is built in process (never listening) on a temporary data dir, asked for its document the way a
// client asks, and shut down. `--no-types` writes the documents only.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = (path) => pathToFileURL(join(root, 'dist', 'src', path)).href;
const TOKEN = 'openapi-writer-token-0123456789';

/** The document a gateway on the default configuration serves (plus a token, so nothing is generated). */
async function gatewayDocuments() {
  const { createGateway } = await import(dist('gateway.js'));
  const { validateConfig } = await import(dist('config/config.schema.js'));
  const { createLogger } = await import(dist('logs/logger.js'));
  const { buildWebhookOpenApi } = await import(dist('channels/index.js'));
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-openapi-'));
  try {
    const checked = validateConfig({
      data_dir: dataDir,
      gateway: { auth: { api_tokens: [TOKEN], admin_tokens: [TOKEN] } },
      logs: { level: 'error' },
    });
    if (!checked.ok) throw new Error(`default configuration refused: ${JSON.stringify(checked.errors)}`);
    const logger = createLogger({ level: 'error', stdout: { write: () => {} } });
    const gateway = await createGateway({ config: checked.config, logger });
    try {
      const answer = await gateway.app.inject({
        method: 'GET',
        url: `${checked.config.gateway.api_prefix}/openapi.json`,
        headers: { 'x-api-token': TOKEN },
      });
      if (answer.statusCode !== 200) throw new Error(`GET openapi.json answered ${answer.statusCode}: ${answer.body}`);
      const webhook = checked.config.channels.webhook;
      return {
        api: JSON.parse(answer.body),
        webhook: buildWebhookOpenApi({ path: webhook.path, version: JSON.parse(answer.body).info.version }),
      };
    } finally {
      await gateway.shutdown(0);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const { api, webhook } = await gatewayDocuments();
const outDir = join(root, 'dist', 'openapi');
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'gatehouse.json'), JSON.stringify(api, null, 2) + '\n');
writeFileSync(join(outDir, 'webhook.json'), JSON.stringify(webhook, null, 2) + '\n');

if (!process.argv.includes('--no-types')) {
  let openapiTS;
  try {
    openapiTS = await import('openapi-typescript');
  } catch {
    // A production install (no devDependencies) has no use for the client's types.
    process.stderr.write('gatehouse: openapi-typescript not installed; client/schema.d.ts not generated\n');
    process.exit(0);
  }
  const ast = await openapiTS.default(api, { alphabetize: true });
  const header =
    '// Generated from the OpenAPI document by scripts/write-openapi.mjs (openapi-typescript). Do not edit.\n';
  writeFileSync(join(root, 'client', 'schema.d.ts'), header + openapiTS.astToString(ast));
}
