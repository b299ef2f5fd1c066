import { randomBytes, randomUUID } from 'node:crypto';
import type { CliError } from '../io.js';
import { ApiCallError, type ClientTarget } from '../target.js';
import { style } from '../terminal.js';
import {
  decideSkill,
  findSession,
  listSessions,
  resolveToolCall,
  sessionHistory,
  stagedSkills,
  webSocketUrl,
  type SessionView,
} from './chat.api.js';
import { isSessionKey, parseLine, type CommandName } from './chat.commands.js';
import {
  interruptFrame,
  messageFrame,
  type FrameError,
  type MessageView,
  type OutgoingMessage,
  type ServerFrame,
  type TokenRole,
} from './chat.frames.js';
import { LineInput, type InputStreams } from './chat.input.js';
import {
  agentLabel,
  errorLine,
  helpText,
  historyLines,
  LABELS,
  localTime,
  noticeLine,
  oneLine,
  sessionsTable,
  shown,
  statusLine,
  toolCallLine,
  toolResultLine,
} from './chat.render.js';
import { ChatSocket, DEFAULT_SOCKET_TIMING, type SocketTiming } from './chat.socket.js';
import { ReplyStream } from './chat.stream.js';

/** What a chat needs: where to talk, as whom, and the terminal. */
export interface ChatOptions {
  target: ClientTarget;
  /** `--session`: the session to start in; null starts a new one. */
  sessionKey: string | null;
  /** `--user`: the chat identity's user id (default: the gateway's, the token's fingerprint). */
  userId?: string;
  /** Colour and styles (standard output is a terminal). */
  colour: boolean;
  streams: InputStreams;
  timing?: SocketTiming;
}

/**
 * A message sent again after a reconnect is answered by replay only while the gateway keeps its idempotency
 * record: 3600 s from the turn's end (DECISIONS §6), which came after the last frame heard. Past this, resuming
 * could run the message twice, so the client does not try.
 */
const RESUME_WINDOW_MS = 55 * 60 * 1000;
/** History entries shown when a chat starts in, or switches to, an existing session. */
const HISTORY_SHOWN = 6;

/** One user message and the turn answering it, as far as the client has followed it. */
interface Turn {
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

/** A fresh session key: `gateway:cli:<12 random base32 characters>`. */
export function newSessionKey(): string {
  const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
  const bytes = randomBytes(12);
  let id = '';
  for (const byte of bytes) id += alphabet[byte % 32]!;
  return `gateway:cli:${id}`;
}

/**
 * The terminal chat (DECISIONS §8, §15): messages over the WebSocket with an idempotency key made once per message,
 * replies streamed as they come (text, tool calls and results, the final status), approvals with one key, answers
 * to the agent's questions, slash commands, and a connection that comes back after a drop and resumes the reply
 * without showing any of it twice.
 */
export class ChatClient {
  private readonly socket: ChatSocket;
  private input: LineInput | null = null;
  private sessionKey: string;
  private readonly freshSession: boolean;
  private role: TokenRole | null = null;
  private connected = false;
  private current: Turn | null = null;
  /** Lines typed (or piped) while a turn runs, taken in order after it. */
  private readonly queue: string[] = [];
  /** The agent asked a question (waiting_clarification): the next message answers it. */
  private answering = false;
  private lastSessions: SessionView[] = [];
  /** Ctrl-C presses in a row. */
  private interrupts = 0;
  /** Piped input ended: leave once the queue is done. */
  private ending = false;
  /** Commands still running (their output comes before the next prompt). */
  private commands = 0;
  private failures = 0;
  private finished = false;
  private settle: { resolve: (code: number) => void; reject: (err: Error) => void } | null = null;
  private readonly onSigint = (): void => this.interrupt();
  private readonly onSigterm = (): void => this.quit();

  constructor(private readonly options: ChatOptions) {
    this.freshSession = options.sessionKey === null;
    this.sessionKey = options.sessionKey ?? newSessionKey();
    this.socket = new ChatSocket(
      webSocketUrl(options.target),
      options.target.url,
      options.target.token,
      options.userId !== undefined ? { user_id: options.userId } : {},
      {
        frame: (frame) => this.onFrame(frame),
        lost: (reason, delayMs) => this.onLost(reason, delayMs),
        restored: (role) => this.onRestored(role),
        fatal: (error) => this.stop(error),
      },
      options.timing ?? DEFAULT_SOCKET_TIMING,
    );
  }

