import type { AuthMode } from '../../config/config.schema.js';
import type { VerifyResult } from '../../pairing/index.js';
import type { PlatformEvent } from './platform.transport.js';

/**
 * The platform-neutral rules of a chat message (DECISIONS §4, §16), pure so
 * they are tested on their own: which messages start a turn, the `/pair`
 * command, and the texts a user reads instead of silence.
 */

/** What to do with one platform message before the message path sees it. */
export type Triage = { kind: 'ignore' } | { kind: 'pair'; code: string } | { kind: 'pair_in_group' } | { kind: 'turn' };

const PAIR = /^\/pair(?:\s+(\S*))?\s*$/i;

/**
 * Group chats are off unless `groups` is set; in a group only a mention of
 * the bot or a reply to it starts a turn. `/pair <code>` is a direct-message
 * command (a code said in a group is seen by everyone there).
 */
export function triage(event: PlatformEvent, options: { groups: boolean }): Triage {
  const text = event.text.trim();
  const pair = PAIR.exec(text);
  if (event.chatKind === 'group') {
    if (!options.groups || !event.addressed) return { kind: 'ignore' };
    if (pair) return { kind: 'pair_in_group' };
  } else if (pair) {
    return { kind: 'pair', code: (pair[1] ?? '').toUpperCase() };
  }
  if (text.length === 0) return { kind: 'ignore' };
  return { kind: 'turn' };
}

/** What an unknown user reads in a direct message, by auth mode (pairing: how to pair, not silence). */
export function refusalText(mode: AuthMode, platform: string): string {
  if (mode === 'pairing') {
    return [
      'You are not paired with this agent yet.',
      `Ask its operator for a pairing code (\`gatehouse pair ${platform}\`), then send it here as: /pair <code>`,
    ].join('\n');
  }
  return 'You are not allowed to talk to this agent. Ask its operator to add you.';
}

/** The answer to `/pair <code>`. */
export function pairingText(result: VerifyResult | 'not_pairing_mode' | 'missing_code' | 'in_group'): string {
  if (result === 'not_pairing_mode') return 'Pairing is not used on this gateway.';
  if (result === 'missing_code') return 'Send the code with the command: /pair <code>';
  if (result === 'in_group') return 'Pair in a direct message with the bot, not in a group.';
  if (result.ok) return 'Paired. You can talk to the agent now.';
  if (result.reason === 'invalid_code') return `That code is not valid (${result.attempts} wrong in a row).`;
  return `Too many wrong codes. Try again in ${result.retryAfterSeconds} seconds.`;
}

/** Reconnect delay after `failures` failed attempts in a row: 1 s doubling to 60 s. */
export function backoffMs(failures: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, Math.min(failures - 1, 16)));
}
