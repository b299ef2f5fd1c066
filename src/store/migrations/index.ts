/**
 * Migrations of the capabilities (memory, knowledge, skills, tasks, cron),
 * one file each with the SQL of both databases side by side. They run after
 * the core migrations in `sqlite/migrations.ts` and `postgres/migrations.ts`,
 * in this order; append, never reorder or edit one that has shipped.
 */
import { migration006 } from './006_memory_knowledge.js';
import { migration007 } from './007_skills.js';
import { migration008 } from './008_tasks.js';
import { migration009 } from './009_cron.js';
import { migration010 } from './010_cluster_counts.js';
import { migration011 } from './011_platform_replies.js';
import { migration012 } from './012_session_owners.js';
import { migration013 } from './013_memory_owners.js';
import { migration014 } from './014_task_owners.js';
import { migration015 } from './015_subscriptions.js';

export interface CapabilityMigration {
  name: string;
  sqlite: readonly string[];
  postgres: readonly string[];
}

export const capabilityMigrations: readonly CapabilityMigration[] = [
  migration006,
  migration007,
  migration008,
  migration009,
  migration010,
  migration011,
  migration012,
  migration013,
  migration014,
  migration015,
];
