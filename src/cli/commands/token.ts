import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { adminTokenPath, replaceAdminToken } from '../../security/admin-token.js';
import { fingerprintToken } from '../../security/tokens.js';
import { CliError, type CliIo } from '../io.js';
import { withConfigOption } from '../options.js';
import { localSettings } from '../target.js';

/** `gatehouse token show|rotate`: the generated admin token of the local data dir. */
export function registerToken(program: Command, io: CliIo): void {
  const token = program
    .command('token')
    .description('the generated admin token of the local data dir (its fingerprint and file; never the token)');
  withConfigOption(
    token
      // `gatehouse token` alone shows it.
      .command('show', { isDefault: true })
      .description("show the admin token's fingerprint and file (the default)")
      .option('--json', 'print JSON'),
  ).action(async (options: { config?: string; json?: boolean }) => {
    const settings = await localSettings(io, options.config);
    const path = adminTokenPath(settings.dataDir);
    const configured = settings.configuredTokens;
    if (!existsSync(path)) {
      const why =
        settings.profile === 'minimal'
          ? 'security.profile is minimal, which uses no tokens'
          : configured > 0
            ? 'tokens are configured in gateway.auth, so none is generated'
            : 'the gateway generates one on its first start (gatehouse serve)';
      if (options.json) io.out(`${JSON.stringify({ file: path, exists: false, fingerprint: null })}\n`);
      else io.out(`No generated admin token at ${path}: ${why}.\n`);
      return;
    }
    const value = readFileSync(path, 'utf8').trim();
    const fingerprint = fingerprintToken(value);
    if (options.json) io.out(`${JSON.stringify({ file: path, exists: true, fingerprint })}\n`);
    else {
      io.out(`Admin token ${fingerprint}\n  file: ${path} (mode 0600; read it there, it is never printed)\n`);
      if (configured > 0)
        io.out('  gateway.auth also lists configured tokens; this one stays valid as an admin token.\n');
    }
  });
  withConfigOption(
    token
      .command('rotate')
      .description('replace the generated admin token (a restart of the gateway applies it)')
      .option('--print', 'also print the new token (it is shown once; otherwise read it from the file)'),
  ).action(async (options: { config?: string; print?: boolean }) => {
    const settings = await localSettings(io, options.config);
    if (settings.profile === 'minimal') {
      throw new CliError('security.profile is minimal: no admin token is used, so there is nothing to rotate');
    }
    const path = adminTokenPath(settings.dataDir);
    const fresh = randomBytes(32).toString('base64url');
    const previous = existsSync(path) ? fingerprintToken(readFileSync(path, 'utf8').trim()) : null;
    replaceAdminToken(settings.dataDir, fresh);
    io.out(
      `New admin token ${fingerprintToken(fresh)}${previous ? ` (replaces ${previous})` : ''}, saved to ${path} (mode 0600).\n` +
        'Restart the gateway to apply it: until then the running gateway keeps accepting the old one.\n',
    );
    if (options.print) io.out(`  Admin token: ${fresh}\n`);
  });
}
