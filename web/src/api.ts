/**
 * Names for the API's schemas as the dashboard uses them, taken from the generated client types
 * (`client/schema.d.ts` via `client/index.ts`): nothing here restates a shape by hand.
 */
import type { components } from '../../client/index.js';

/** Every schema of the OpenAPI document, by name. */
export type Schemas = components['schemas'];
/** A session (`Session`). */
export type Session = Schemas['Session'];
/** One history entry (`HistoryEntry`). */
export type HistoryEntry = Schemas['HistoryEntry'];
/** A turn of the ledger (`Turn`). */
export type Turn = Schemas['Turn'];
/** The Message a turn ends (or pauses) with. */
export type Message = Schemas['MessageResult']['message'];
/** A skill (`Skill`). */
export type Skill = Schemas['Skill'];

/** Turn statuses that wait for a person. */
export const PAUSED: ReadonlySet<string> = new Set(['waiting_approval', 'waiting_clarification']);
/** Turn statuses that end a turn. */
export const TERMINAL: ReadonlySet<string> = new Set(['completed', 'incomplete', 'failed', 'interrupted']);
/** Everything a dashboard view shows of a period, in one analytics request (`AnalyticsSummary`, ADR 0045). */
export type AnalyticsSummary = Schemas['AnalyticsSummary'];
/** The gateway's health (`HealthReport`). */
export type HealthReport = Schemas['HealthReport'];
