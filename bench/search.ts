import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KnowledgeService } from '../src/knowledge/index.js';
import { systemClock } from '../src/lib/clock.js';
import { createIdGenerator } from '../src/lib/ids.js';
import { createLogger } from '../src/logs/logger.js';
import { SearchEngine } from '../src/search/index.js';
import { openStore } from '../src/store/index.js';
import { jsonTarget, record, report, takeHandoff, writeJson } from './figures.js';

/**
 * `node dist/bench/search.js`: full-text search latency of the knowledge
 * base at scale. Fills a temporary SQLite store with about 100 000 chunks of
 * generated text through the real write path (KnowledgeService.create,
 * group-committed, several documents in flight), then times queries through
 * the engine (ranking only) and through the service (ranking + entries +
 * snippets, what GET /knowledge?query= does). A report, not a test: it exits
 * 0 whether the target is met or not, non-zero only when the run breaks.
 *
 * Knobs: BENCH_SEARCH_CHUNKS (default 100000), BENCH_SEARCH_QUERIES (200).
 * `--json <file>` writes its figure, together with those the main bench left
 * for it when both run from `npm run bench -- --json <file>`.
 */

const TARGET_P50_MS = 10;

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
}

const CHUNKS = envInt('BENCH_SEARCH_CHUNKS', 100_000);
const QUERIES = envInt('BENCH_SEARCH_QUERIES', 200);
const WARMUP = 20;
const VOCABULARY = 30_000;
const DOC_PARAGRAPHS = 120;

/** Deterministic PRNG (mulberry32), so every run indexes the same corpus. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = prng(42);
const SYLLABLES = 'ka lo mi ne ru ta vi so pe da gu fi ro be ze nu ly ho wa ce'.split(' ');
const STOP = 'the of and to in is that for it with as on be at by this from or an are'.split(' ');

/** Made-up words, distinct, 2–4 syllables. */
const words: string[] = [];
{
  const seen = new Set<string>();
  while (words.length < VOCABULARY) {
    let word = '';
    const syllables = 2 + Math.floor(random() * 3);
    for (let i = 0; i < syllables; i++) word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    if (!seen.has(word)) {
      seen.add(word);
      words.push(word);
    }
  }
}

/** A word drawn with Zipf-like frequencies (rank r ∝ 1/r), as in natural text. */
function zipfWord(): string {
  const rank = Math.floor(Math.exp(random() * Math.log(VOCABULARY + 1))) - 1;
  return words[Math.min(rank, VOCABULARY - 1)]!;
}

