import { z } from 'zod';
import { FINDINGS, SEVERITIES, type FindingId, type SelfAuditReport, type Severity } from './self-audit.findings.js';

const findingIds = Object.keys(FINDINGS) as [FindingId, ...FindingId[]];
const count = z.number().int().min(0);

/** One finding of the security self-audit (ADR 0023); `found` never carries a secret. */
export const securityFindingSchema = z
  .object({
    id: z.enum(findingIds).meta({ description: 'Stable id of the check (ADR 0023)' }),
    severity: z.enum(SEVERITIES as [Severity, ...Severity[]]),
    title: z.string(),
    found: z.string().meta({ description: 'What was found: configuration keys, paths, token fingerprints' }),
    fix: z.string(),
  })
  .meta({ id: 'SecurityFinding' });

/** The answer of GET /security/audit: the findings, worst first, and their count by severity. */
export const securityAuditReportSchema = z
  .object({
    findings: z.array(securityFindingSchema),
    summary: z.object({ critical: count, warning: count, info: count }),
  })
  .meta({ id: 'SecurityAuditReport' }) satisfies z.ZodType<SelfAuditReport>;
