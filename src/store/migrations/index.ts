/**
 * Migrations of the capabilities (memory, knowledge, skills, tasks, cron),
 * one file each with the SQL of both databases side by side. They run after
 * the core migrations in `sqlite/migrations.ts` and `postgres/migrations.ts`,
 * in this order; append, never reorder or edit one that has shipped.
 */
export interface CapabilityMigration {
  name: string;
  sqlite: readonly string[];
  postgres: readonly string[];
}

export const capabilityMigrations: readonly CapabilityMigration[] = [];