  /**
   * Connects, then chats until the user quits. Resolves with the exit code (1 when piped messages failed);
   * rejects with a CliError when the gateway cannot be reached at first or refuses the token or identity.
   */
  async run(): Promise<number> {
    this.role = await this.socket.connect();
    this.connected = true;
    const done = new Promise<number>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    this.input = new LineInput(
      this.options.streams,
      {
        line: (text, echoed) => this.onLine(text, echoed),
        interrupt: () => this.interrupt(),
        end: () => this.onEnd(),
        key: (key) => this.onKey(key),
        typed: () => {
          this.interrupts = 0;
        },
      },
      { more: LABELS.more },
    );
    if (!this.input.isTerminal) process.on('SIGINT', this.onSigint);
    // Leave cleanly (the terminal out of raw mode) when told to stop.
    process.on('SIGTERM', this.onSigterm);
    this.banner();
    if (!this.freshSession) await this.showHistory(this.sessionKey);
    this.idle();
    return done;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Output

  private get colour(): boolean {
    return this.options.colour;
  }

  private get width(): number {
    return Math.max(40, this.options.streams.output.columns || 100);
  }

  private print(text: string): void {
    this.input?.print(text);
    if (this.current) this.current.needLabel = true;
  }

  private notice(text: string): void {
    this.print(noticeLine(this.colour, text));
  }

  private banner(): void {
    const { target } = this.options;
    const token = target.token ? `${this.role} token from ${target.tokenSource}` : 'no token';
    this.print(`${style(this.colour, 'bold', 'Gatehouse chat')} · ${target.url} · ${token}`);
    this.notice(
      `session ${this.sessionKey}${this.freshSession ? ' (new)' : ''} · /help lists the commands · Ctrl-D quits`,
    );
  }

  /** Shows the prompt unless a turn or a command is under way. */
  private idle(): void {
    if (this.finished || this.current || this.commands > 0) return;
    if (this.queue.length > 0) {
      this.dispatch(this.queue.shift()!, false);
      return;
    }
    if (this.ending) {
      this.quit();
      return;
    }
    const label = this.answering ? LABELS.answer : LABELS.you;
    this.input?.showPrompt(style(this.colour, this.answering ? 'yellow' : 'green', label));
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Input

  private onLine(text: string, echoed: boolean): void {
    this.interrupts = 0;
    if (this.current?.phase === 'approval') {
      this.answerApproval(text);
      return;
    }
    // Piped input is taken strictly in order: a line waits for the turn or command before it.
    if (!this.input?.isTerminal && (this.current || this.commands > 0)) {
      this.queue.push(text);
      return;
    }
    this.dispatch(text, echoed);
  }

  /** Runs a command at once; sends a message, or queues it behind the running turn. */
  private dispatch(text: string, echoed: boolean): void {
    const parsed = parseLine(text);
    switch (parsed.kind) {
      case 'empty':
        this.idle();
        return;
      case 'unknown':
        this.notice(`unknown command /${parsed.name}; /help lists the commands (//text sends /text)`);
        this.idle();
        return;
      case 'command':
        this.runCommand(parsed.name, parsed.args);
        return;
      case 'message':
        if (this.current || this.commands > 0) {
          this.queue.push(text);
          return;
        }
        this.startTurn(parsed.text, echoed);
        return;
    }
  }

  /** Piped input ended, or Ctrl-D. */
  private onEnd(): void {
    if (this.input?.isTerminal) {
      this.quit();
      return;
    }
    this.ending = true;
    this.idle();
  }

  /** Ctrl-C: interrupt the running turn, else clear the line; twice in a row quits. */
  private interrupt(): void {
    this.interrupts += 1;
    if (this.interrupts >= 2) {
      this.quit();
      return;
    }
    const turn = this.current;
    if (!turn) {
      this.input?.clearLine();
      this.notice('press Ctrl-C again (or Ctrl-D) to quit');
      return;
    }
    if (turn.phase === 'approval') {
      this.leaveWaiting(turn);
      return;
    }
    this.requestInterrupt(turn);
  }

  private onKey(key: string): void {
    const turn = this.current;
    if (turn?.phase !== 'approval') return;
    if (key === 'y') void this.decide(turn, 'approve');
    else if (key === 'n') void this.decide(turn, 'deny');
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Turns

  private startTurn(text: string, echoed: boolean): void {
    if (!echoed) {
      const label = style(this.colour, 'green', this.answering ? LABELS.answer : LABELS.you);
      this.print(`${label}${text.replace(/\n/g, `\n${LABELS.more}`)}`);
    }
    this.answering = false;
    this.current = {
      message: { text, sessionKey: this.sessionKey, idempotencyKey: `chat-${randomUUID()}` },
      eventId: null,
      phase: 'sending',
      reply: new ReplyStream(),
      interruptAsked: false,
      lastHeardAt: Date.now(),
      needLabel: true,
    };
    this.input?.hidePrompt();
    this.send(this.current);
  }

  /**
   * Sends the turn's message frame: the first time, and again (same idempotency key) to follow the turn after a
   * reconnect, an approval or a follow timeout — the gateway answers by replaying the turn, never running it twice.
   */
  private send(turn: Turn): void {
    turn.reply.beginPass();
    turn.needLabel = true;
    if (!this.socket.send(messageFrame(turn.message))) {
      this.notice('not connected: the message goes out once the connection is back');
    }
  }

  private requestInterrupt(turn: Turn): void {
    if (turn.eventId !== null && this.socket.send(interruptFrame(turn.eventId))) {
      this.notice('interrupting…');
      return;
    }
    turn.interruptAsked = true;
    this.notice('interrupting as soon as the gateway has the message…');
  }

  private onFrame(frame: ServerFrame): void {
    const current = this.current;
    /** The current turn when `eventId` is its event (frames of anything else are not this chat's). */
    const ours = (eventId: string): Turn | null =>
      current !== null && current.eventId !== null && current.eventId === eventId ? current : null;
    switch (frame.type) {
      case 'accepted':
        if (current && frame.ref === current.message.idempotencyKey) {
          current.eventId = frame.event_id;
          if (current.phase === 'sending') current.phase = 'streaming';
          current.lastHeardAt = Date.now();
          if (current.interruptAsked && this.socket.send(interruptFrame(frame.event_id))) {
            current.interruptAsked = false;
            this.notice('interrupting…');
          }
        }
        return;
      case 'delta': {
        const turn = ours(frame.event_id);
        if (turn) this.showText(turn, turn.reply.delta(shown(frame.content)));
        return;
      }
      case 'tool_call': {
        const turn = ours(frame.event_id);
        if (!turn) return;
        turn.lastHeardAt = Date.now();
        const name = shown(frame.name);
        if (turn.reply.toolCall(shown(frame.id), name, frame.arguments))
          this.print(toolCallLine(this.colour, name, frame.arguments, this.width));
        return;
      }
      case 'tool_result': {
        const turn = ours(frame.event_id);
        if (!turn) return;
        turn.lastHeardAt = Date.now();
        const name = shown(frame.name);
        if (turn.reply.toolResult(shown(frame.id)))
          this.print(toolResultLine(this.colour, name, frame.result, this.width));
        return;
      }
      case 'final': {
        const turn = ours(frame.event_id);
        if (turn) this.onFinal(turn, frame.status, frame.message);
        return;
      }
      case 'error':
        this.onError(frame.error, frame.ref, frame.event_id);
        return;
      case 'auth_ok':
      case 'pong':
        return;
    }
  }

  private showText(turn: Turn, text: string): void {
    turn.lastHeardAt = Date.now();
    if (text === '' || !this.input) return;
    if (turn.needLabel) {
      this.input.ensureLineStart();
      this.input.write(agentLabel(this.colour));
      turn.needLabel = false;
    }
    this.input.write(text);
  }

  private onFinal(turn: Turn, status: string, message: MessageView | null): void {
    turn.lastHeardAt = Date.now();
    const content = message?.content ?? '';
    if (status === 'waiting_approval') {
      this.showText(turn, turn.reply.remainder(content));
      this.askApproval(turn, message);
      return;
    }
    if (status === 'waiting_clarification') {
      // The question is the paused Message's content (the ask_user call's argument), not streamed as text.
      turn.needLabel = true;
      this.showText(turn, turn.reply.remainder(content));
      this.input?.ensureLineStart();
      this.answering = true;
      this.endTurn();
      return;
    }
    this.showText(turn, turn.reply.remainder(content));
    this.input?.ensureLineStart();
    this.print(statusLine(this.colour, status, message));
    if (status !== 'completed' && status !== 'interrupted') this.failures += 1;
    this.endTurn();
  }

  private onError(error: FrameError, ref: string | number | undefined, eventId: string | undefined): void {
    const turn = this.current;
    if (typeof ref === 'string' && ref.startsWith('interrupt:')) {
      this.notice(`could not interrupt: ${error.message}`);
      return;
    }
    const ours = turn !== null && (ref === turn.message.idempotencyKey || (eventId && eventId === turn.eventId));
    if (ours && error.code === 'TIMEOUT' && turn.eventId !== null) {
      // The gateway stopped following a long turn; it goes on, so follow it again.
      this.send(turn);
      return;
    }
    this.input?.ensureLineStart();
    this.print(errorLine(this.colour, error, eventId ?? turn?.eventId ?? undefined));
    if (ours) {
      this.failures += 1;
      this.endTurn();
    }
  }

  private endTurn(): void {
    this.current = null;
    this.interrupts = 0;
    this.input?.setKeyMode(false);
    this.idle();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Approvals

  private askApproval(turn: Turn, message: MessageView | null): void {
    turn.phase = 'approval';
    const pending = message?.tool_calls?.find((call) => !('result' in call)) ?? turn.reply.unresolvedCall();
    this.input?.ensureLineStart();
    const call = pending
      ? `${pending.name} ${oneLine(shown(pending.arguments), this.width - pending.name.length - 40)}`
      : 'a tool';
    this.print(style(this.colour, 'yellow', `  ⏸ approval needed to run ${call} (turn ${turn.eventId})`));
    if (this.input?.isTerminal) {
      this.input.setKeyMode(true);
      this.input.write(style(this.colour, 'yellow', '  approve? [y/n] '));
      return;
    }
    this.print('  approve? [y/n]');
    const answer = this.queue.shift();
    if (answer !== undefined) this.answerApproval(answer);
  }

  /** An approval answered with a line (piped input, or Enter after y/n on a terminal). */
  private answerApproval(text: string): void {
    const turn = this.current;
    if (!turn || turn.phase !== 'approval') return;
    const answer = text.trim().toLowerCase();
    if (answer === 'y' || answer === 'yes') void this.decide(turn, 'approve');
    else if (answer === 'n' || answer === 'no') void this.decide(turn, 'deny');
    else this.print('  approve? [y/n]');
  }

  /** POST /turns/{event_id}/approve|deny (admin), then follow the rest of the turn. */
  private async decide(turn: Turn, resolution: 'approve' | 'deny'): Promise<void> {
    turn.phase = 'deciding';
    this.input?.setKeyMode(false);
    if (this.input?.isTerminal) this.input.write(`${resolution === 'approve' ? 'yes' : 'no'}\n`);
    try {
      await resolveToolCall(this.options.target, turn.eventId!, resolution);
      this.notice(resolution === 'approve' ? 'approved: the tool runs' : 'denied: the agent is told so');
    } catch (err) {
      if (!(err instanceof ApiCallError && err.status === 400)) {
        this.print(style(this.colour, 'red', `  ✗ ${(err as Error).message}`));
        this.leaveWaiting(turn);
        return;
      }
      // No longer waiting (decided elsewhere): follow the turn to see what became of it.
      this.notice(err.message);
    }
    if (this.current !== turn) return;
    turn.phase = 'streaming';
    this.send(turn);
  }

  /** Leaves a paused turn as it is (it can be decided later, e.g. in the dashboard). */
  private leaveWaiting(turn: Turn): void {
    this.notice(`turn ${turn.eventId} stays waiting for approval (POST /turns/${turn.eventId}/approve or /deny)`);
    this.endTurn();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Connection

  private onLost(reason: string, delayMs: number): void {
    this.connected = false;
    this.input?.ensureLineStart();
    this.notice(`${reason}; reconnecting in ${(delayMs / 1000).toFixed(1)} s…`);
  }

  private onRestored(role: TokenRole): void {
    this.connected = true;
    this.role = role;
    this.notice('reconnected');
    const turn = this.current;
    if (!turn || (turn.phase !== 'sending' && turn.phase !== 'streaming')) return;
    if (Date.now() - turn.lastHeardAt > RESUME_WINDOW_MS) {
      this.print(
        errorLine(
          this.colour,
          { code: 'UNAVAILABLE', message: 'too long without the gateway to resume this reply safely' },
          turn.eventId ?? undefined,
        ),
      );
      this.endTurn();
      return;
    }
    // Follow the turn again by replay; what was shown before is not shown twice (ReplyStream).
    this.send(turn);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Commands

  private runCommand(name: CommandName, args: string): void {
    this.commands += 1;
    this.input?.hidePrompt();
    this.command(name, args)
      .catch((err: unknown) => {
        this.print(style(this.colour, 'red', `  ✗ ${(err as Error).message}`));
      })
      .finally(() => {
        this.commands -= 1;
        this.idle();
      });
  }

  private async command(name: CommandName, args: string): Promise<void> {
    const { target } = this.options;
    switch (name) {
      case 'help':
        this.print(helpText(this.colour));
        return;
      case 'quit':
        this.quit();
        return;
      case 'interrupt':
        if (!this.current) this.notice('no turn is running');
        else if (this.current.phase === 'approval') this.leaveWaiting(this.current);
        else this.requestInterrupt(this.current);
        return;
      case 'new':
        if (this.busy()) return;
        this.sessionKey = newSessionKey();
        this.answering = false;
        this.notice(`new session ${this.sessionKey}`);
        return;
      case 'switch':
        if (this.busy()) return;
        await this.switchTo(args);
        return;
      case 'sessions':
        this.lastSessions = await listSessions(target);
        this.print(sessionsTable(this.colour, this.lastSessions, this.sessionKey));
        return;
      case 'status':
        await this.status();
        return;
      case 'approve':
      case 'deny':
        if (args === '') {
          const staged = await stagedSkills(target);
          const names = staged.map((s) => `${s.name} (${s.id})`).join(', ');
          this.notice(`usage: /${name} <skill>; ${names ? `staged skills: ${names}` : 'there are no staged skills'}`);
          return;
        }
        this.print(`  ${await decideSkill(target, name, args)}`);
        return;
    }
  }

  /** Refuses a session change while a turn runs (its reply belongs to the session it was sent in). */
  private busy(): boolean {
    if (!this.current) return false;
    this.notice('a turn is running: wait for it, or /interrupt it first');
    return true;
  }

  private async switchTo(args: string): Promise<void> {
    const index = /^\d+$/.test(args) ? Number(args) : null;
    const key = index !== null ? this.lastSessions[index - 1]?.id : args;
    if (!key) {
      this.notice(index !== null ? `no session number ${index}: run /sessions first` : 'usage: /switch <key|n>');
      return;
    }
    if (!isSessionKey(key)) {
      this.notice(`not a session key: ${key} (keys start with "gateway:")`);
      return;
    }
    this.sessionKey = key;
    this.answering = false;
    const session = await findSession(this.options.target, key);
    this.notice(
      session
        ? `session ${key}: ${session.message_count} messages, last active ${localTime(session.last_active)}`
        : `session ${key}: no messages yet`,
    );
    if (session) await this.showHistory(key);
  }

  private async showHistory(key: string): Promise<void> {
    try {
      const entries = await sessionHistory(this.options.target, key, HISTORY_SHOWN);
      for (const line of historyLines(this.colour, entries, this.width - 8)) this.print(line);
    } catch (err) {
      this.notice(`no history: ${(err as Error).message}`);
    }
  }

  private async status(): Promise<void> {
    const { target } = this.options;
    const state = this.connected ? `connected, ${this.role} role` : 'reconnecting';
    this.notice(`gateway ${target.url} (${state}; WebSocket ${webSocketUrl(target)})`);
    const session = await findSession(target, this.sessionKey);
    this.notice(
      `session ${this.sessionKey}: ${
        session ? `${session.message_count} messages, last active ${localTime(session.last_active)}` : 'no messages yet'
      }${this.answering ? ' (the agent waits for an answer)' : ''}`,
    );
    const turn = this.current;
    this.notice(turn ? `turn ${turn.eventId ?? '(not accepted yet)'}: ${turn.phase}` : 'no turn running');
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The end

  private quit(): void {
    const turn = this.current;
    if (turn?.eventId) {
      this.notice(
        turn.phase === 'approval'
          ? `turn ${turn.eventId} stays waiting for approval`
          : `turn ${turn.eventId} goes on at the gateway`,
      );
    }
    this.stop(null);
  }

  private stop(error: CliError | null): void {
    if (this.finished) return;
    this.finished = true;
    this.socket.close();
    this.input?.ensureLineStart();
    this.input?.close();
    process.off('SIGINT', this.onSigint);
    process.off('SIGTERM', this.onSigterm);
    if (error) this.settle?.reject(error);
    else this.settle?.resolve(this.input?.isTerminal === false && this.failures > 0 ? 1 : 0);
  }
}
