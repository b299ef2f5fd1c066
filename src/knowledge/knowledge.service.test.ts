import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import { createLogger } from '../logs/logger.js';
import { EmbeddingsError, SearchEngine } from '../search/index.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { KNOWLEDGE_COLLECTION, KnowledgeService } from './knowledge.service.js';

const logger = createLogger({ level: 'error', stdout: { write: () => undefined } });
const START = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

/** A document of `paragraphs` filler paragraphs with `special` as paragraph number `at`. */
function longDocument(paragraphs: number, special: string, at: number): string {
  return Array.from({ length: paragraphs }, (_, i) =>
    i === at
      ? special
      : `Paragraph ${i} describes routine operations of the gateway, its configuration files and its logs in general terms.`,
  ).join('\n\n');
}

describeBackends('knowledge service', (backend) => {
  let t: TestStore;
  let clock: ManualClock;
  let search: SearchEngine;
  let knowledge: KnowledgeService;

  beforeAll(async () => {
    t = await backend.open();
  });
  afterAll(async () => {
    await t.cleanup();
  });
  beforeEach(async () => {
    const db = t.store.db;
    await db.deleteFrom('knowledge_metadata').execute();
    await db.deleteFrom('knowledge').execute();
    await db.deleteFrom('search_chunks').execute();
    if (backend.name === 'sqlite') {
      await sql`insert into memory_fts (memory_fts) values ('delete-all')`.execute(db);
      await sql`insert into knowledge_fts (knowledge_fts) values ('delete-all')`.execute(db);
    }
    clock = new ManualClock(START);
    search = new SearchEngine({ store: t.store, logger, embeddings: null, backgroundEmbedding: false });
    knowledge = new KnowledgeService({ store: t.store, clock, ids: createIdGenerator(clock), search });
  });
  afterEach(async () => {
    await search.close();
  });

  const add = async (title: string, content: string, source = 'docs', metadata: Record<string, unknown> = {}) => {
    const record = await knowledge.create({ title, content, source, metadata });
    clock.advance(1000);
    return record;
  };

  it('chunks and indexes a document: chunk_count, size_bytes in UTF-8, timestamps', async () => {
    const content = longDocument(40, 'The rotation procedure for the signing key is described here.', 25);
    const record = await add('Ops handbook', `${content}\n\nÜber café ☕`, 'file:///ops.md', { team: 'ops' });
    expect(record.id).toMatch(/^kn_/);
    expect(record.chunkCount).toBeGreaterThan(3);
    expect(record.sizeBytes).toBe(Buffer.byteLength(`${content}\n\nÜber café ☕`, 'utf8'));
    expect(record.indexedAt).toBe(new Date(START).toISOString());
    expect(await knowledge.get(record.id)).toEqual(record);
    const chunks = await t.store.db
      .selectFrom('search_chunks')
      .select(['chunk'])
      .where('collection', '=', KNOWLEDGE_COLLECTION)
      .where('doc_id', '=', record.id)
      .orderBy('chunk')
      .execute();
    expect(chunks.map((c) => c.chunk)).toEqual(Array.from({ length: record.chunkCount }, (_, i) => i));
  });

  it('ranks the document about the query first, with its best chunk as the first match', async () => {
    const keyDoc = await add('Key rotation', longDocument(30, 'To rotate the signing key, generate a new secret.', 12));
    await add('Baking', 'Flour, water, yeast and salt make bread. Knead and bake the dough.');
    await add('Chess', 'The knight moves in an L shape; the bishop moves diagonally.');
    const { items, terms } = await knowledge.list({ query: 'how do I rotate the signing key?', limit: 10 });
    expect(terms).toEqual(['rotate', 'signing', 'key']);
    expect(items[0]!.record.id).toBe(keyDoc.id);
    expect(items[0]!.score).toBe(1);
    const best = items[0]!.matches![0]!;
    expect(best.text).toContain('rotate the signing key');
    expect(items[0]!.matches!.length).toBeLessThanOrEqual(3);
    expect((await knowledge.list({ query: 'bishop', limit: 10 })).items.map((i) => i.record.title)).toEqual(['Chess']);
  });

  it('filters by source and metadata equalities, with and without a query; limit bounds the items', async () => {
    await add('A', 'alpha guide text', 'wiki', { lang: 'en', version: 2, tags: ['x', 'y'] });
    await add('B', 'alpha guide texte', 'wiki', { lang: 'fr', version: 2 });
    await add('C', 'alpha guide text', 'file', { lang: 'en', nested: { b: 1, a: [1, 2] } });
    const titles = async (query: Parameters<KnowledgeService['list']>[0]) =>
      (await knowledge.list(query)).items.map((i) => i.record.title);
    expect(await titles({ limit: 10 })).toEqual(['C', 'B', 'A']);
    expect(await titles({ limit: 2 })).toEqual(['C', 'B']);
    expect(await titles({ source: 'wiki', limit: 10 })).toEqual(['B', 'A']);
    expect(await titles({ metadata: { lang: 'en' }, limit: 10 })).toEqual(['C', 'A']);
    expect(await titles({ metadata: { lang: 'en', version: 2 }, limit: 10 })).toEqual(['A']);
    expect(await titles({ metadata: { tags: ['x', 'y'] }, limit: 10 })).toEqual(['A']);
    expect(await titles({ metadata: { nested: { a: [1, 2], b: 1 } }, limit: 10 })).toEqual(['C']);
    expect(await titles({ metadata: { version: '2' }, limit: 10 })).toEqual([]);
    expect(await titles({ metadata: {}, source: 'file', limit: 10 })).toEqual(['C']);
    expect((await titles({ query: 'alpha', source: 'wiki', limit: 10 })).sort()).toEqual(['A', 'B']);
    expect(await titles({ query: 'alpha', metadata: { lang: 'fr' }, limit: 10 })).toEqual(['B']);
    expect(await titles({ query: 'alpha', limit: 1 })).toHaveLength(1);
  });

  it('delete removes the document and its chunks from the index', async () => {
    const doc = await add('Temp', 'ephemeral content about comets');
    expect(await knowledge.remove(doc.id)).toBe(true);
    expect(await knowledge.remove(doc.id)).toBe(false);
    expect(await knowledge.get(doc.id)).toBeNull();
    expect((await knowledge.list({ query: 'comets', limit: 5 })).items).toEqual([]);
    const left = await t.store.db.selectFrom('search_chunks').select('id').execute();
    expect(left).toEqual([]);
  });

  it('reindex rebuilds the chunks from the stored text and moves indexed_at', async () => {
    const doc = await add('Guide', longDocument(20, 'Unique marker: zebra crossing.', 5));
    const before = await t.store.db.selectFrom('search_chunks').select('id').execute();
    clock.advance(60_000);
    const again = await knowledge.reindex(doc.id);
    expect(again).toMatchObject({ id: doc.id, chunkCount: doc.chunkCount, createdAt: doc.createdAt });
    expect(again!.indexedAt).toBe(new Date(clock.now()).toISOString());
    const after = await t.store.db.selectFrom('search_chunks').select('id').execute();
    expect(after).toHaveLength(before.length);
    expect(after.some((row) => before.some((b) => b.id === row.id))).toBe(false);
    expect((await knowledge.list({ query: 'zebra', limit: 5 })).items[0]!.record.id).toBe(doc.id);
    expect(await knowledge.reindex('kn_missing')).toBeNull();
  });

  it('never throws on hostile queries', async () => {
    await add('Doc', 'Some text (with parentheses) and "quotes" and a-hyphen: colon.');
    for (const query of ['"', '*', 'OR', '-', ':', '(', ')', 'a-hyphen', 'colon:', '"quotes"', '東京', '\u0301']) {
      await knowledge.list({ query, limit: 5 });
    }
    expect((await knowledge.list({ query: '(parentheses', limit: 5 })).items).toHaveLength(1);
  });
});

