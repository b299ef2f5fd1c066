/**
 * The claim of a turn (ADR 0005, 0026, 0029): `accepted → running` in one commit with the user's message and the
 * turn's first event, after the checks that keep a session's turns one at a time and in order (behind a turn
 * awaiting approval; across processes, the session's lock and busy check). The claim decides what the turn is —
 * a chat command, the answer to a turn awaiting clarification, or a message for the agent — and the store's
 * `TurnPath` runs its statements. A claim that fails unconfirmed is checked against the ledger on its retry.
 */
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { DEFAULT_CONTEXT_BUDGET, type ContextBudget, type SizedEntry } from '../sessions/index.js';
import type { Store } from '../store/index.js';
import type { ContextCache } from './context-cache.js';
import type { InboundPayload } from './inbound.js';
import { commandOf, type ChatCommand, type CommandCall } from './turn-commands.js';
import { isStoreUnavailable } from './turn-finish.js';
import type { ClaimTaken, TurnPath } from './turn-path.js';
import { claimedUserMessage, getTurn, resumeTurn, type TurnRecord } from './turns.repo.js';

/** What a claim decided a turn is: a chat command, a clarification answer, or a message for the agent. */
export type ClaimedStep =
  | { kind: 'command'; claimed: TurnRecord; command: CommandCall }
  | { kind: 'answer'; claimed: TurnRecord; resumed: TurnRecord; pending: unknown }
  | {
      kind: 'message';
      claimed: TurnRecord;
      epoch: number;
      /**
       * The claim's own transaction stored the turn's first event (`status`
       * running, number 1): it is only delivered. False once delivered, and for
       * a claim taken over from the ledger (its events are counted there).
       */
      statusStored: boolean;
      /** The context window the claim read with its writes (PostgreSQL, ADR 0032): the first model call's. */
      window?: SizedEntry[];
      /** The user's message is the first of the session's life (`ClaimRecorded.first`). */
      first?: boolean;
    }
  /** A claim whose commit went unconfirmed and whose step cannot be rebuilt from the ledger. */
  | { kind: 'lost'; claimed: TurnRecord };

/** What claiming uses (the runner's options). */
export interface TurnClaimDeps {
  store: Store;
  path: TurnPath;
  contextCache?: ContextCache;
  clock: Clock;
  ids: IdGenerator;
  /** This process's instance id: the claimed turn's `owner`. */
  owner: string;
  /** Extra chat commands, by name without the slash. */
  commands?: Record<string, ChatCommand>;
  /** The model's context as a token budget (`limits.payloads`); default: its defaults. */
  contextBudget?: ContextBudget;
  /** Told when a turn could not start because its session is busy in another process (ADR 0029). */
  onSessionBusy?: (sessionKey: string, why: 'claiming' | 'elsewhere') => void;
}

/**
 * The `status` event of a turn that starts or resumes running. A paused turn resumed by a person's decision says
 * which (`approve`, `deny`, `answer`), so every client following it — the one that decided or any other — can tell
 * what became of the pause without asking.
 */
export function runningStatus(resolution?: 'approve' | 'deny' | 'answer'): Record<string, unknown> {
  return resolution === undefined ? { status: 'running' } : { status: 'running', resolution };
}

/** Claims accepted turns for one runner, remembering the claims whose commit went unconfirmed. */
export class TurnClaimer {
  /** Turns whose claim failed without knowing whether it committed: the retry checks the ledger. */
  private readonly unconfirmed = new Set<string>();

  constructor(private readonly deps: TurnClaimDeps) {}

