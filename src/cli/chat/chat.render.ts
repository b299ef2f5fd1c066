import { endedShort, isCompletedStatus } from '../../turns/turn-status.js';
import { style } from '../terminal.js';
import type { HistoryEntry, SessionView } from './chat.api.js';
import { COMMANDS } from './chat.commands.js';
import type { FrameError, MessageView } from './chat.frames.js';

/** How the chat's lines look: pure functions of their data and whether to colour. */

/** Labels at the start of a line. */
export const LABELS = { you: 'you› ', agent: 'agent› ', answer: 'answer› ', more: '   … ' } as const;

/** The agent's label, at the start of each block of reply text. */
export function agentLabel(colour: boolean): string {
  return style(colour, 'cyan', LABELS.agent);
}

/** One line of at most `width` characters: newlines folded, the rest cut with an ellipsis. */
export function oneLine(text: string, width: number): string {
  const flat = text.replace(/\s*\n\s*/g, ' ⏎ ').trim();
  return flat.length <= width ? flat : `${flat.slice(0, Math.max(1, width - 1))}…`;
}

/** A value shown in a line: strings as they are, anything else as JSON. */
export function shown(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** `  ⚙ name {arguments}` */
export function toolCallLine(colour: boolean, name: string, args: unknown, width: number): string {
  return `  ${style(colour, 'magenta', '⚙')} ${style(colour, 'bold', name)} ${style(colour, 'dim', oneLine(shown(args), width - name.length - 6))}`;
}

/** `  ↳ name: result` */
export function toolResultLine(colour: boolean, name: string, result: unknown, width: number): string {
  const failed = typeof result === 'object' && result !== null && 'error' in result;
  const text = oneLine(shown(result), width - name.length - 7);
  return `  ${style(colour, failed ? 'red' : 'magenta', '↳')} ${name}: ${style(colour, failed ? 'red' : 'dim', text)}`;
}

/** The line that ends a reply: its status, tokens and cost. */
export function statusLine(colour: boolean, status: string, message: MessageView | null): string {
  const cost = message?.cost;
  const parts: string[] = [status];
  if (cost && (cost.input_tokens ?? 0) + (cost.output_tokens ?? 0) > 0) {
    parts.push(`${cost.input_tokens ?? 0} in / ${cost.output_tokens ?? 0} out tokens`);
    if (cost.total_usd !== undefined) parts.push(`$${cost.total_usd.toFixed(6)}`);
  }
  const text = parts.join(' · ');
  if (isCompletedStatus(status)) return style(colour, 'dim', `  ✓ ${text}`);
  if (endedShort(status)) return style(colour, 'yellow', `  ■ ${text}`);
  return style(colour, 'yellow', `  ● ${text}`);
}

/** `  ✗ CODE: message (turn evt_…)` */
export function errorLine(colour: boolean, error: FrameError, eventId?: string): string {
  return style(colour, 'red', `  ✗ ${error.code}: ${error.message}${eventId ? ` (turn ${eventId})` : ''}`);
}

/** A notice of the client itself (connection, commands), dimmed. */
export function noticeLine(colour: boolean, text: string): string {
  return style(colour, 'dim', `· ${text}`);
}

/** The session table of `/sessions`, numbered for `/switch <n>`; the current one marked. */
export function sessionsTable(colour: boolean, sessions: SessionView[], current: string): string {
  if (sessions.length === 0) return noticeLine(colour, 'no sessions yet');
  const width = Math.max(...sessions.map((s) => s.id.length));
  const lines = sessions.map((s, i) => {
    const mark = s.id === current ? style(colour, 'green', '*') : ' ';
    const count = `${s.message_count} msg`.padStart(8);
    return `${mark}${String(i + 1).padStart(3)}  ${s.id.padEnd(width)}  ${count}  ${style(colour, 'dim', localTime(s.last_active))}`;
  });
  return [...lines, noticeLine(colour, '/switch <n> continues in one of them')].join('\n');
}

/** The last entries of a session's history, to pick up where it was (indented under a notice, dimmed). */
export function historyLines(colour: boolean, entries: HistoryEntry[], width: number): string[] {
  const lines: string[] = [];
  for (const entry of entries) {
    const label = entry.role === 'user' ? LABELS.you : entry.role === 'assistant' ? LABELS.agent : null;
    if (label && entry.content) lines.push(style(colour, 'dim', `  ${label}${oneLine(entry.content, width)}`));
  }
  return lines.length > 0 ? [noticeLine(colour, 'the last messages:'), ...lines] : [];
}

/** The `/help` text. */
export function helpText(colour: boolean): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length + c.args.length + 2));
  const commands = COMMANDS.map((c) => {
    const usage = `/${c.name}${c.args ? ` ${c.args}` : ''}`;
    return `  ${style(colour, 'bold', usage.padEnd(width + 1))} ${c.help}`;
  });
  return [
    'Commands:',
    ...commands,
    'Keys:',
    '  Enter          send; a line ending in \\ continues on the next line (pasted text stays one message)',
    '  Up/Down        earlier lines',
    '  Ctrl-C         interrupt the running turn; at the prompt clear the line, twice in a row: quit',
    '  Ctrl-D         quit',
    '  y / n          approve or deny a tool call the agent waits on',
    'Anything else is sent as a message; //text sends /text.',
  ].join('\n');
}

/** An ISO time as local `HH:MM:SS` today, else `YYYY-MM-DD HH:MM`. */
export function localTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const time = date.toLocaleTimeString('en-GB', { hour12: false });
  const today = new Date();
  if (date.toDateString() === today.toDateString()) return time;
  const day = `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}`;
  return `${day} ${time.slice(0, 5)}`;
}