function sentence(): string {
  const length = 8 + Math.floor(random() * 13);
  const parts: string[] = [];
  for (let i = 0; i < length; i++) parts.push(random() < 0.3 ? STOP[Math.floor(random() * STOP.length)]! : zipfWord());
  const text = parts.join(' ');
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

function documentText(): string {
  const paragraphs: string[] = [];
  for (let p = 0; p < DOC_PARAGRAPHS; p++) {
    const sentences: string[] = [];
    const count = 3 + Math.floor(random() * 4);
    for (let s = 0; s < count; s++) sentences.push(sentence());
    paragraphs.push(sentences.join(' '));
  }
  return paragraphs.join('\n\n');
}

/** Queries like users type: 2–4 content words (half common, half specific), sometimes with stop words. */
function query(): string {
  const parts: string[] = [];
  const count = 2 + Math.floor(random() * 3);
  for (let i = 0; i < count; i++) {
    parts.push(random() < 0.5 ? zipfWord() : words[Math.floor(random() * VOCABULARY)]!);
  }
  if (random() < 0.3) parts.unshift('how', 'to');
  return parts.join(' ');
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(label: string, samples: number[]): { p50: number; p95: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p95 = percentile(sorted, 95);
  const fmt = (x: number) => x.toFixed(2).padStart(8);
  console.log(
    `${label.padEnd(34)} p50 ${fmt(p50)} ms   p95 ${fmt(p95)} ms   p99 ${fmt(percentile(sorted, 99))} ms   max ${fmt(sorted.at(-1) ?? 0)} ms`,
  );
  return { p50, p95 };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-search-bench-'));
  const logger = createLogger({ level: 'error', stdout: { write: () => undefined } });
  const store = await openStore({ driver: 'sqlite', dataDir });
  const search = new SearchEngine({ store, embeddings: null, logger, backgroundEmbedding: false });
  const knowledge = new KnowledgeService({ store, clock: systemClock, ids: createIdGenerator(systemClock), search });
  try {
    console.error(`bench: indexing ~${CHUNKS} chunks into ${dataDir} …`);
    let indexMs = 0;
    let chunks = 0;
    let documents = 0;
    let bytes = 0;
    while (chunks < CHUNKS) {
      // Several documents in flight: the group-commit writer batches their transactions.
      const batch = Array.from({ length: 8 }, documentText);
      const started = performance.now();
      const created = await Promise.all(
        batch.map((content, i) =>
          knowledge.create({ title: `Document ${documents + i}`, content, source: 'bench', metadata: { n: i } }),
        ),
      );
      indexMs += performance.now() - started;
      for (const record of created) {
        chunks += record.chunkCount;
        bytes += record.sizeBytes;
      }
      documents += created.length;
    }
    const indexSeconds = indexMs / 1000;
    const dbBytes = statSync(join(dataDir, 'gatehouse.db')).size + statSync(join(dataDir, 'gatehouse.db-wal')).size;
    console.log('Search benchmark (SQLite, full text; embeddings off)');
    console.log(
      `corpus: ${chunks} chunks in ${documents} documents, ${(bytes / 1024 / 1024).toFixed(1)} MiB of text, ` +
        `database ${(dbBytes / 1024 / 1024).toFixed(0)} MiB`,
    );
    console.log(
      `indexing (chunk, tokenize, write; text generation excluded): ${indexSeconds.toFixed(1)} s ` +
        `(${Math.round(chunks / indexSeconds)} chunks/s, ` +
        `${(bytes / 1024 / 1024 / indexSeconds).toFixed(1)} MiB/s)`,
    );

    const queries = Array.from({ length: QUERIES + WARMUP }, query);
    const engineMs: number[] = [];
    const serviceMs: number[] = [];
    let hits = 0;
    for (const [i, text] of queries.entries()) {
      const t0 = performance.now();
      const result = await search.search({ collection: 'knowledge', query: text, candidates: 200 });
      const t1 = performance.now();
      const list = await knowledge.list({ query: text, limit: 10 });
      const t2 = performance.now();
      if (i < WARMUP) continue;
      engineMs.push(t1 - t0);
      serviceMs.push(t2 - t1);
      if (result.hits.length > 0 && list.items.length > 0) hits++;
    }
    console.log(
      `queries: ${QUERIES} (after ${WARMUP} warm-up), ${hits} with results; e.g. ${JSON.stringify(queries[WARMUP])}`,
    );
    summary('engine.search (ranking only)', engineMs);
    const { p50 } = summary('GET /knowledge?query= service path', serviceMs);
    console.log(`target: p50 ≤ ${TARGET_P50_MS} ms → ${p50 <= TARGET_P50_MS ? 'met' : 'NOT met'} (service path)`);
    record({
      id: 'search.knowledge.p50_ms',
      backend: 'sqlite',
      label: 'GET /knowledge?query= service path, p50',
      value: p50,
      unit: 'ms',
      target: { op: '<=', value: TARGET_P50_MS },
    });
    writeReport(startedAt);
  } finally {
    await search.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** With `--json <file>`: the main bench's figures (when it ran just before from the same script) and this one's. */
function writeReport(startedAt: Date): void {
  const main = takeHandoff();
  const file = jsonTarget(process.argv.slice(2));
  if (!file) return;
  const own = report(startedAt, { chunks: CHUNKS, queries: QUERIES });
  const merged = main ? { ...main, finished_at: own.finished_at, figures: [...main.figures, ...own.figures] } : own;
  writeJson(file, merged);
  console.log(
    `figures written to ${file} (${merged.figures.length} figures${main ? ', the main bench’s included' : ''})`,
  );
}

main().catch((error: unknown) => {
  console.error('bench: search benchmark failed:', error);
  process.exitCode = 1;
});
