import type { Config } from '../config/config.schema.js';
import { auditConfig } from './self-audit.config.js';
import { auditDataDir, DATA_WALK_LIMITS, type FileProbe, type WalkLimits } from './self-audit.data-dir.js';
import { SEVERITIES, type SecurityFinding, type SelfAuditReport, type Severity } from './self-audit.findings.js';

/**
 * The security self-audit (ADR 0023): `gatehouse security audit` and
 * `GET {api_prefix}/security/audit` judge a configuration and its data dir
 * and list what weakens the gateway, each finding with a stable id, a
 * severity and a fix.
 *
 * Every check is a pure function of the configuration; the data-dir check
 * reads the file system only through a `FileProbe` (the real one is
 * `nodeFileProbe` in self-audit.data-dir.ts) and is bounded. A finding never
 * carries a secret: a token is named by its place in the configuration and
 * its fingerprint (`tok_` + 8 hex), never by its value or by the weak value
 * it matched.
 */

/** Sorts findings worst first (then by id) and counts them by severity. */
export function reportOf(findings: readonly SecurityFinding[]): SelfAuditReport {
  const sorted = [...findings].sort(
    (a, b) => SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity) || a.id.localeCompare(b.id),
  );
  const summary: Record<Severity, number> = { critical: 0, warning: 0, info: 0 };
  for (const f of sorted) summary[f.severity]++;
  return { findings: sorted, summary };
}

/** Audits a configuration and its data dir (`config.data_dir`, an absolute path once loaded). */
export async function runSelfAudit(
  config: Config,
  probe: FileProbe,
  limits: WalkLimits = DATA_WALK_LIMITS,
): Promise<SelfAuditReport> {
  return reportOf([...auditConfig(config), ...(await auditDataDir(config.data_dir, probe, limits))]);
}

/** True when any finding is critical (`gatehouse security audit` then exits 1). */
export function hasCritical(report: SelfAuditReport): boolean {
  return report.summary.critical > 0;
}
