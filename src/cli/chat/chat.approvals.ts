import { ApiCallError, type ClientTarget } from '../target.js';
import { style } from '../terminal.js';
import { resolveToolCall } from './chat.api.js';
import type { MessageView } from './chat.frames.js';
import { oneLine, shown } from './chat.render.js';
import { sendTurn, type Turn, type TurnChat } from './chat.turns.js';

/**
 * Approvals of paused turns (waiting_approval): the approve/deny prompt — one key on a terminal, a line with piped
 * input — then POST /turns/{event_id}/approve|deny and following the rest of the turn; or the turn left waiting,
 * to be decided later (e.g. in the dashboard).
 */

/** What the approval prompt needs of the chat, beyond following turns. */
export interface ApprovalChat extends TurnChat {
  readonly target: ClientTarget;
  /** Lines typed (or piped) while a turn runs, taken in order after it: with piped input, the next is the answer. */
  readonly queue: string[];
}

/**
 * The turn paused for an approval: shows the tool call waiting and asks approve? [y/n] — as a one-key answer on a
 * terminal, else answered by the next queued line (or the next line read).
 */
export function askApproval(chat: ApprovalChat, turn: Turn, message: MessageView | null): void {
  turn.phase = 'approval';
  const pending = message?.tool_calls?.find((call) => !('result' in call)) ?? turn.reply.unresolvedCall();
  chat.input?.ensureLineStart();
  const call = pending
    ? `${pending.name} ${oneLine(shown(pending.arguments), chat.width - pending.name.length - 40)}`
    : 'a tool';
  chat.print(style(chat.colour, 'yellow', `  ⏸ approval needed to run ${call} (turn ${turn.eventId})`));
  if (chat.input?.isTerminal) {
    chat.input.setKeyMode(true);
    chat.input.write(style(chat.colour, 'yellow', '  approve? [y/n] '));
    return;
  }
  chat.print('  approve? [y/n]');
  const answer = chat.queue.shift();
  if (answer !== undefined) answerApproval(chat, answer);
}

/** An approval answered with a line (piped input, or Enter after y/n on a terminal); anything but y/n asks again. */
export function answerApproval(chat: ApprovalChat, text: string): void {
  const turn = chat.current;
  if (!turn || turn.phase !== 'approval') return;
  const answer = text.trim().toLowerCase();
  if (answer === 'y' || answer === 'yes') void decide(chat, turn, 'approve');
  else if (answer === 'n' || answer === 'no') void decide(chat, turn, 'deny');
  else chat.print('  approve? [y/n]');
}

/** A key pressed in key mode: `y` approves, `n` denies the current turn's waiting call; other keys do nothing. */
export function answerApprovalKey(chat: ApprovalChat, key: string): void {
  const turn = chat.current;
  if (turn?.phase !== 'approval') return;
  if (key === 'y') void decide(chat, turn, 'approve');
  else if (key === 'n') void decide(chat, turn, 'deny');
}

/** Leaves a paused turn as it is (it can be decided later, e.g. in the dashboard). */
export function leaveWaiting(chat: TurnChat, turn: Turn): void {
  chat.notice(`turn ${turn.eventId} stays waiting for approval (POST /turns/${turn.eventId}/approve or /deny)`);
  chat.endTurn();
}

/** POST /turns/{event_id}/approve|deny (admin), then follow the rest of the turn. */
async function decide(chat: ApprovalChat, turn: Turn, resolution: 'approve' | 'deny'): Promise<void> {
  turn.phase = 'deciding';
  chat.input?.setKeyMode(false);
  if (chat.input?.isTerminal) chat.input.write(`${resolution === 'approve' ? 'yes' : 'no'}\n`);
  try {
    await resolveToolCall(chat.target, turn.eventId!, resolution);
    chat.notice(resolution === 'approve' ? 'approved: the tool runs' : 'denied: the agent is told so');
  } catch (err) {
    if (!(err instanceof ApiCallError && err.status === 400)) {
      chat.print(style(chat.colour, 'red', `  ✗ ${(err as Error).message}`));
      leaveWaiting(chat, turn);
      return;
    }
    // No longer waiting (decided elsewhere): follow the turn to see what became of it.
    chat.notice(err.message);
  }
  if (chat.current !== turn) return;
  turn.phase = 'streaming';
  sendTurn(chat, turn);
}
