import type { CliError } from '../io.js';
import type { ClientTarget } from '../target.js';
import { style } from '../terminal.js';
import { decideSkill, findSession, stagedSkills, webSocketUrl } from './chat.api.js';
import {
  answerApproval,
  answerApprovalKey,
  askApproval,
  handleFeedFrame,
  lateAnswer,
  leaveWaiting,
  watchDecision,
  type ApprovalChat,
} from './chat.approvals.js';
import { parseLine, type CommandName } from './chat.commands.js';
import type { TokenRole } from './chat.frames.js';
import { LineInput, type InputStreams } from './chat.input.js';
import { helpText, LABELS, localTime, noticeLine } from './chat.render.js';
import {
  newSessionKey,
  showHistory,
  showSessions,
  startNewSession,
  switchSession,
  type SessionChat,
} from './chat.sessions.js';
import { ChatSocket, DEFAULT_SOCKET_TIMING, type SocketTiming } from './chat.socket.js';
import { handleFrame, requestInterrupt, resumeTurn, startTurn, type Turn } from './chat.turns.js';

/**
 * The terminal chat itself: the state its parts share (chat.turns.ts, chat.approvals.ts, chat.sessions.ts), the
 * terminal's input routed to them, the slash commands, the connection's drops and returns, and the end.
 */

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

/** The state the turn, approval and session parts share, with the chat's output: one object handed to each. */
interface ChatState extends ApprovalChat, SessionChat {
  input: LineInput | null;
  sessionKey: string;
  current: Turn | null;
}

/**
 * The terminal chat (DECISIONS §8, §15): messages over the WebSocket with an idempotency key made once per message,
 * replies streamed as they come (text, tool calls and results, the final status), approvals with one key, answers
 * to the agent's questions, slash commands, and a connection that comes back after a drop and resumes the reply
 * without showing any of it twice.
 */
export class ChatClient {
  private readonly socket: ChatSocket;
  private readonly chat: ChatState;
  private readonly freshSession: boolean;
  private role: TokenRole | null = null;
  private connected = false;
  /** Ctrl-C presses in a row. */
  private interrupts = 0;
  /** Piped input ended: leave once the queue is done. */
  private ending = false;
  /** Commands still running (their output comes before the next prompt). */
  private commands = 0;
  private finished = false;
  private settle: { resolve: (code: number) => void; reject: (err: Error) => void } | null = null;
  private readonly onSigint = (): void => this.interrupt();
  private readonly onSigterm = (): void => this.quit();

