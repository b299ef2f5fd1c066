import { z } from 'zod';

/**
 * Building blocks shared by every configuration schema file: the documentation
 * of a key and the common number shapes. Kept apart from config.schema.ts so
 * the blocks in config/limits/ can use them without an import cycle.
 */

/**
 * The documentation of a key (its `.meta()`): the sentences are joined with spaces. The commented example
 * configuration (config.example.ts) prints it above the key, with the allowed values, secrecy and default.
 */
export function about(...lines: string[]): { description: string } {
  return { description: lines.join(' ') };
}

export const nonEmpty = z.string().min(1, 'must not be empty');
export const port = z.number().int().min(0).max(65535);
export const positiveInt = z.number().int().min(1);
