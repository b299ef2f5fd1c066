import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { HASHED_EMBEDDINGS, fakeEmbedding, startFakeOpenAI, type FakeOpenAI } from '../../test/helpers/fake-openai.js';
import { createLogger } from '../logs/logger.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { chunkText } from './chunker.js';
import { createEmbeddingsClient } from './embeddings.js';
import type { Collection } from './index.js';
import { SearchEngine, type SearchEngineOptions } from './search.engine.js';

const logger = createLogger({ level: 'error', stdout: { write: () => undefined } });

/** Queries that must never throw, whatever FTS syntax they resemble. */
const HOSTILE_QUERIES = [
  '"',
  '""',
  '"unterminated',
  '*',
  'fox*',
  '* OR *',
  'OR',
  'AND OR NOT',
  'NEAR(fox dog, 2)',
  '-fox',
  'fox -dog',
  ':',
  'body:fox',
  '{body}: fox',
  '(',
  '())(()',
  '(fox OR',
  '^fox',
  "'; drop table search_chunks; --",
  "fox' | 'dog",
  '!fox & dog:*',
  '<->',
  '\\',
  '%_%',
  '🦊🐶',
  'ﬁ Ⅻ ①',
  '東京 タワー',
  'x'.repeat(1000),
  ' ',
  '',
];

/** The bucket of the fake embedding a word falls in. */
function bucketOf(word: string): number {
  const vector = fakeEmbedding(word);
  return vector.indexOf(Math.max(...vector));
}

/** `count` made-up words whose fake embedding is the bucket of `word` (so they look identical to it as vectors). */
function lookalikes(word: string, count: number): string[] {
  const bucket = bucketOf(word);
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) if (bucketOf(`kw${i}`) === bucket && `kw${i}` !== word) out.push(`kw${i}`);
  return out;
}

/** `count` made-up words in distinct buckets, none shared with `avoid`. */
function strangers(avoid: readonly string[], count: number): string[] {
  const used = new Set(avoid.map(bucketOf));
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const bucket = bucketOf(`zq${i}`);
    if (!used.has(bucket)) {
      used.add(bucket);
      out.push(`zq${i}`);
    }
  }
  return out;
}

