import { EventEmitter } from 'node:events';
import { clearScreenDown, createInterface, cursorTo, moveCursor, type Interface, type Key } from 'node:readline';

/** What the input tells the chat. */
export interface InputHandlers {
  /**
   * A whole message or command: one line, or several joined (a trailing `\`, or a paste). `echoed`: typed at the
   * shown prompt, so it is on screen already (typed ahead while a reply streamed, or piped in, it is not).
   */
  line(text: string, echoed: boolean): void;
  /** Ctrl-C (a terminal), or SIGINT (input from a pipe). */
  interrupt(): void;
  /** Ctrl-D on an empty line, or the end of piped input. */
  end(): void;
  /** A key while in key mode (`y`, `n`, …), lower-cased; other keys reach readline's line as usual. */
  key(name: string): void;
  /** Any key but Ctrl-C (so "Ctrl-C twice" means twice in a row). */
  typed(): void;
}

/** Streams the input works on: the process's own in production. */
export interface InputStreams {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

/** Terminal escape sequences turning bracketed paste on and off (pasted text arrives between markers). */
const PASTE_ON = '\x1b[?2004h';
const PASTE_OFF = '\x1b[?2004l';

/**
 * readline's output, gated: while a reply streams the prompt is hidden and what the user types ahead is not echoed
 * into the reply (it stays in the line and shows with the next prompt). readline needs only `write`, the size and
 * `resize` events of its output.
 */
class GatedOutput extends EventEmitter {
  echo = true;
  readonly isTTY = true;

  constructor(private readonly target: NodeJS.WriteStream) {
    super();
    target.on('resize', () => this.emit('resize'));
  }

  get columns(): number {
    return this.target.columns;
  }

  get rows(): number {
    return this.target.rows;
  }

  write(data: string | Uint8Array): boolean {
    if (this.echo) this.target.write(data);
    return true;
  }
}

/**
 * The chat's line input on node:readline: history (Up/Down), line editing, a prompt that can be hidden while a
 * reply streams, lines joined into one message by a trailing `\` or by a bracketed paste, Ctrl-C and Ctrl-D, and a
 * key mode for one-key answers. With piped input it reads plain lines and never prompts.
 */
export class LineInput {
  readonly isTerminal: boolean;
  private readonly rl: Interface;
  private readonly gate: GatedOutput | null;
  private readonly out: NodeJS.WriteStream;
  private readonly input: NodeJS.ReadStream;
  private pending: string[] = [];
  private pasting = false;
  private keyMode = false;
  private promptShown = false;
  private label = '';
  private closing = false;
  /** Whether the cursor is at the start of a line (output written outside readline). */
  private atLineStart = true;
  private readonly keyListener = (text: string | undefined, key: Key | undefined): void => this.onKey(text, key);

  constructor(
    streams: InputStreams,
    private readonly handlers: InputHandlers,
    private readonly labels: { more: string },
  ) {
    this.out = streams.output;
    this.input = streams.input;
    this.isTerminal = streams.input.isTTY === true && streams.output.isTTY === true;
    this.gate = this.isTerminal ? new GatedOutput(streams.output) : null;
    this.rl = createInterface({
      input: streams.input,
      ...(this.gate ? { output: this.gate as unknown as NodeJS.WritableStream } : {}),
      terminal: this.isTerminal,
      historySize: 500,
      removeHistoryDuplicates: true,
      prompt: '',
    });
    this.rl.on('line', (line) => this.onLine(line));
    this.rl.on('close', () => {
      if (this.isTerminal) this.out.write(PASTE_OFF);
      if (!this.closing) this.handlers.end();
    });
    if (this.isTerminal) {
      this.rl.on('SIGINT', () => {
        this.pending = [];
        this.handlers.interrupt();
      });
      streams.input.on('keypress', this.keyListener);
      this.out.write(PASTE_ON);
    }
  }

  /** Shows the prompt (`label`, e.g. `you› `) with whatever was typed ahead, and echoes typing again. */
  showPrompt(label: string): void {
    if (!this.gate) return;
    this.ensureLineStart();
    this.label = label;
    this.gate.echo = true;
    this.promptShown = true;
    this.rl.setPrompt(this.pending.length > 0 ? this.labels.more : label);
    this.rl.prompt(true);
  }

  /** Hides the prompt while a reply streams: typing goes on silently into the line. */
  hidePrompt(): void {
    if (!this.gate) return;
    this.promptShown = false;
    this.gate.echo = false;
  }

  /** True while the prompt is shown. */
  get prompting(): boolean {
    return this.promptShown;
  }

  /** Key mode: single keys go to `handlers.key` and never into the line (approve with y, deny with n). */
  setKeyMode(on: boolean): void {
    this.keyMode = on;
  }

  /** Empties the line being typed (and a message being continued over several lines). */
  clearLine(): void {
    this.pending = [];
    if (!this.gate) return;
    this.rl.write(null, { ctrl: true, name: 'e' });
    this.rl.write(null, { ctrl: true, name: 'u' });
    if (this.promptShown) {
      this.rl.setPrompt(this.label);
      this.rl.prompt(true);
    }
  }

  /** Writes reply text as it streams (the prompt is hidden meanwhile). */
  write(text: string): void {
    if (text === '') return;
    this.out.write(text);
    this.atLineStart = text.endsWith('\n');
  }

  /** Writes whole lines: above the prompt when it is shown (the line being typed survives), else on a new line. */
  print(text: string): void {
    if (this.promptShown && this.gate) {
      moveCursor(this.out, 0, -this.rl.getCursorPos().rows);
      cursorTo(this.out, 0);
      clearScreenDown(this.out);
      this.out.write(`${text}\n`);
      this.atLineStart = true;
      this.rl.prompt(true);
      return;
    }
    this.ensureLineStart();
    this.write(`${text}\n`);
  }

  /** Starts a new line unless the cursor is at the start of one. */
  ensureLineStart(): void {
    if (!this.atLineStart) this.write('\n');
  }

  /** Stops reading; restores the terminal (raw mode, bracketed paste). */
  close(): void {
    if (this.promptShown) this.out.write('\n');
    this.promptShown = false;
    this.closing = true;
    this.input.off('keypress', this.keyListener);
    this.rl.close();
  }

  private onLine(line: string): void {
    // Enter at the shown prompt: readline echoed it and moved to a new line (typed ahead, nothing was echoed).
    if (this.gate?.echo) this.atLineStart = true;
    if (this.keyMode) return;
    if (this.pasting || (line.endsWith('\\') && !line.endsWith('\\\\'))) {
      this.pending.push(this.pasting ? line : line.slice(0, -1));
      if (this.gate && this.promptShown) {
        this.rl.setPrompt(this.labels.more);
        this.rl.prompt(true);
      }
      return;
    }
    const text = [...this.pending, line].join('\n');
    const echoed = this.promptShown;
    this.pending = [];
    this.promptShown = false;
    this.handlers.line(text, echoed);
  }

  private onKey(text: string | undefined, key: Key | undefined): void {
    const name = key?.name;
    if (name === 'paste-start') this.pasting = true;
    else if (name === 'paste-end') this.pasting = false;
    if (key?.ctrl && name === 'c') return;
    this.handlers.typed();
    if (!this.keyMode) return;
    // readline has put the key into its line already: take it out again.
    this.rl.write(null, { ctrl: true, name: 'e' });
    this.rl.write(null, { ctrl: true, name: 'u' });
    const pressed = (text ?? name ?? '').toLowerCase();
    if (pressed.length === 1) this.handlers.key(pressed);
  }
}
