import { randomUUID } from 'node:crypto';
import { endedWell, pauseOf } from '../../turns/turn-status.js';
import { style } from '../terminal.js';
import {
  interruptFrame,
  messageFrame,
  type FrameError,
  type MessageView,
  type OutgoingMessage,
  type ServerFrame,
} from './chat.frames.js';
import type { LineInput } from './chat.input.js';
import { agentLabel, errorLine, LABELS, shown, statusLine, toolCallLine, toolResultLine } from './chat.render.js';
import type { ChatSocket } from './chat.socket.js';
import { ReplyStream } from './chat.stream.js';

/**
 * The chat's turns: sending a message (with an idempotency key made once) and following the turn answering it over
 * the WebSocket — its streamed text, tool calls and results, and its outcome — again by replay after a reconnect,
 * an approval or a follow timeout (DECISIONS §6, §8).
 */

/**
 * A message sent again after a reconnect is answered by replay only while the gateway keeps its idempotency
 * record: 3600 s from the turn's end (DECISIONS §6), which came after the last frame heard. Past this, resuming
 * could run the message twice, so the client does not try.
 */
const RESUME_WINDOW_MS = 55 * 60 * 1000;

/** One user message and the turn answering it, as far as the client has followed it. */
export interface Turn {
  message: OutgoingMessage;
  eventId: string | null;
  /** sending: no `accepted` yet; streaming; approval: waiting for y/n; deciding: the approval call is out. */
  phase: 'sending' | 'streaming' | 'approval' | 'deciding';
  reply: ReplyStream;
  /** An interrupt asked for before it could be sent (no event id yet, or no connection). */
  interruptAsked: boolean;
  /** When the turn was last heard of (ms): bounds resumption by replay. */
  lastHeardAt: number;
  /** The next reply text starts a new block with the agent's label. */
  needLabel: boolean;
}

/** What following a turn needs of the chat: its connection, its terminal and the state turns share with it. */
export interface TurnChat {
  readonly socket: ChatSocket;
  /** The terminal's line input; null before the chat runs. */
  readonly input: LineInput | null;
  /** Colour and styles. */
  readonly colour: boolean;
  /** The terminal's width in columns. */
  readonly width: number;
  /** The session new messages go to. */
  readonly sessionKey: string;
  /** The turn being followed, if any. */
  current: Turn | null;
  /** The agent asked a question (waiting_clarification): the next message answers it. */
  answering: boolean;
  /** Turns that ended in failure (the exit code of piped input). */
  failures: number;
  /** Prints a line (a reply's text after it starts a new labelled block). */
  print(text: string): void;
  /** Prints a dimmed notice line. */
  notice(text: string): void;
  /** The current turn is over (or left): back to the prompt. */
  endTurn(): void;
  /** The turn paused for an approval: ask the user. */
  awaitApproval(turn: Turn, message: MessageView | null): void;
}

/** Shows the user's message (unless already on screen) and sends it as a new turn in the chat's session. */
export function startTurn(chat: TurnChat, text: string, echoed: boolean): void {
  if (!echoed) {
    const label = style(chat.colour, 'green', chat.answering ? LABELS.answer : LABELS.you);
    chat.print(`${label}${text.replace(/\n/g, `\n${LABELS.more}`)}`);
  }
  chat.answering = false;
  chat.current = {
    message: { text, sessionKey: chat.sessionKey, idempotencyKey: `chat-${randomUUID()}` },
    eventId: null,
    phase: 'sending',
    reply: new ReplyStream(),
    interruptAsked: false,
    lastHeardAt: Date.now(),
    needLabel: true,
  };
  chat.input?.hidePrompt();
  sendTurn(chat, chat.current);
}

/**
 * Sends the turn's message frame: the first time, and again (same idempotency key) to follow the turn after a
 * reconnect, an approval or a follow timeout — the gateway answers by replaying the turn, never running it twice.
 */
export function sendTurn(chat: TurnChat, turn: Turn): void {
  turn.reply.beginPass();
  turn.needLabel = true;
  if (!chat.socket.send(messageFrame(turn.message))) {
    chat.notice('not connected: the message goes out once the connection is back');
  }
}

/** Interrupts the turn, or, without its event id or a connection yet, as soon as the gateway has the message. */
export function requestInterrupt(chat: TurnChat, turn: Turn): void {
  if (turn.eventId !== null && chat.socket.send(interruptFrame(turn.eventId))) {
    chat.notice('interrupting…');
    return;
  }
  turn.interruptAsked = true;
  chat.notice('interrupting as soon as the gateway has the message…');
}