  /**
   * The approval check and the claim: accepted→running with the user's message
   * stored, in one transaction. Null when the turn is not this runner's to
   * run; 'blocked' when it waits in its lane (behind a turn awaiting approval,
   * or its session busy in another process). A claim that fails is marked
   * unconfirmed: the retry finds out from the ledger whether it committed, and
   * takes it over if so.
   */
  async claim(
    sessionKey: string,
    eventId: string,
    hints: { newSession?: boolean } = {},
  ): Promise<ClaimedStep | 'blocked' | null> {
    const { store, owner } = this.deps;
    const unconfirmed = this.unconfirmed.has(eventId);
    const newSession = hints.newSession === true;
    const attempt = this.deps.path.claim({ sessionKey, eventId, owner, unconfirmed, newSession });
    const ready = await attempt.prepare();
    if (ready !== 'ready') return ready;
    const now = isoTime(this.deps.clock.now());
    const userMessageId = this.deps.ids.next('msg');
    // Where durability is a flush apart (SQLite), committed without it: `runTurn` syncs before any effect,
    // reading the conversation meanwhile. Elsewhere (PostgreSQL) the claim's commit is durable itself.
    let step: ClaimedStep | Exclude<ClaimTaken, object>;
    try {
      step = await store.writer.run(
        async (trx): Promise<ClaimedStep | Exclude<ClaimTaken, object>> => {
          const taken = await attempt.take(trx, now);
          if (taken === null || typeof taken === 'string') return taken;
          const { claimed, clarification } = taken;
          if (!claimed && unconfirmed) {
            // The earlier claim did commit if the turn runs under this owner and nothing runs it.
            const turn = await getTurn(trx, eventId);
            if (!turn || turn.status !== 'running' || turn.owner !== owner) return null;
            const command = commandOf((turn.payload as InboundPayload).text, this.deps.commands);
            if (command) return { kind: 'command', claimed: turn, command };
            const message = await claimedUserMessage(trx, sessionKey, eventId);
            return message
              ? { kind: 'message', claimed: turn, epoch: message.contextEpoch, statusStored: false }
              : { kind: 'lost', claimed: turn };
          }
          if (!claimed) return null;
          const payload = claimed.payload as InboundPayload;
          const command = commandOf(payload.text, this.deps.commands);
          if (command) return { kind: 'command', claimed, command };
          if (clarification && clarification.eventId !== claimed.eventId) {
            // The session's next message answers the question and resumes that turn (DECISIONS §5).
            const resumed = await resumeTurn(trx, clarification.eventId, { from: 'waiting_clarification', owner, now });
            if (resumed) return { kind: 'answer', claimed, resumed, pending: resumed.pending ?? clarification.pending };
          }
          const message = {
            id: userMessageId,
            sessionKey,
            role: 'user' as const,
            content: payload.text,
            toolCalls: null,
            toolCallId: null,
            name: null,
            eventId: claimed.eventId,
            createdAt: now,
          };
          // The turn's first event rides on its claim (delivered once committed; see `TurnRunner.execute`).
          const event = { type: 'status', data: runningStatus() };
          const recorded = await attempt.record(trx, {
            message,
            event,
            channel: payload.channel,
            window: this.deps.contextBudget ?? DEFAULT_CONTEXT_BUDGET,
          });
          const window = recorded.window ? { window: recorded.window } : {};
          const first = recorded.first ? { first: true } : {};
          return { kind: 'message', claimed, epoch: recorded.epoch, statusStored: true, ...window, ...first };
        },
        { durable: !store.writer.syncsApart },
      );
    } catch (err) {
      this.deps.contextCache?.forget(sessionKey);
      if (isStoreUnavailable(err)) this.unconfirmed.add(eventId);
      throw err;
    }
    this.unconfirmed.delete(eventId);
    if (step === 'approval') return 'blocked';
    if (step === 'claiming' || step === 'elsewhere') {
      this.deps.onSessionBusy?.(sessionKey, step);
      return 'blocked';
    }
    if (step?.kind === 'message' && step.statusStored) {
      const text = (step.claimed.payload as InboundPayload).text;
      // The session's first message: the epoch's window is that message alone, known without reading it.
      if (step.first) this.deps.contextCache?.set(sessionKey, step.epoch, []);
      this.deps.contextCache?.append(sessionKey, step.epoch, [
        { role: 'user', content: text, toolCalls: null, toolCallId: null, name: null },
      ]);
    } else if (step) {
      this.deps.contextCache?.forget(sessionKey);
    }
    return step;
  }
}
