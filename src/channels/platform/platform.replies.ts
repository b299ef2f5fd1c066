import type { Logger } from '../../lib/logger.js';
import {
  isInterruptedStatus,
  pauseOf,
  sessionKeyFor,
  type InboundSource,
  type MessagePath,
  type TurnEvent,
  type TurnRecord,
  type TurnStep,
} from '../../turns/index.js';
import type { DeliveredReplies } from './platform.delivered.js';
import { ReplyStream, type ReplyTarget, type Wait } from './reply-stream.js';

/** Replies streaming at once, at most; a turn beyond it is logged and not streamed. */
export const MAX_ACTIVE_REPLIES = 1000;
/** Turns remembered (finished, paused at a sequence number, or not this platform's), each set bounded. */
const REMEMBERED = 4096;
/** Longest one reply is followed; the gateway's own bound on a turn is ten minutes. */
const FOLLOW_TIMEOUT_MS = 15 * 60_000;
/** How far back a start looks for turns whose reply was never posted. */
export const CATCH_UP_MS = 60 * 60_000;
/** Most owed replies one start delivers. */
const CATCH_UP_LIMIT = 200;

/** The `source` of a platform message (Telegram, Slack…) in the ledger; its `channel` names the platform. */
export const PLATFORM_SOURCE: InboundSource = 'platform';

/** A bounded insertion-ordered memory: the oldest entry leaves first. */
class Bounded<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly limit: number) {}
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  has(key: string): boolean {
    return this.map.has(key);
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.limit) this.map.delete(this.map.keys().next().value!);
  }
  delete(key: string): void {
    this.map.delete(key);
  }
}

/** What the replies of one platform need. */
export interface PlatformRepliesOptions {
  platform: string;
  messages: Pick<MessagePath, 'follow' | 'turn' | 'tap'>;
  target: ReplyTarget;
  maxMessageLength: number;
  minIntervalMs: number;
  now: () => number;
  wait?: Wait;
  logger: Logger;
  /** Where delivered replies are recorded, so a start delivers the ones still owed (`catchUp`). */
  delivered?: DeliveredReplies;
  /** Told of every reply message posted (stats). */
  onReplied?: () => void;
  maxActive?: number;
}

/** How a reply ends: its last text, whether the turn paused, and the turn status it shows. */
interface Ending {
  text: string | null;
  paused: boolean;
  status: string;
}

/** The text a turn's end shows in the chat; `terminationReason` is known when the ledger told the end. */
function endText(status: string, content: string | null, terminationReason: string | null): string | null {
  const pause = pauseOf(status);
  if (pause === 'approval') {
    return `${content ? `${content}\n\n` : ''}A tool call waits for approval: an admin answers /approve or /deny.`;
  }
  if (pause === null && isInterruptedStatus(status)) {
    return terminationReason === 'process_restart' || content === null || content === ''
      ? `${content ? `${content}\n\n` : ''}[the reply was interrupted; please send the message again]`
      : `${content}\n\n[interrupted]`;
  }
  return content;
}

/** The text of a Message as a step carries it (null when there is none). */
function contentOf(message: object | null): string | null {
  const content = (message as { content?: unknown } | null)?.content;
  return typeof content === 'string' ? content : null;
}

/**
 * Delivers the replies of one platform's turns to their chats (DECISIONS
 * §16): every turn of a session the platform's messages started, whether
 * accepted just now, run again after a restart, or resumed after an
 * approval. One `ReplyStream` per turn follows it through the message path
 * (`follow`: stored events, then live ones) and edits one message as the
 * text grows. A turn is delivered once: finished turns are remembered, a
 * paused one resumes after the last event shown. Replays of a redelivered
 * message start nothing.
 */
export class PlatformReplies {
  private readonly active = new Map<string, { abort: AbortController; stream: ReplyStream | null }>();
  private readonly finished = new Bounded<true>(REMEMBERED);
  private readonly shownSeq = new Bounded<number>(REMEMBERED);
  private readonly notMine = new Bounded<true>(REMEMBERED);
  private readonly lookups = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private untap: (() => void) | null = null;
  private closed = false;
  private readonly sessionPrefix: string;

  constructor(private readonly options: PlatformRepliesOptions) {
    this.sessionPrefix = sessionKeyFor(options.platform, '');
  }

  /** Starts watching turn events for this platform's turns (call before the message path recovers turns). */
  open(): void {
    this.closed = false;
    this.untap ??= this.options.messages.tap((event) => this.onEvent(event));
  }

  /** Replies being streamed now. */
  get size(): number {
    return this.active.size;
  }

  /** Streams the reply of a turn just accepted from `chatId` (idempotent per turn). */
  deliver(eventId: string, chatId: string): void {
    if (this.closed || this.active.has(eventId) || this.finished.has(eventId)) return;
    if (this.active.size >= (this.options.maxActive ?? MAX_ACTIVE_REPLIES)) {
      this.options.logger.warn({ event_id: eventId }, 'too many replies streaming; this one is not delivered');
      return;
    }
    const entry = { abort: new AbortController(), stream: null as ReplyStream | null };
    this.active.set(eventId, entry);
    const run = this.stream(eventId, chatId, entry)
      .catch((err: unknown) =>
        this.options.logger.warn(
          { event_id: eventId, err: err instanceof Error ? err.message : String(err) },
          'reply delivery failed',
        ),
      )
      .finally(() => {
        this.active.delete(eventId);
        this.running.delete(run);
      });
    this.running.add(run);
  }