/** Shows a server frame of the current turn (frames of anything else are not this chat's and are skipped). */
export function handleFrame(chat: TurnChat, frame: ServerFrame): void {
  const current = chat.current;
  /** The current turn when `eventId` is its event (frames of anything else are not this chat's). */
  const ours = (eventId: string): Turn | null =>
    current !== null && current.eventId !== null && current.eventId === eventId ? current : null;
  switch (frame.type) {
    case 'accepted':
      if (current && frame.ref === current.message.idempotencyKey) {
        current.eventId = frame.event_id;
        if (current.phase === 'sending') current.phase = 'streaming';
        current.lastHeardAt = Date.now();
        if (current.interruptAsked && chat.socket.send(interruptFrame(frame.event_id))) {
          current.interruptAsked = false;
          chat.notice('interrupting…');
        }
      }
      return;
    case 'delta': {
      const turn = ours(frame.event_id);
      if (turn) showText(chat, turn, turn.reply.delta(shown(frame.content)));
      return;
    }
    case 'tool_call': {
      const turn = ours(frame.event_id);
      if (!turn) return;
      turn.lastHeardAt = Date.now();
      const name = shown(frame.name);
      if (turn.reply.toolCall(shown(frame.id), name, frame.arguments))
        chat.print(toolCallLine(chat.colour, name, frame.arguments, chat.width));
      return;
    }
    case 'tool_result': {
      const turn = ours(frame.event_id);
      if (!turn) return;
      turn.lastHeardAt = Date.now();
      const name = shown(frame.name);
      if (turn.reply.toolResult(shown(frame.id)))
        chat.print(toolResultLine(chat.colour, name, frame.result, chat.width));
      return;
    }
    case 'final': {
      const turn = ours(frame.event_id);
      if (turn) onFinal(chat, turn, frame.status, frame.message);
      return;
    }
    case 'error':
      onError(chat, frame.error, frame.ref, frame.event_id);
      return;
    case 'auth_ok':
    case 'pong':
    case 'subscribed': // the live feed: chat.approvals.ts reads it
    case 'event':
      return;
  }
}

/**
 * After a reconnect: follows the unfinished turn again by replay, or ends it when too long has passed without news
 * of it to resume safely (RESUME_WINDOW_MS). A turn waiting for (or deciding) an approval is left alone.
 */
export function resumeTurn(chat: TurnChat): void {
  const turn = chat.current;
  if (!turn || (turn.phase !== 'sending' && turn.phase !== 'streaming')) return;
  if (Date.now() - turn.lastHeardAt > RESUME_WINDOW_MS) {
    chat.print(
      errorLine(
        chat.colour,
        { code: 'UNAVAILABLE', message: 'too long without the gateway to resume this reply safely' },
        turn.eventId ?? undefined,
      ),
    );
    chat.endTurn();
    return;
  }
  // Follow the turn again by replay; what was shown before is not shown twice (ReplyStream).
  sendTurn(chat, turn);
}

function showText(chat: TurnChat, turn: Turn, text: string): void {
  turn.lastHeardAt = Date.now();
  if (text === '' || !chat.input) return;
  if (turn.needLabel) {
    chat.input.ensureLineStart();
    chat.input.write(agentLabel(chat.colour));
    turn.needLabel = false;
  }
  chat.input.write(text);
}

function onFinal(chat: TurnChat, turn: Turn, status: string, message: MessageView | null): void {
  turn.lastHeardAt = Date.now();
  const content = message?.content ?? '';
  const pause = pauseOf(status);
  if (pause === 'approval') {
    showText(chat, turn, turn.reply.remainder(content));
    chat.awaitApproval(turn, message);
    return;
  }
  if (pause === 'clarification') {
    // The question is the paused Message's content (the ask_user call's argument), not streamed as text.
    turn.needLabel = true;
    showText(chat, turn, turn.reply.remainder(content));
    chat.input?.ensureLineStart();
    chat.answering = true;
    chat.endTurn();
    return;
  }
  showText(chat, turn, turn.reply.remainder(content));
  chat.input?.ensureLineStart();
  chat.print(statusLine(chat.colour, status, message));
  if (!endedWell(status)) chat.failures += 1;
  chat.endTurn();
}

function onError(
  chat: TurnChat,
  error: FrameError,
  ref: string | number | undefined,
  eventId: string | undefined,
): void {
  const turn = chat.current;
  if (typeof ref === 'string' && ref.startsWith('interrupt:')) {
    chat.notice(`could not interrupt: ${error.message}`);
    return;
  }
  const ours = turn !== null && (ref === turn.message.idempotencyKey || (eventId && eventId === turn.eventId));
  if (ours && error.code === 'TIMEOUT' && turn.eventId !== null) {
    // The gateway stopped following a long turn; it goes on, so follow it again.
    sendTurn(chat, turn);
    return;
  }
  chat.input?.ensureLineStart();
  chat.print(errorLine(chat.colour, error, eventId ?? turn?.eventId ?? undefined));
  if (ours) {
    chat.failures += 1;
    chat.endTurn();
  }
}
