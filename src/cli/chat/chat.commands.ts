/**
 * The chat client's slash commands: a line starting with `/` and a known name is a command; `//text` sends
 * `/text` as a message; an unknown `/name` is refused rather than sent, so a typo never reaches the model.
 */

/** Every command with its argument and what it does (the `/help` text is built from this). */
export const COMMANDS = [
  { name: 'approve', args: '<skill>', help: 'approve a staged skill (name or id; needs an admin token)' },
  { name: 'deny', args: '<skill>', help: 'deny a staged skill (name or id; needs an admin token)' },
  { name: 'new', args: '', help: 'start a new session (a fresh session key)' },
  { name: 'status', args: '', help: 'the gateway, the connection, the session and the running turn' },
  { name: 'sessions', args: '', help: 'list the most recently active sessions' },
  { name: 'switch', args: '<key|n>', help: 'continue in another session (its key, or its number in /sessions)' },
  { name: 'interrupt', args: '', help: 'stop the running turn (as Ctrl-C does)' },
  { name: 'help', args: '', help: 'this help' },
  { name: 'quit', args: '', help: 'leave (as Ctrl-D does); a running turn goes on at the gateway' },
] as const;

/** A command's name. */
export type CommandName = (typeof COMMANDS)[number]['name'];

/** What one line of input is. */
export type ParsedLine =
  | { kind: 'message'; text: string }
  | { kind: 'command'; name: CommandName; args: string }
  | { kind: 'unknown'; name: string }
  | { kind: 'empty' };

const NAMES: ReadonlySet<string> = new Set(COMMANDS.map((c) => c.name));
const ALIASES: Readonly<Record<string, CommandName>> = { exit: 'quit', q: 'quit', '?': 'help' };

/** Classifies a line (or a multi-line message) typed at the prompt. */
export function parseLine(input: string): ParsedLine {
  if (input.trim() === '') return { kind: 'empty' };
  if (input.startsWith('//')) return { kind: 'message', text: input.slice(1) };
  const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(input.trim());
  // A message that merely starts with a path ("/etc/hosts is…") has a non-word name: it is a message.
  if (!match || !/^[a-z?][a-z-]*$/i.test(match[1]!)) return { kind: 'message', text: input };
  const typed = match[1]!.toLowerCase();
  const name = ALIASES[typed] ?? (NAMES.has(typed) ? (typed as CommandName) : null);
  if (!name) return { kind: 'unknown', name: typed };
  return { kind: 'command', name, args: (match[2] ?? '').trim() };
}

/** True for a session key the gateway accepts (`gateway:<platform>:<chat>`; DECISIONS §5). */
export function isSessionKey(key: string): boolean {
  return key.startsWith('gateway:') && key.length > 'gateway:'.length && key.length <= 500 && !/\s/.test(key);
}