  constructor(private readonly options: ChatOptions) {
    this.freshSession = options.sessionKey === null;
    const sessionKey = options.sessionKey ?? newSessionKey();
    this.socket = new ChatSocket(
      webSocketUrl(options.target),
      options.target.url,
      options.target.token,
      options.userId !== undefined ? { user_id: options.userId } : {},
      {
        frame: (frame) =>
          frame.type === 'event' || frame.type === 'subscribed'
            ? handleFeedFrame(this.chat, frame)
            : handleFrame(this.chat, frame),
        lost: (reason, delayMs) => this.onLost(reason, delayMs),
        restored: (role) => this.onRestored(role),
        fatal: (error) => this.stop(error),
      },
      options.timing ?? DEFAULT_SOCKET_TIMING,
    );
    this.chat = {
      target: options.target,
      socket: this.socket,
      input: null,
      colour: options.colour,
      get width(): number {
        return Math.max(40, options.streams.output.columns || 100);
      },
      sessionKey,
      current: null,
      answering: false,
      failures: 0,
      queue: [],
      decidedElsewhere: null,
      lastSessions: [],
      print: (text) => this.print(text),
      notice: (text) => this.notice(text),
      endTurn: () => this.endTurn(),
      awaitApproval: (turn, message) => askApproval(this.chat, turn, message),
    };
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
    this.chat.input = new LineInput(
      this.options.streams,
      {
        line: (text, echoed) => this.onLine(text, echoed),
        interrupt: () => this.interrupt(),
        end: () => this.onEnd(),
        key: (key) => answerApprovalKey(this.chat, key),
        typed: () => {
          this.interrupts = 0;
        },
      },
      { more: LABELS.more },
    );
    if (!this.chat.input.isTerminal) process.on('SIGINT', this.onSigint);
    // Leave cleanly (the terminal out of raw mode) when told to stop.
    process.on('SIGTERM', this.onSigterm);
    this.banner();
    if (!this.freshSession) await showHistory(this.chat, this.chat.sessionKey);
    this.idle();
    return done;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Output

  private print(text: string): void {
    this.chat.input?.print(text);
    if (this.chat.current) this.chat.current.needLabel = true;
  }

  private notice(text: string): void {
    this.print(noticeLine(this.chat.colour, text));
  }

  private banner(): void {
    const { target } = this.options;
    const token = target.token ? `${this.role} token from ${target.tokenSource}` : 'no token';
    this.print(`${style(this.chat.colour, 'bold', 'Gatehouse chat')} · ${target.url} · ${token}`);
    this.notice(
      `session ${this.chat.sessionKey}${this.freshSession ? ' (new)' : ''} · /help lists the commands · Ctrl-D quits`,
    );
  }

  /** Shows the prompt unless a turn or a command is under way. */
  private idle(): void {
    if (this.finished || this.chat.current || this.commands > 0) return;
    if (this.chat.queue.length > 0) {
      this.dispatch(this.chat.queue.shift()!, false);
      return;
    }
    if (this.ending) {
      this.quit();
      return;
    }
    const label = this.chat.answering ? LABELS.answer : LABELS.you;
    this.chat.input?.showPrompt(style(this.chat.colour, this.chat.answering ? 'yellow' : 'green', label));
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Input

  private onLine(text: string, echoed: boolean): void {
    this.interrupts = 0;
    if (this.chat.current?.phase === 'approval') {
      answerApproval(this.chat, text);
      return;
    }
    // Piped input is taken strictly in order: a line waits for the turn or command before it.
    if (!this.chat.input?.isTerminal && (this.chat.current || this.commands > 0)) {
      this.chat.queue.push(text);
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
        if (this.chat.current || this.commands > 0) {
          this.chat.queue.push(text);
          return;
        }
        if (lateAnswer(this.chat, parsed.text)) {
          this.idle();
          return;
        }
        this.chat.decidedElsewhere = null;
        startTurn(this.chat, parsed.text, echoed);
        return;
    }
  }

  /** Piped input ended, or Ctrl-D. */
  private onEnd(): void {
    if (this.chat.input?.isTerminal) {
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
    const turn = this.chat.current;
    if (!turn) {
      this.chat.input?.clearLine();
      this.notice('press Ctrl-C again (or Ctrl-D) to quit');
      return;
    }
    if (turn.phase === 'approval') {
      leaveWaiting(this.chat, turn);
      return;
    }
    requestInterrupt(this.chat, turn);
  }

  /** The current turn is over (or left): back to the prompt. */
  private endTurn(): void {
    this.chat.current = null;
    this.interrupts = 0;
    this.chat.input?.setKeyMode(false);
    this.idle();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Connection

  private onLost(reason: string, delayMs: number): void {
    this.connected = false;
    this.chat.input?.ensureLineStart();
    this.notice(`${reason}; reconnecting in ${(delayMs / 1000).toFixed(1)} s…`);
  }

  private onRestored(role: TokenRole): void {
    this.connected = true;
    this.role = role;
    this.notice('reconnected');
    if (this.chat.current?.phase === 'approval') watchDecision(this.chat);
    resumeTurn(this.chat);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Commands

  private runCommand(name: CommandName, args: string): void {
    this.commands += 1;
    this.chat.input?.hidePrompt();
    this.command(name, args)
      .catch((err: unknown) => {
        this.print(style(this.chat.colour, 'red', `  ✗ ${(err as Error).message}`));
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
        this.print(helpText(this.chat.colour));
        return;
      case 'quit':
        this.quit();
        return;
      case 'interrupt':
        if (!this.chat.current) this.notice('no turn is running');
        else if (this.chat.current.phase === 'approval') leaveWaiting(this.chat, this.chat.current);
        else requestInterrupt(this.chat, this.chat.current);
        return;
      case 'new':
        startNewSession(this.chat);
        return;
      case 'switch':
        await switchSession(this.chat, args);
        return;
      case 'sessions':
        await showSessions(this.chat);
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

  private async status(): Promise<void> {
    const { target } = this.options;
    const state = this.connected ? `connected, ${this.role} role` : 'reconnecting';
    this.notice(`gateway ${target.url} (${state}; WebSocket ${webSocketUrl(target)})`);
    const session = await findSession(target, this.chat.sessionKey);
    this.notice(
      `session ${this.chat.sessionKey}: ${
        session ? `${session.message_count} messages, last active ${localTime(session.last_active)}` : 'no messages yet'
      }${this.chat.answering ? ' (the agent waits for an answer)' : ''}`,
    );
    const turn = this.chat.current;
    this.notice(turn ? `turn ${turn.eventId ?? '(not accepted yet)'}: ${turn.phase}` : 'no turn running');
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The end

  private quit(): void {
    const turn = this.chat.current;
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
    this.chat.input?.ensureLineStart();
    this.chat.input?.close();
    process.off('SIGINT', this.onSigint);
    process.off('SIGTERM', this.onSigterm);
    if (error) this.settle?.reject(error);
    else this.settle?.resolve(this.chat.input?.isTerminal === false && this.chat.failures > 0 ? 1 : 0);
  }
}
