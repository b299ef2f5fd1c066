import { ApiCallError, callApi, type ClientTarget } from '../target.js';

/**
 * The REST calls of the chat client, over `target.ts`'s `callApi` (token header, timeout, envelope message and
 * request id in every error).
 */

/** A session as GET /sessions answers it (spec variant A). */
export interface SessionView {
  id: string;
  channel: string;
  created_at: string;
  last_active: string;
  message_count: number;
  status: string;
}

/** One history entry (DECISIONS §5). */
export interface HistoryEntry {
  role: string;
  content: string | null;
  created_at: string;
  tool_calls?: Array<{ name?: string }> | null;
}

/** A skill as GET /skills lists it. */
export interface SkillView {
  id: string;
  name: string;
  status: string;
  version: number;
}

/** The WebSocket URL of a target: `ws[s]://host{api_prefix}/ws` (the token is never put in it). */
export function webSocketUrl(target: ClientTarget): string {
  const url = new URL(target.url);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = `${target.apiPrefix}/ws`;
  return url.toString();
}

/** The newest sessions, most recently active first. */
export async function listSessions(target: ClientTarget, limit = 20): Promise<SessionView[]> {
  const page = await callApi<{ items: SessionView[] }>(target, '/sessions', { query: { limit } });
  return page.items;
}

/** One session, or null when it has no messages yet (404). */
export async function findSession(target: ClientTarget, key: string): Promise<SessionView | null> {
  try {
    return await callApi<SessionView>(target, `/sessions/${encodeURIComponent(key)}`);
  } catch (err) {
    if (err instanceof ApiCallError && err.status === 404) return null;
    throw err;
  }
}

/** The newest `limit` history entries of a session in chronological order; empty for an unknown session. */
export async function sessionHistory(target: ClientTarget, key: string, limit: number): Promise<HistoryEntry[]> {
  try {
    const page = await callApi<{ items: HistoryEntry[] }>(target, `/sessions/${encodeURIComponent(key)}/history`, {
      query: { limit },
    });
    return page.items;
  } catch (err) {
    if (err instanceof ApiCallError && err.status === 404) return [];
    throw err;
  }
}

/** Approves or denies the tool call a turn waits on (admin): POST /turns/{event_id}/approve|deny. */
export async function resolveToolCall(
  target: ClientTarget,
  eventId: string,
  resolution: 'approve' | 'deny',
): Promise<void> {
  await callApi(target, `/turns/${encodeURIComponent(eventId)}/${resolution}`, { method: 'POST' });
}

/**
 * A turn's status (GET /turns/{event_id}, admin), or null when this token may not read it or it cannot be read
 * now: only a hint, for telling whether a paused turn was decided elsewhere.
 */
export async function turnStatus(target: ClientTarget, eventId: string): Promise<string | null> {
  try {
    return (await callApi<{ status: string }>(target, `/turns/${encodeURIComponent(eventId)}`)).status;
  } catch {
    return null;
  }
}

/**
 * Approves (staged → active) or denies (staged → disabled) a staged skill named by id or name (admin), as the
 * `/approve` and `/deny` chat commands do — through the skills API, which an admin token may use whatever the chat
 * identity is (the chat commands answer only `admin_users`). Returns the sentence to show.
 */
export async function decideSkill(target: ClientTarget, verb: 'approve' | 'deny', nameOrId: string): Promise<string> {
  const staged = (await callApi<{ items: SkillView[] }>(target, '/skills', { query: { status: 'staged' } })).items;
  const matches = staged.filter((skill) => skill.id === nameOrId || skill.name === nameOrId);
  if (matches.length > 1) {
    const ids = matches.map((skill) => `${skill.id} (version ${skill.version})`).join(', ');
    return `Several staged skills are named ${nameOrId}: ${ids}. Use /${verb} <id>.`;
  }
  const skill = matches[0];
  if (!skill) {
    const all = (await callApi<{ items: SkillView[] }>(target, '/skills')).items;
    const known = all.find((s) => s.id === nameOrId || s.name === nameOrId);
    if (known) return `${label(known)} is ${known.status}, not staged: there is nothing to ${verb}.`;
    const names = staged.map((s) => `${s.name} (${s.id})`).join(', ');
    return `No skill named ${nameOrId}. ${names ? `Staged skills: ${names}.` : 'There are no staged skills.'}`;
  }
  if (verb === 'approve') {
    await callApi(target, `/skills/${encodeURIComponent(skill.id)}/approve`, { method: 'POST' });
    return `Approved ${label(skill)}: it is active.`;
  }
  // Denying a staged proposal disables it (the skill status table: deny is staged → disabled).
  await callApi(target, `/skills/${encodeURIComponent(skill.id)}/disable`, { method: 'POST' });
  return `Denied ${label(skill)}: it is disabled.`;
}

/** Staged skills' names, for `/approve` without an argument. */
export async function stagedSkills(target: ClientTarget): Promise<SkillView[]> {
  return (await callApi<{ items: SkillView[] }>(target, '/skills', { query: { status: 'staged' } })).items;
}

function label(skill: SkillView): string {
  return `skill ${skill.name} version ${skill.version} (${skill.id})`;
}
