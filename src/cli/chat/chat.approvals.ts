import { isPausedStatus } from '../../turns/turn-status.js';
import { ApiCallError, type ClientTarget } from '../target.js';
import { style } from '../terminal.js';
import { resolveToolCall, turnStatus } from './chat.api.js';
import { topicsFrame, type MessageView, type ServerFrame } from './chat.frames.js';
import { oneLine, shown } from './chat.render.js';
import { sendTurn, type Turn, type TurnChat } from './chat.turns.js';

/**
 * Approvals of paused turns (waiting_approval): the approve/deny prompt — one key on a terminal, a line with piped
 * input — then POST /turns/{event_id}/approve|deny and following the rest of the turn; or the turn left waiting,
 * to be decided later (e.g. in the dashboard). While the prompt waits, the chat follows the turn's events on the
 * live feed (`turns` topic): decided in another client (the dashboard, another terminal, the API), the prompt
 * gives way to a note saying so and the rest of the turn follows; a y or n typed late is answered with that note,
 * not an error.
 */

/** The live-feed topic carrying every turn's status changes. */
const TURNS_TOPIC = 'turns';

/** What the approval prompt needs of the chat, beyond following turns. */
export interface ApprovalChat extends TurnChat {
  readonly target: ClientTarget;
  /** Lines typed (or piped) while a turn runs, taken in order after it: with piped input, the next is the answer. */
  readonly queue: string[];
  /**
   * The turn just decided in another client, and how: a y or n typed for it afterwards is answered with this
   * note instead of going out as a message. Cleared when the next message is sent.
   */
  decidedElsewhere: { eventId: string; note: string } | null;
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
  watchDecision(chat);
  if (chat.input?.isTerminal) {
    chat.input.setKeyMode(true);
    chat.input.write(style(chat.colour, 'yellow', '  approve? [y/n] '));
    return;
  }
  chat.print('  approve? [y/n]');
  const answer = chat.queue.shift();
  if (answer !== undefined) answerApproval(chat, answer);
}

/**
 * Listens for the waiting turn's next status on the live feed (again after a reconnect): the subscription is
 * confirmed by `subscribed`, after which the turn is looked up once, for a decision made before it.
 */
export function watchDecision(chat: ApprovalChat): void {
  chat.socket.send(topicsFrame('subscribe', [TURNS_TOPIC]));
}

/** A live-feed frame: the waiting turn moved on (decided elsewhere), or the subscription was confirmed. */
export function handleFeedFrame(chat: ApprovalChat, frame: ServerFrame): void {
  const turn = chat.current;
  if (turn?.phase !== 'approval' || turn.eventId === null) return;
  if (frame.type === 'subscribed') {
    // Decided between the pause and the subscription: the ledger says so (admin tokens; others wait for events).
    const eventId = turn.eventId;
    void turnStatus(chat.target, eventId).then((status) => {
      if (status !== null && !isPausedStatus(status) && chat.current === turn && turn.phase === 'approval') {
        decidedElsewhere(chat, turn, undefined);
      }
    });
    return;
  }
  if (frame.type !== 'event' || frame.topic !== TURNS_TOPIC || frame.event !== 'status') return;
  if (frame.data.event_id !== turn.eventId) return;
  const status = frame.data.status;
  if (typeof status !== 'string' || isPausedStatus(status)) return;
  decidedElsewhere(chat, turn, frame.data.resolution);
}

/** A y or n typed for a turn already decided in another client: the note again, instead of a message. */
export function lateAnswer(chat: ApprovalChat, text: string): boolean {
  const late = chat.decidedElsewhere;
  if (!late || !/^(y|n|yes|no)$/i.test(text.trim())) return false;
  chat.notice(`${late.note} (turn ${late.eventId}): nothing left to decide`);
  return true;
}

/** The waiting turn was approved, denied or answered in another client: say so, and follow the rest of it. */
function decidedElsewhere(chat: ApprovalChat, turn: Turn, resolution: unknown): void {
  const note =
    resolution === 'approve'
      ? 'approved in another client'
      : resolution === 'deny'
        ? 'denied in another client'
        : 'decided in another client';
  turn.phase = 'streaming';
  chat.decidedElsewhere = { eventId: turn.eventId!, note };
  unwatchDecision(chat);
  chat.input?.setKeyMode(false);
  chat.input?.ensureLineStart();
  chat.notice(
    resolution === 'approve'
      ? `${note}: the tool runs`
      : resolution === 'deny'
        ? `${note}: the agent is told so`
        : note,
  );
  sendTurn(chat, turn);
}

function unwatchDecision(chat: ApprovalChat): void {
  chat.socket.send(topicsFrame('unsubscribe', [TURNS_TOPIC]));
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
export function leaveWaiting(chat: ApprovalChat, turn: Turn): void {
  unwatchDecision(chat);
  chat.notice(`turn ${turn.eventId} stays waiting for approval (POST /turns/${turn.eventId}/approve or /deny)`);
  chat.endTurn();
}

/** POST /turns/{event_id}/approve|deny (admin), then follow the rest of the turn. */
async function decide(chat: ApprovalChat, turn: Turn, resolution: 'approve' | 'deny'): Promise<void> {
  turn.phase = 'deciding';
  unwatchDecision(chat);
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
    // No longer waiting: decided in another client meanwhile. Follow the turn to see what became of it.
    chat.notice('already decided in another client');
  }
  if (chat.current !== turn) return;
  turn.phase = 'streaming';
  sendTurn(chat, turn);
}
