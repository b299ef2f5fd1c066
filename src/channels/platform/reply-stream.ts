import { PlatformRateLimitedError, type PostedMessage } from './platform.transport.js';

/** Waits `ms` (or less when `signal` aborts); injected so tests advance time instead of sleeping. */
export type Wait = (ms: number, signal: AbortSignal) => Promise<void>;

/** Real time: an unreferenced timer, cut short by the signal. */
export const realWait: Wait = (ms, signal) =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    timer.unref();
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** At most this many messages for one reply; the rest is cut with a note (a reply is bounded like a queue). */
export const MAX_REPLY_MESSAGES = 20;
/** Tries of one outbound call the platform answers with "wait" (429) before the reply gives up. */
export const MAX_RATE_LIMIT_RETRIES = 5;
/** A reply with no text at all still answers the message. */
const EMPTY_REPLY = '(no reply)';
const CUT_NOTE = '\n[reply cut: too long]';

/**
 * Splits text into messages of at most `max` characters (Telegram: 4096),
 * preferring a line break, then a space, in the last quarter of a piece, so
 * words survive; at most `MAX_REPLY_MESSAGES` pieces.
 */
export function splitMessage(text: string, max: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > max) {
    if (pieces.length === MAX_REPLY_MESSAGES - 1) {
      pieces.push(rest.slice(0, max - CUT_NOTE.length) + CUT_NOTE);
      return pieces;
    }
    const window = rest.slice(0, max);
    const floor = Math.floor(max * 0.75);
    let cut = window.lastIndexOf('\n');
    if (cut < floor) cut = window.lastIndexOf(' ');
    if (cut < floor) cut = max;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut === max ? cut : cut + 1);
  }
  pieces.push(rest);
  return pieces;
}

/** What a reply stream posts through: the platform's send and edit. */
export interface ReplyTarget {
  send(chatId: string, text: string): Promise<PostedMessage>;
  edit(chatId: string, messageId: string, text: string): Promise<void>;
}

/** How one reply streams. */
export interface ReplyStreamOptions {
  target: ReplyTarget;
  chatId: string;
  maxMessageLength: number;
  /** Shortest pause between two outbound calls of this reply, in ms. */
  minIntervalMs: number;
  /** Milliseconds now (the gateway's clock). */
  now: () => number;
  wait?: Wait;
}

/**
 * One reply, streamed by editing one message (DECISIONS §16): the first
 * text is sent, later text edits it, at most one call per `minIntervalMs`;
 * text beyond the platform's length continues in new messages. A 429 is
 * honoured (`retry_after`), then the call is tried again. `finish` sets the
 * final text and resolves once the platform shows exactly it. A single loop
 * per reply (`pump`) makes every call, so edits never overtake each other.
 */
export class ReplyStream {
  private text = '';
  private finished = false;
  private readonly posted: Array<PostedMessage & { text: string }> = [];
  private readonly abort = new AbortController();
  private wake: (() => void) | null = null;
  private readonly done: Promise<void>;
  private lastCallAt = Number.NEGATIVE_INFINITY;
  private readonly wait: Wait;
  /** Outbound calls made (sends + edits), for stats and tests. */
  calls = 0;

  constructor(private readonly options: ReplyStreamOptions) {
    this.wait = options.wait ?? realWait;
    this.done = this.pump();
    // A failure while streaming surfaces through `finish`; until then it must not be an unhandled rejection.
    this.done.catch(() => undefined);
  }

  /** Adds streamed text. */
  append(delta: string): void {
    if (this.finished || delta.length === 0) return;
    this.text += delta;
    this.wake?.();
  }

  /** Sets the final text (authoritative over the streamed one) and waits until it is shown. */
  finish(finalText: string | null): Promise<void> {
    if (!this.finished) {
      this.finished = true;
      if (finalText !== null) this.text = finalText;
      if (this.text.trim().length === 0) this.text = EMPTY_REPLY;
      this.wake?.();
    }
    return this.done;
  }

  /** Stops the reply where it is (shutdown): nothing more is sent. */
  close(): Promise<void> {
    this.abort.abort();
    this.wake?.();
    return this.done.catch(() => undefined);
  }

  /** How many messages the reply took so far. */
  get messages(): number {
    return this.posted.length;
  }

  private async pump(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      if (!this.finished && !this.hasNews()) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      if (this.hasNews()) await this.pushOne(signal);
      else if (this.finished) return;
    }
  }

  /** True when the platform does not show the current text yet (leading blanks wait for words). */
  private hasNews(): boolean {
    if (this.text.trim().length === 0) return false;
    const pieces = splitMessage(this.text, this.options.maxMessageLength);
    if (pieces.length !== this.posted.length) return true;
    return pieces.some((piece, i) => this.posted[i]!.text !== piece);
  }

  /** Makes the one next call that brings the platform closer to the text, spaced and retried on 429. */
  private async pushOne(signal: AbortSignal): Promise<void> {
    const gap = this.lastCallAt + this.options.minIntervalMs - this.options.now();
    if (gap > 0) await this.wait(gap, signal);
    if (signal.aborted) return;
    const pieces = splitMessage(this.text, this.options.maxMessageLength);
    const index = pieces.findIndex((piece, i) => this.posted[i]?.text !== piece);
    const piece = pieces[index]!;
    const { target, chatId } = this.options;
    for (let attempt = 0; ; attempt++) {
      try {
        this.lastCallAt = this.options.now();
        this.calls++;
        const existing = this.posted[index];
        if (existing) {
          await target.edit(chatId, existing.messageId, piece);
          existing.text = piece;
        } else {
          const sent = await target.send(chatId, piece);
          this.posted[index] = { messageId: sent.messageId, text: piece };
        }
        return;
      } catch (err) {
        if (!(err instanceof PlatformRateLimitedError) || attempt >= MAX_RATE_LIMIT_RETRIES) throw err;
        await this.wait(err.retryAfterMs, signal);
        if (signal.aborted) return;
      }
    }
  }
}
