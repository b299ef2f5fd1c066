/**
 * The security self-audit (ADR 0023), reached by other folders only through
 * this index: the route (`GET /security/audit`) for the composition root, and
 * the audit itself for `gatehouse security audit`.
 */
export { nodeFileProbe, type FileProbe, type ProbeEntry, type WalkLimits } from './self-audit.data-dir.js';
export {
  FINDINGS,
  SEVERITIES,
  type FindingId,
  type SecurityFinding,
  type SelfAuditReport,
  type Severity,
} from './self-audit.findings.js';
export { securityRoutes, type SecurityRoutesDeps } from './self-audit.routes.js';
export { hasCritical, runSelfAudit } from './self-audit.js';
export { selfAuditModule } from './self-audit.module.js';