describeBackends('knowledge service: embedding state', (backend) => {
  let t: TestStore;
  let search: SearchEngine;
  let knowledge: KnowledgeService;
  /** Texts holding REFUSE are refused (HTTP 400); with `down`, every call fails (HTTP 503). */
  const client = {
    model: 'stub-embed',
    down: false,
    embed(texts: readonly string[]): Promise<Float32Array[]> {
      if (client.down)
        return Promise.reject(new EmbeddingsError('embeddings request failed: HTTP 503', { status: 503 }));
      if (texts.some((text) => text.includes('REFUSE'))) {
        return Promise.reject(new EmbeddingsError('embeddings request failed: HTTP 400', { status: 400 }));
      }
      return Promise.resolve(texts.map(() => Float32Array.from([1, 0, 0])));
    },
  };

  beforeAll(async () => {
    t = await backend.open();
  });
  afterAll(async () => {
    await t.cleanup();
  });
  beforeEach(async () => {
    const db = t.store.db;
    await db.deleteFrom('knowledge_metadata').execute();
    await db.deleteFrom('knowledge').execute();
    await db.deleteFrom('search_chunks').execute();
    if (backend.name === 'sqlite')
      await sql`insert into knowledge_fts (knowledge_fts) values ('delete-all')`.execute(db);
    client.down = false;
    const clock = new ManualClock(START);
    search = new SearchEngine({ store: t.store, logger, embeddings: client, backgroundEmbedding: false });
    knowledge = new KnowledgeService({ store: t.store, clock, ids: createIdGenerator(clock), search });
  });
  afterEach(async () => {
    await search.close();
  });

  it('pending while chunks wait for vectors, ready once every chunk has one, in get, list and search', async () => {
    client.down = true;
    const doc = await knowledge.create({
      title: 'Guide',
      content: longDocument(30, 'The zebra crossing is marked here.', 7),
      source: 'docs',
    });
    expect(doc.chunkCount).toBeGreaterThan(1);
    const pending = { status: 'pending', chunks: doc.chunkCount, embedded: 0, failed: 0 };
    expect(doc.embedding).toEqual(pending);
    expect((await knowledge.get(doc.id))!.embedding).toEqual(pending);
    client.down = false;
    expect(await search.embedPending()).toBe(doc.chunkCount);
    const ready = { status: 'ready', chunks: doc.chunkCount, embedded: doc.chunkCount, failed: 0 };
    expect((await knowledge.get(doc.id))!.embedding).toEqual(ready);
    expect((await knowledge.list({ limit: 5 })).items[0]!.record.embedding).toEqual(ready);
    expect((await knowledge.list({ query: 'zebra', limit: 5 })).items[0]!.record.embedding).toEqual(ready);
  });

  it('failed when nothing waits but the provider refused a chunk; the others are embedded', async () => {
    const content = longDocument(30, 'REFUSE this paragraph, please.', 20);
    const doc = await knowledge.create({ title: 'Mixed', content, source: 'docs' });
    expect(doc.embedding.status).toBe('pending'); // the batch was refused as a whole before the write
    await search.embedPending(); // row by row: only the chunk holding REFUSE is refused
    const state = (await knowledge.get(doc.id))!.embedding;
    expect(state.status).toBe('failed');
    expect(state.failed).toBeGreaterThanOrEqual(1);
    expect(state.embedded).toBeGreaterThanOrEqual(1);
    expect(state.embedded + state.failed).toBe(doc.chunkCount);
  });

  it('reindex starts over: the new chunks are embedded before the write', async () => {
    const doc = await knowledge.create({ title: 'Small', content: 'one short chunk', source: 'docs' });
    expect(doc.embedding).toEqual({ status: 'ready', chunks: 1, embedded: 1, failed: 0 });
    client.down = true;
    expect((await knowledge.reindex(doc.id))!.embedding).toEqual({
      status: 'pending',
      chunks: 1,
      embedded: 0,
      failed: 0,
    });
  });
});