  /** Stops every reply where it is and stops watching (shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    this.untap?.();
    this.untap = null;
    for (const entry of this.active.values()) {
      entry.abort.abort();
      void entry.stream?.close();
    }
    await Promise.allSettled([...this.running]);
  }

  /**
   * Delivers the replies still owed: turns of this platform's chats that
   * settled or paused within the last hour without their reply being
   * recorded as posted (the process died in between). Resolves with how
   * many were found; their replies stream on in the background.
   */
  async catchUp(): Promise<number> {
    const delivered = this.options.delivered;
    if (!delivered || this.closed) return 0;
    const since = new Date(this.options.now() - CATCH_UP_MS).toISOString();
    const owed = await delivered.owed(since, CATCH_UP_LIMIT);
    for (const id of owed) this.lookUp(id);
    await delivered.prune(since);
    return owed.length;
  }

  /** A turn event of any session: a turn of this platform no reply follows yet is looked up once. */
  private onEvent(event: TurnEvent): void {
    this.lookUp(event.eventId);
  }

  /** Looks a turn up once and streams its reply when it is this platform's. */
  private lookUp(id: string): void {
    if (this.closed || this.active.has(id) || this.finished.has(id) || this.notMine.has(id)) return;
    if (this.lookups.has(id) || this.lookups.size >= REMEMBERED) return;
    this.lookups.add(id);
    this.options.messages.turn(id).then(
      (turn) => {
        this.lookups.delete(id);
        const chatId = turn ? this.chatOf(turn) : null;
        if (chatId === null) this.notMine.set(id, true);
        else this.deliver(id, chatId);
      },
      () => this.lookups.delete(id), // the store is down: a later event of the turn asks again
    );
  }

  /** The chat of a turn this platform's messages started, else null. */
  private chatOf(turn: TurnRecord): string | null {
    if (!turn.sessionKey.startsWith(this.sessionPrefix)) return null;
    const payload = turn.payload as { channel?: unknown; source?: unknown; chat_id?: unknown } | null;
    if (payload?.channel !== this.options.platform || payload.source !== PLATFORM_SOURCE) return null;
    return typeof payload.chat_id === 'string' ? payload.chat_id : null;
  }

  private async stream(
    eventId: string,
    chatId: string,
    entry: { abort: AbortController; stream: ReplyStream | null },
  ): Promise<void> {
    const { options } = this;
    const target: ReplyTarget = {
      send: async (chat, text) => {
        const posted = await options.target.send(chat, text);
        options.onReplied?.();
        return posted;
      },
      edit: (chat, messageId, text) => options.target.edit(chat, messageId, text),
    };
    const stream = new ReplyStream({
      target,
      chatId,
      maxMessageLength: options.maxMessageLength,
      minIntervalMs: options.minIntervalMs,
      now: options.now,
      ...(options.wait ? { wait: options.wait } : {}),
    });
    entry.stream = stream;
    const fromSeq = this.shownSeq.get(eventId) ?? 0;
    let ended: Ending | null = null;
    try {
      const steps = options.messages.follow(eventId, {
        fromSeq,
        endOnPause: true,
        timeoutMs: FOLLOW_TIMEOUT_MS,
        signal: entry.abort.signal,
      });
      for await (const step of steps) {
        ended = this.apply(step, stream, eventId);
        if (ended) break;
      }
    } finally {
      if (!ended) await stream.close();
    }
    if (!ended) return; // stopped or timed out: nothing more is shown
    if (ended.paused) this.finished.delete(eventId);
    else this.finished.set(eventId, true);
    await stream.finish(ended.text);
    await options.delivered?.delivered(eventId, ended.status).catch((err: unknown) => {
      // Unrecorded, the reply may be posted again after a restart: never lost, rarely twice.
      options.logger.warn(
        { event_id: eventId, err: err instanceof Error ? err.message : String(err) },
        'reply not recorded',
      );
    });
  }

  /** Applies one follow step to the reply; answers how it ends, or null while it goes on. */
  private apply(step: TurnStep, stream: ReplyStream, eventId: string): Ending | null {
    if (step.kind === 'timeout') return null;
    if (step.seq !== null) this.shownSeq.set(eventId, step.seq);
    switch (step.kind) {
      case 'delta':
        stream.append(step.content);
        return null;
      case 'tool_call':
      case 'tool_result':
      case 'status':
        return null;
      case 'paused':
        return { text: endText(step.status, contentOf(step.message), null), paused: true, status: step.status };
      case 'ended':
        if (step.error)
          return { text: `[the reply failed: ${step.error.message}]`, paused: false, status: step.status };
        return {
          text: endText(step.status, contentOf(step.message), step.terminationReason),
          paused: false,
          status: step.status,
        };
    }
  }
}
