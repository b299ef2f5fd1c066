/**
 * Where a turn's time goes, for the `Server-Timing` of the answer that waited
 * for it: moments on the process's monotonic clock (`performance.now()`),
 * marked by the intake, the queue and the runner, read once by the entry
 * point. Bounded: the oldest turns are forgotten first.
 */

/** The moments of one turn, each set once it happened. */
export interface TurnMarks {
  /** The acceptance committed (and durable, when it is acknowledged). */
  accepted?: number;
  /** Queued in its session's lane. */
  queued?: number;
  /** Its job started (a slot and its lane's turn). */
  started?: number;
  /** Claimed, durable, context loaded: the first model call starts. */
  claimed?: number;
  /** The agent loop (model calls, tools) ended. */
  answered?: number;
  /** The outcome committed and durable. */
  stored?: number;
}

/** Phase names of `Server-Timing`, in turn order. */
export const TURN_PHASES = ['accept', 'queue', 'claim', 'provider', 'persist', 'deliver'] as const;

const DEFAULT_CAPACITY = 2048;

/** The marks of turns in flight (bounded, oldest forgotten first). */
export class TurnTimings {
  readonly #marks = new Map<string, TurnMarks>();

  constructor(private readonly capacity = DEFAULT_CAPACITY) {}

  /**
   * Sets one moment of a turn (now, by default). Its acceptance starts the
   * turn's marks; a later moment of a turn without marks (found again at
   * start-up, or whose marks were already read by its acknowledgement) is
   * not kept: no answer will read it.
   */
  mark(eventId: string, moment: keyof TurnMarks, at = performance.now()): void {
    let marks = this.#marks.get(eventId);
    if (!marks) {
      if (moment !== 'accepted') return;
      if (this.#marks.size >= this.capacity) this.#marks.delete(this.#marks.keys().next().value!);
      marks = {};
      this.#marks.set(eventId, marks);
    }
    marks[moment] = at;
  }

  /** The turn's marks, forgotten once read. */
  take(eventId: string): TurnMarks | undefined {
    const marks = this.#marks.get(eventId);
    this.#marks.delete(eventId);
    return marks;
  }

  /** Turns with marks (tests). */
  get size(): number {
    return this.#marks.size;
  }
}

/**
 * The `Server-Timing` header value of an answer that arrived at `receivedAt`
 * and is written now: each phase whose two ends were marked, in ms, then
 * `total`. `accept` runs from the request to the acceptance; `deliver` from
 * the stored outcome to the answer.
 */
export function serverTimingHeader(marks: TurnMarks | undefined, receivedAt: number, now = performance.now()): string {
  let out = '';
  const phase = (name: string, from: number | undefined, to: number | undefined): void => {
    if (from !== undefined && to !== undefined && to >= from) out += `${name};dur=${(to - from).toFixed(3)}, `;
  };
  if (marks) {
    phase('accept', receivedAt, marks.accepted);
    phase('queue', marks.queued, marks.started);
    phase('claim', marks.started, marks.claimed);
    phase('provider', marks.claimed, marks.answered);
    phase('persist', marks.answered, marks.stored);
    phase('deliver', marks.stored, marks.stored === undefined ? undefined : now);
  }
  return `${out}total;dur=${(now - receivedAt).toFixed(3)}`;
}
