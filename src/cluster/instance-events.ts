/** The log lines an instance claim needs (pino's shape). */
interface ClaimLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * What an instance claim on PostgreSQL reports after the start, as log lines
 * (ADR 0035). `log` is read when something happens, so the claim can be made
 * before the log pipeline exists.
 */
export function instanceLockEvents(
  id: string,
  log: () => ClaimLog,
): { lost(error: string): void; regained(): void; failed(error: string): void } {
  const fields = { source: 'cluster', instance_id: id };
  return {
    lost: (error) =>
      log().warn({ ...fields, err: error }, 'the connection holding this instance id dropped; claiming it again'),
    regained: () => log().info(fields, 'instance id claimed again'),
    failed: (error) =>
      log().error({ ...fields, err: error }, 'instance id not claimed again yet; retrying with backoff'),
  };
}
