import type { Principal } from '../http/route.js';

/**
 * Whose sessions a caller sees and acts on (DECISIONS §18): an api principal
 * its own; an admin, a platform channel, and a gateway without tokens (the
 * minimal profile's one local user) every session. Null means no
 * restriction.
 */
export function ownerScope(principal: Pick<Principal, 'id' | 'role'> | null): string | null {
  return principal?.role === 'api' ? principal.id : null;
}

/** The principals every gateway has: their sessions keep the plain key format (DECISIONS §5). */
const BUILT_IN_PRINCIPALS = new Set(['default', 'admin', 'anonymous']);

/**
 * The part a principal adds to the keys of the sessions it names by chat id
 * (`gateway:<platform>@<principal>:<chat_id>`), so two principals using the
 * same chat id have two sessions, not one that 404s for the second
 * (DECISIONS §18). Empty for the built-in principals and platform channels:
 * a single-owner gateway's keys are what they were.
 */
export function principalKeyPart(principal: Pick<Principal, 'id'> | null): string {
  if (!principal || BUILT_IN_PRINCIPALS.has(principal.id) || principal.id.startsWith('channel:')) return '';
  return `@${principal.id}`;
}

/**
 * The configured api principal whose view is its own (DECISIONS §18): its
 * id, or null for everyone who sees the whole gateway (admins, the built-in
 * principals, platform channels). Memory, tasks, analytics and the live feed
 * narrow to it.
 */
export function isolatedPrincipal(principal: Pick<Principal, 'id' | 'role'>): string | null {
  return principal.role === 'api' && principalKeyPart(principal) !== '' ? principal.id : null;
}

/** True when a caller of `scope` (`ownerScope`) may see a session owned by `owner`. */
export function ownsSession(scope: string | null, owner: string): boolean {
  return scope === null || scope === owner;
}
