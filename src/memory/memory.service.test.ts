import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HASHED_EMBEDDINGS, startFakeOpenAI, type FakeOpenAI } from '../../test/helpers/fake-openai.js';
import { ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import { createLogger } from '../logs/logger.js';
import { SearchEngine, createEmbeddingsClient } from '../search/index.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { MEMORY_COLLECTION, MemoryKeyTakenError, MemoryService } from './memory.service.js';

const logger = createLogger({ level: 'error', stdout: { write: () => undefined } });
const START = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();

describeBackends('memory service', (backend) => {
  let t: TestStore;
  let fake: FakeOpenAI;
  let clock: ManualClock;
  let search: SearchEngine;
  let memory: MemoryService;

  const build = (embeddings = false) => {
    search = new SearchEngine({
      store: t.store,
      logger,
      backgroundEmbedding: false,
      embeddings: embeddings ? createEmbeddingsClient({ base_url: fake.url, api_key: null, model: 'm' }) : null,
    });
    memory = new MemoryService({ store: t.store, clock, ids: createIdGenerator(clock), search });
  };

  // One database per backend; every test starts from empty tables.
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
    const db = t.store.db;
    await db.deleteFrom('memory_tags').execute();
    await db.deleteFrom('memories').execute();
    await db.deleteFrom('search_chunks').execute();
    if (backend.name === 'sqlite') {
      await sql`insert into memory_fts (memory_fts) values ('delete-all')`.execute(db);
      await sql`insert into knowledge_fts (knowledge_fts) values ('delete-all')`.execute(db);
    }
    clock = new ManualClock(START);
    build();
  });
  afterEach(async () => {
    await search.close();
  });

  /** Creates entries one minute apart. */
  const seed = async (entries: Array<{ content: string; tags?: string[]; key?: string }>) => {
    const out = [];
    for (const entry of entries) {
      out.push(await memory.create(entry));
      clock.advance(60_000);
    }
    return out;
  };

  describe('create, get, list', () => {
    it('creates an entry with last_accessed = created_at, found by id and by key', async () => {
      const record = await memory.create({
        content: 'User prefers tea',
        tags: ['pref', 'drink', 'pref'],
        key: 'drink',
      });
      expect(record).toMatchObject({
        key: 'drink',
        content: 'User prefers tea',
        tags: ['pref', 'drink'],
        createdAt: iso(START),
        lastAccessed: iso(START),
      });
      expect(record.id).toMatch(/^mem_/);
      expect(await memory.get(record.id)).toEqual(record);
      expect(await memory.get('drink')).toEqual(record);
      expect(await memory.get('nope')).toBeNull();
    });

    it('refuses a key already used, and leaves nothing behind', async () => {
      await memory.create({ content: 'first', key: 'k' });
      await expect(memory.create({ content: 'second', key: 'k' })).rejects.toBeInstanceOf(MemoryKeyTakenError);
      const page = await memory.list({ limit: 10, offset: 0 });
      expect(page.items.map((i) => i.record.content)).toEqual(['first']);
      const chunks = await t.store.db.selectFrom('search_chunks').select('doc_id').execute();
      expect(chunks).toHaveLength(1);
    });

    it('lists newest first with total, limit and offset, score 0, nothing touched', async () => {
      const made = await seed([{ content: 'one' }, { content: 'two' }, { content: 'three' }, { content: 'four' }]);
      clock.advance(60_000);
      const page = await memory.list({ limit: 2, offset: 1 });
      expect(page.total).toBe(4);
      expect(page.items.map((i) => i.record.content)).toEqual(['three', 'two']);
      expect(page.items.every((i) => i.score === 0)).toBe(true);
      const reread = await memory.get(made[1]!.id);
      expect(reread!.lastAccessed).toBe(made[1]!.lastAccessed);
      expect((await memory.list({ limit: 10, offset: 10 })).items).toEqual([]);
    });

    it('filters by tag, since and key, alone and combined', async () => {
      await seed([
        { content: 'a', tags: ['x'] },
        { content: 'b', tags: ['y'] },
        { content: 'c', tags: ['x', 'y'], key: 'kc' },
      ]);
      const contents = async (filters: Parameters<MemoryService['list']>[0]) =>
        (await memory.list(filters)).items.map((i) => i.record.content);
      expect(await contents({ tag: 'x', limit: 10, offset: 0 })).toEqual(['c', 'a']);
      expect(await contents({ since: iso(START + 60_000), limit: 10, offset: 0 })).toEqual(['c', 'b']);
      expect(await contents({ key: 'kc', limit: 10, offset: 0 })).toEqual(['c']);
      expect(await contents({ tag: 'y', since: iso(START + 120_000), limit: 10, offset: 0 })).toEqual(['c']);
      expect(await contents({ tag: 'zzz', limit: 10, offset: 0 })).toEqual([]);
      expect((await memory.list({ tag: 'x', limit: 1, offset: 0 })).total).toBe(2);
    });
  });

  describe('search', () => {
    const FACTS = [
      { content: 'The user is allergic to peanuts and avoids nut products.', tags: ['health'] },
      { content: 'The user lives in Lisbon and works remotely for a Berlin startup.', tags: ['location'] },
      { content: 'Favourite programming language: Rust, with TypeScript a close second.', tags: ['tech'] },
      { content: 'The user runs a half marathon every spring.', tags: ['sport'] },
    ];

    it('ranks the entry about the query first, scores 0..1, and moves last_accessed of returned entries', async () => {
      const made = await seed(FACTS);
      clock.advance(3_600_000);
      const page = await memory.list({ query: 'which programming language does the user like?', limit: 10, offset: 0 });
      expect(page.items[0]!.record.content).toContain('Rust');
      expect(page.items[0]!.score).toBe(1);
      for (const item of page.items) {
        expect(item.score).toBeGreaterThan(0);
        expect(item.score).toBeLessThanOrEqual(1);
        expect(item.record.lastAccessed).toBe(iso(clock.now()));
      }
      expect(page.total).toBe(page.items.length);
      const stored = await memory.get(page.items[0]!.record.id);
      expect(stored!.lastAccessed).toBe(iso(clock.now()));
      const untouched = made.filter((m) => !page.items.some((i) => i.record.id === m.id));
      for (const m of untouched) expect((await memory.get(m.id))!.lastAccessed).toBe(m.createdAt);
    });

    it('searches tags too, and combines the query with filters and pagination', async () => {
      await seed(FACTS);
      const byTag = await memory.list({ query: 'sport', limit: 10, offset: 0 });
      expect(byTag.items.map((i) => i.record.content)).toEqual([FACTS[3]!.content]);
      const filtered = await memory.list({ query: 'user', tag: 'location', limit: 10, offset: 0 });
      expect(filtered.items.map((i) => i.record.tags)).toEqual([['location']]);
      const all = await memory.list({ query: 'the user', limit: 10, offset: 0 });
      expect(all.total).toBe(3);
      const second = await memory.list({ query: 'the user', limit: 1, offset: 1 });
      expect(second.total).toBe(3);
      expect(second.items.map((i) => i.record.id)).toEqual([all.items[1]!.record.id]);
    });

    it('never throws on hostile queries', async () => {
      await seed(FACTS);
      for (const query of ['"', '*', 'OR', '-', ':', '()', '(peanuts', 'NEAR(a b)', '東京', '🦜', "'||'"]) {
        const page = await memory.list({ query, limit: 5, offset: 0 });
        expect(page.total).toBeGreaterThanOrEqual(0);
      }
      expect((await memory.list({ query: '(peanuts', limit: 5, offset: 0 })).items).toHaveLength(1);
    });
  });

  describe('update, delete, save', () => {
    it('updates content and tags by id or key, and reindexes', async () => {
      const [entry] = await seed([{ content: 'likes jazz', tags: ['music'], key: 'music' }]);
      clock.advance(1000);
      const updated = await memory.update('music', { content: 'likes opera' });
      expect(updated).toMatchObject({ id: entry!.id, content: 'likes opera', tags: ['music'], key: 'music' });
      expect((await memory.list({ query: 'jazz', limit: 5, offset: 0 })).total).toBe(0);
      expect((await memory.list({ query: 'opera', limit: 5, offset: 0 })).total).toBe(1);
      const retagged = await memory.update(entry!.id, { tags: ['art'] });
      expect(retagged!.tags).toEqual(['art']);
      expect((await memory.list({ tag: 'music', limit: 5, offset: 0 })).total).toBe(0);
      expect((await memory.list({ tag: 'art', limit: 5, offset: 0 })).total).toBe(1);
      expect(await memory.update('missing', { content: 'x' })).toBeNull();
    });

    it('deletes by id or key, out of the index too', async () => {
      const [a, b] = await seed([{ content: 'alpha note', key: 'ka' }, { content: 'beta note' }]);
      expect(await memory.remove('ka')).toBe(a!.id);
      expect(await memory.remove(b!.id)).toBe(b!.id);
      expect(await memory.remove(b!.id)).toBeNull();
      expect((await memory.list({ query: 'note', limit: 5, offset: 0 })).total).toBe(0);
      const chunks = await t.store.db
        .selectFrom('search_chunks')
        .select('id')
        .where('collection', '=', MEMORY_COLLECTION)
        .execute();
      expect(chunks).toEqual([]);
    });

    it('save creates, then updates the entry holding the key (the agent never fails on a key)', async () => {
      const first = await memory.save({ content: 'timezone is CET', key: 'tz', tags: ['time'] });
      expect(first.created).toBe(true);
      clock.advance(5000);
      const second = await memory.save({ content: 'timezone is WET', key: 'tz' });
      expect(second.created).toBe(false);
      expect(second.record).toMatchObject({ id: first.record.id, content: 'timezone is WET', tags: ['time'] });
      expect(second.record.lastAccessed).toBe(iso(clock.now()));
      expect((await memory.get('tz'))!.lastAccessed).toBe(iso(clock.now()));
      expect((await memory.list({ limit: 10, offset: 0 })).total).toBe(1);
    });
  });

  describe('with embeddings', () => {
    it('ranks with vectors, and still saves when the embeddings provider fails', async () => {
      await search.close();
      build(true);
      fake.enqueueEmbeddings({ status: 500 });
      const saved = await memory.create({ content: 'The user drinks green tea every morning.' });
      await seed([{ content: 'The user owns a red bicycle.' }]);
      const page = await memory.list({ query: 'green tea', limit: 5, offset: 0 });
      expect(page.items[0]!.record.id).toBe(saved.id);
      expect(await search.embedPending()).toBe(1);
      const again = await memory.list({ query: 'green tea', limit: 5, offset: 0 });
      expect(again.items[0]!.record.id).toBe(saved.id);
      // Before the backfill the entry had no vector: only its full-text half counted.
      expect(page.items[0]!.score).toBeCloseTo(0.5, 5);
      expect(again.items[0]!.score).toBeGreaterThan(0.7);
    });
  });
});
