import type { Config } from '../config/config.schema.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { nodeFileProbe, type FileProbe } from './self-audit.data-dir.js';
import { securityAuditReportSchema } from './self-audit.schema.js';
import { runSelfAudit } from './self-audit.js';

/** Dependencies of the security routes. */
export interface SecurityRoutesDeps {
  /** The running configuration (the settings service's `current()`), read at each request. */
  config: () => Config;
  /** The file system the data-dir check reads; default the real one. */
  probe?: FileProbe;
}

/**
 * GET /security/audit (admin, ADR 0023): the self-audit of the running
 * configuration and its data dir, the same checks as `gatehouse security audit`.
 */
export function securityRoutes(deps: SecurityRoutesDeps): RouteDef[] {
  const probe = deps.probe ?? nodeFileProbe;
  return [
    defineRoute({
      method: 'GET',
      path: '/security/audit',
      permission: 'admin',
      summary: 'Security self-audit of the running configuration and the data dir',
      tags: ['security'],
      responses: [
        {
          status: 200,
          description: 'The findings, worst first, and how many of each severity',
          schema: securityAuditReportSchema,
        },
      ],
      handler: () => runSelfAudit(deps.config(), probe),
    }),
  ];
}