describeBackends('search engine', (backend) => {
  let t: TestStore;
  let fake: FakeOpenAI;
  const engines: SearchEngine[] = [];

  // One database per backend (opening one costs its migrations); every test starts from an empty index.
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.alwaysEmbeddings(HASHED_EMBEDDINGS); // every embeddings call the test does not queue: hashed vectors
    t = await backend.open();
  });
  afterAll(async () => {
    await t.cleanup();
    await fake.close();
  });
  beforeEach(async () => {
    await t.store.db.deleteFrom('search_chunks').execute();
    if (backend.name === 'sqlite') {
      await sql`insert into memory_fts (memory_fts) values ('delete-all')`.execute(t.store.db);
      await sql`insert into knowledge_fts (knowledge_fts) values ('delete-all')`.execute(t.store.db);
    }
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
  });

  const engine = (options: Partial<SearchEngineOptions> = {}) => {
    const e = new SearchEngine({ store: t.store, embeddings: null, logger, backgroundEmbedding: false, ...options });
    engines.push(e);
    return e;
  };
  const withEmbeddings = (options: Partial<SearchEngineOptions> = {}) =>
    engine({
      embeddings: createEmbeddingsClient({ base_url: fake.url, api_key: null, model: 'fake-embed' }),
      ...options,
    });
  const index = async (e: SearchEngine, collection: Collection, docId: string, text: string) => {
    const doc = await e.prepare(chunkText(text));
    await t.store.writer.run((trx) => e.replace(trx, collection, docId, doc));
    e.written(doc);
    return doc;
  };
  const ranked = async (e: SearchEngine, query: string, collection: Collection = 'knowledge') =>
    (await e.search({ collection, query, candidates: 100 })).hits.map((h) => h.docId);

  const TOPICS: Record<string, string> = {
    solar:
      'Solar panels turn sunlight into electricity. Photovoltaic cells on the roof feed an inverter that powers the home.',
    bread: 'Baking bread needs flour, water, salt and yeast. Knead the dough, let it rise, then bake the loaf.',
    webhook:
      'The webhook channel verifies an HMAC signature over the raw body with the shared secret before accepting a request.',
    chess: 'In chess the knight moves in an L shape and the bishop moves diagonally across the board.',
    garden: 'Tomatoes grow best in full sun; water the garden in the morning and mulch the beds against weeds.',
  };

  describe('full text', () => {
    it('ranks the document about the query first', async () => {
      const e = engine();
      for (const [id, text] of Object.entries(TOPICS)) await index(e, 'knowledge', id, text);
      expect((await ranked(e, 'how do solar panels make electricity?'))[0]).toBe('solar');
      expect((await ranked(e, 'bread dough yeast'))[0]).toBe('bread');
      expect((await ranked(e, 'Which secret signs the webhook request?'))[0]).toBe('webhook');
      expect((await ranked(e, 'knight bishop'))[0]).toBe('chess');
      expect((await ranked(e, 'watering tomatoes in the garden'))[0]).toBe('garden');
      expect(await ranked(e, 'submarine')).toEqual([]);
    });

    it('scores in 0..1 best first, one hit per document with its best chunks', async () => {
      const e = engine();
      const long = Array.from({ length: 30 }, (_, i) =>
        i === 17
          ? 'The lighthouse keeper trims the lighthouse lamp.'
          : `Paragraph ${i} is about nothing in particular at all.`,
      ).join('\n\n');
      await index(e, 'knowledge', 'long', long.repeat(1));
      await index(e, 'knowledge', 'short', 'A lighthouse on the coast.');
      const { hits } = await e.search({
        collection: 'knowledge',
        query: 'lighthouse',
        candidates: 50,
        matchesPerDoc: 2,
      });
      expect(hits.map((h) => h.docId).sort()).toEqual(['long', 'short']);
      expect(hits[0]!.score).toBe(1);
      for (const hit of hits) {
        expect(hit.score).toBeGreaterThan(0);
        expect(hit.score).toBeLessThanOrEqual(1);
        expect(hit.matches.length).toBeGreaterThan(0);
        expect(hit.matches.length).toBeLessThanOrEqual(2);
        expect(hit.matches[0]!.score).toBe(hit.score);
      }
      const longHit = hits.find((h) => h.docId === 'long')!;
      const texts = await e.chunkTexts(longHit.matches.map((m) => m.id));
      expect(texts.get(longHit.matches[0]!.id)).toContain('lighthouse keeper');
    });

    it('matches folded diacritics, case and CJK characters', async () => {
      const e = engine();
      await index(e, 'knowledge', 'cafe', 'Le CAFÉ de la gare sert des crêpes.');
      await index(e, 'knowledge', 'tokyo', '東京タワーは高い。');
      await index(e, 'knowledge', 'other', 'Nothing to see here.');
      expect(await ranked(e, 'cafe crepes')).toEqual(['cafe']);
      expect(await ranked(e, 'Café')).toEqual(['cafe']);
      expect(await ranked(e, '東京')).toEqual(['tokyo']);
    });

    it('replace reindexes a document and remove takes it out of the index', async () => {
      const e = engine();
      await index(e, 'knowledge', 'a', 'alpha particles');
      await index(e, 'knowledge', 'b', 'beta particles');
      expect((await ranked(e, 'particles')).sort()).toEqual(['a', 'b']);

      await index(e, 'knowledge', 'a', 'gamma rays');
      expect(await ranked(e, 'alpha')).toEqual([]);
      expect(await ranked(e, 'gamma')).toEqual(['a']);
      expect(await ranked(e, 'particles')).toEqual(['b']);

      await t.store.writer.run((trx) => e.remove(trx, 'knowledge', 'b'));
      expect(await ranked(e, 'particles')).toEqual([]);
      const left = await t.store.db.selectFrom('search_chunks').select('doc_id').execute();
      expect(left.map((r) => r.doc_id)).toEqual(['a']);
    });

    it('keeps collections apart and honours the allowed-documents filter', async () => {
      const e = engine();
      await index(e, 'knowledge', 'd1', 'shared word');
      await index(e, 'knowledge', 'd2', 'shared word too');
      await index(e, 'memory', 'd1', 'shared word elsewhere');
      expect((await ranked(e, 'shared', 'knowledge')).sort()).toEqual(['d1', 'd2']);
      expect(await ranked(e, 'shared', 'memory')).toEqual(['d1']);
      const allowed = t.store.db
        .selectFrom('search_chunks')
        .select('doc_id as id')
        .where('doc_id', '=', 'd2')
        .where('collection', '=', 'knowledge');
      const { hits } = await e.search({ collection: 'knowledge', query: 'shared', candidates: 10, allowed });
      expect(hits.map((h) => h.docId)).toEqual(['d2']);
    });

    it('bounds its cost: frequent terms act as stop words, and an all-frequent query ranks only recent matches', async () => {
      const e = engine({ textMatchBudget: 4, recentWindow: 3 });
      for (let i = 0; i < 8; i++) await index(e, 'knowledge', `common${i}`, `everywhere filler number ${i}`);
      await index(e, 'knowledge', 'rare1', 'everywhere unusual');
      await index(e, 'knowledge', 'rare2', 'unusual words');
      // "everywhere" (9 matches) is over the budget: only "unusual" is ranked.
      expect((await ranked(e, 'everywhere unusual')).sort()).toEqual(['rare1', 'rare2']);
      // Only over-budget terms: the newest 3 matches of the rarest one are ranked.
      expect((await ranked(e, 'everywhere')).sort()).toEqual(['common6', 'common7', 'rare1']);
      // Within the budget every term counts.
      const roomy = engine();
      expect(await ranked(roomy, 'everywhere unusual')).toHaveLength(10);
    });

    it('never throws on hostile query strings', async () => {
      const e = engine();
      await index(e, 'knowledge', 'fox', 'The quick brown fox jumps over the lazy dog. Body: 東京 ①');
      for (const query of HOSTILE_QUERIES) {
        const result = await e.search({ collection: 'knowledge', query, candidates: 10 });
        expect(Array.isArray(result.hits)).toBe(true);
      }
      expect(await ranked(e, '(fox OR')).toEqual(['fox']);
      expect(await ranked(e, 'body:fox')).toEqual(['fox']);
    });
  });

  describe('with embeddings', () => {
    it('vector similarity changes the ranking and finds documents sharing no word with the query', async () => {
      const [f1, f2] = strangers(['pasta'], 2);
      const [c1, c2, c3, c4, c5] = lookalikes('pasta', 5);
      const texts = {
        t1: `pasta ${f1} ${f2}`, // shorter: best by full text, but only 0.58 similar
        t2: `pasta ${c1} ${c2} ${c3}`, // longer, but its vector equals the query's
        v: `${c4} ${c5}`, // no shared word, same vector
      };
      const plain = engine();
      for (const [id, text] of Object.entries(texts)) await index(plain, 'knowledge', id, text);
      expect(await ranked(plain, 'pasta')).toEqual(['t1', 't2']);

      const hybrid = withEmbeddings();
      for (const [id, text] of Object.entries(texts)) await index(hybrid, 'memory', id, text);
      const result = await hybrid.search({ collection: 'memory', query: 'pasta', candidates: 100 });
      expect(result.usedVectors).toBe(true);
      expect(result.hits.map((h) => h.docId)).toEqual(['t2', 't1', 'v']);
      const v = result.hits[2]!;
      expect(v.score).toBeCloseTo(0.5, 3);
    });

    it('indexes by full text when embedding fails, and fills the vectors in later', async () => {
      const e = withEmbeddings();
      fake.enqueueEmbeddings({ status: 503 });
      const doc = await index(e, 'knowledge', 'solar', TOPICS.solar!);
      expect(doc.vectors).toEqual([null]);
      const pending = await t.store.db
        .selectFrom('search_chunks')
        .select(['embedding', 'embedding_model'])
        .executeTakeFirstOrThrow();
      expect(pending).toEqual({ embedding: null, embedding_model: null });
      expect(await ranked(e, 'photovoltaic')).toEqual(['solar']);

      fake.enqueueEmbeddings({ status: 500 });
      await expect(e.embedPending()).rejects.toThrow(/HTTP 500/);
      expect(await e.embedPending()).toBe(1);
      const filled = await t.store.db.selectFrom('search_chunks').select('embedding_model').executeTakeFirstOrThrow();
      expect(filled.embedding_model).toBe('fake-embed');
      expect(await e.embedPending()).toBe(0);
    });

    it('embeds in the background after a failed write, with retries', async () => {
      const e = withEmbeddings({ backgroundEmbedding: true, retryMs: 20 });
      fake.enqueueEmbeddings({ status: 500 }, { status: 500 });
      await index(e, 'knowledge', 'bread', TOPICS.bread!);
      await vi.waitFor(
        async () => {
          const row = await t.store.db.selectFrom('search_chunks').select('embedding_model').executeTakeFirstOrThrow();
          expect(row.embedding_model).toBe('fake-embed');
        },
        { timeout: 3000, interval: 20 },
      );
    });

    it('falls back to full text when the query cannot be embedded', async () => {
      const e = withEmbeddings();
      for (const [id, text] of Object.entries(TOPICS)) await index(e, 'knowledge', id, text);
      fake.enqueueEmbeddings({ status: 500 });
      const result = await e.search({ collection: 'knowledge', query: 'knight moves', candidates: 10 });
      expect(result.usedVectors).toBe(false);
      expect(result.hits[0]!.docId).toBe('chess');
      expect(result.hits[0]!.score).toBe(1);
    });

    it('marks chunks the provider refuses instead of retrying them forever', async () => {
      const e = withEmbeddings({ inlineEmbedMaxChunks: 0 });
      await index(e, 'knowledge', 'a', 'first document');
      await index(e, 'knowledge', 'b', 'second document');
      fake.enqueueEmbeddings({ status: 400 }, { status: 400 });
      expect(await e.embedPending()).toBe(2);
      const rows = await t.store.db
        .selectFrom('search_chunks')
        .select(['doc_id', 'embedding_model'])
        .orderBy('doc_id')
        .execute();
      expect(rows).toEqual([
        { doc_id: 'a', embedding_model: '' },
        { doc_id: 'b', embedding_model: 'fake-embed' },
      ]);
      expect(await e.embedPending()).toBe(0);
    });

    it('forgets vectors of another model and embeds again with the configured one', async () => {
      const old = engine({
        embeddings: createEmbeddingsClient({ base_url: fake.url, api_key: null, model: 'old-model' }),
      });
      await index(old, 'knowledge', 'a', 'some text');
      const e = withEmbeddings();
      expect(await e.embedPending()).toBe(1);
      const row = await t.store.db.selectFrom('search_chunks').select('embedding_model').executeTakeFirstOrThrow();
      expect(row.embedding_model).toBe('fake-embed');
    });

    it('never throws on hostile query strings', async () => {
      const e = withEmbeddings();
      await index(e, 'knowledge', 'fox', 'The quick brown fox');
      for (const query of HOSTILE_QUERIES) await e.search({ collection: 'knowledge', query, candidates: 10 });
    });
  });
});
