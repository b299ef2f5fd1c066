import { z } from 'zod';
import { redactConfig } from '../config/config.redact.js';
import { errors } from '../http/errors.js';
import { defineRoute, HttpResult, type RouteDef, type RouteResponse } from '../http/route.js';
import type { Logger } from '../lib/logger.js';
import { configFor } from './config-view.js';
import { configCheckSchema, redactedConfigSchema } from './settings.schema.js';
import { ConfigChangeError, type ConfigChangeResult, type SettingsService } from './settings.service.js';

/** Dependencies of the configuration routes. */
export interface SettingsRoutesDeps {
  service: SettingsService;
  /** Where applied changes are noted (keys only, never values). */
  logger?: Logger;
}

/** A partial configuration: any JSON object (its content is checked against the config schema). */
const partialBody = z.record(z.string(), z.unknown(), { error: () => 'body must be a JSON object' });

/**
 * PUT/PATCH /config answer the configuration after the change (DECISIONS §2:
 * update → the object), redacted; which keys took effect now and which need
 * a restart travel in `X-Config-Applied` and `X-Config-Restart-Required`
 * (comma-separated dotted paths).
 */
function present(result: ConfigChangeResult): HttpResult {
  return new HttpResult(200, redactConfig(result.config), {
    'x-config-applied': result.applied.join(','),
    'x-config-restart-required': result.restartRequired.join(','),
  });
}

/** The answer of PUT/PATCH /config: the configuration after the change, and which keys took effect. */
function changed(description: string): RouteResponse {
  return {
    status: 200,
    description,
    schema: redactedConfigSchema,
    headers: ['X-Config-Applied', 'X-Config-Restart-Required'],
  };
}

/**
 * Configuration API (spec: Configuration; DECISIONS §4, §9): GET (api),
 * POST /config/validate (api), PUT and PATCH (admin, lifecycle rate group).
 * Every configuration in a response is redacted; errors carry paths only.
 */
export function settingsRoutes(deps: SettingsRoutesDeps): RouteDef[] {
  const { service } = deps;
  const log = deps.logger?.child({ source: 'config' });

  const change = async (body: Record<string, unknown>, persist: boolean): Promise<HttpResult> => {
    let result: ConfigChangeResult;
    try {
      result = await service.update(body, { persist });
    } catch (err) {
      if (err instanceof ConfigChangeError) throw errors.validation(err.issues, err.message);
      throw err;
    }
    if (result.applied.length > 0 || result.restartRequired.length > 0 || result.written) {
      log?.info(
        { applied: result.applied, restart_required: result.restartRequired, file: result.written },
        persist ? 'configuration changed and saved' : 'configuration changed for this run',
      );
    }
    return present(result);
  };

  return [
    defineRoute({
      method: 'GET',
      path: '/config',
      permission: 'api',
      summary: 'The active configuration, every secret as "***"',
      tags: ['config'],
      responses: [{ status: 200, description: 'The active configuration, redacted', schema: redactedConfigSchema }],
      handler: (ctx) => redactConfig(configFor(service.current(), ctx.principal)),
    }),
    defineRoute({
      method: 'POST',
      path: '/config/validate',
      permission: 'api',
      summary: 'Validate a partial configuration merged over the active one',
      tags: ['config'],
      body: partialBody,
      responses: [{ status: 200, description: 'Whether it is valid, and every problem', schema: configCheckSchema }],
      handler: (_ctx, { body }) => service.validate(body),
    }),
    defineRoute({
      method: 'PUT',
      path: '/config',
      permission: 'admin',
      rateGroup: 'lifecycle',
      summary: 'Change the configuration: saved to the configuration file, live keys applied now',
      tags: ['config'],
      body: partialBody,
      responses: [changed('The configuration after the change (saved and applied), redacted')],
      handler: (_ctx, { body }) => change(body, true),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/config',
      permission: 'admin',
      rateGroup: 'lifecycle',
      summary: 'Change live configuration keys for this run only (not saved)',
      tags: ['config'],
      body: partialBody,
      responses: [changed('The configuration after the change (applied for this run), redacted')],
      handler: (_ctx, { body }) => change(body, false),
    }),
  ];
}
