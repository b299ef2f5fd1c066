/**
 * What the payload tests build and measure: long histories written straight
 * into the store, and the process's memory sampled while work runs.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../src/store/index.js';

export const MiB = 1024 * 1024;

/** Rows a multi-row insert carries (ten columns each: well within SQLite's and PostgreSQL's parameter limits). */
const BATCH = 1_000;

/** A history `insertMessages` writes. */
export interface StoredHistory {
  sessionKey: string;
  contextEpoch: number;
  /** Messages, alternately the user's and the assistant's: `message <i>`, or a giant one. */
  count: number;
  /** Message `i`'s id is this prefix and `i` in eight digits, so ids sort by position. */
  idPrefix: string;
  /** Every `giantEvery`th message (the last of each run) is `giantBytes` of `g`. */
  giantEvery: number;
  giantBytes: number;
  createdAt: string;
}

/** Inserts a long history into `messages` in batches, behind the gateway's back. */
export async function insertMessages(db: Kysely<Database>, history: StoredHistory): Promise<void> {
  const giant = 'g'.repeat(history.giantBytes);
  for (let start = 0; start < history.count; start += BATCH) {
    const rows = [];
    for (let i = start; i < Math.min(history.count, start + BATCH); i++) {
      rows.push({
        id: `${history.idPrefix}${String(i).padStart(8, '0')}`,
        session_key: history.sessionKey,
        context_epoch: history.contextEpoch,
        role: i % 2 === 0 ? 'user' : 'assistant',
        content: i % history.giantEvery === history.giantEvery - 1 ? giant : `message ${i}`,
        tool_calls: null,
        tool_call_id: null,
        name: null,
        event_id: null,
        created_at: history.createdAt,
      });
    }
    await db.insertInto('messages').values(rows).execute();
  }
}

/** The highest heap and RSS seen while some work ran. */
export interface MemoryPeaks {
  heapUsed: number;
  rss: number;
}

/**
 * Runs `work` while sampling the process's memory every 5 ms; resolves to its
 * result and the peaks seen, which start at `base` (taken before the work).
 */
export async function withMemoryPeaks<T>(
  base: NodeJS.MemoryUsage,
  work: () => Promise<T>,
): Promise<{ result: T; peaks: MemoryPeaks }> {
  const peaks: MemoryPeaks = { heapUsed: base.heapUsed, rss: base.rss };
  const sampler = setInterval(() => {
    const now = process.memoryUsage();
    peaks.heapUsed = Math.max(peaks.heapUsed, now.heapUsed);
    peaks.rss = Math.max(peaks.rss, now.rss);
  }, 5);
  try {
    return { result: await work(), peaks };
  } finally {
    clearInterval(sampler);
  }
}
