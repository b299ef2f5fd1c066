import { beforeEach, describe, expect, it } from 'vitest';
import { KNOWLEDGE_BODY_LIMIT, KNOWLEDGE_MAX_CONTENT_BYTES } from '../../src/knowledge/index.js';
import { HASHED_EMBEDDINGS } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, adminHeaders, apiHeaders, ROOMY_LIMITS, useHarness } from '../helpers/harness.js';
import { HOSTILE_QUERIES } from './builders.js';

interface KnowledgeView {
  id: string;
  title: string;
  source: string;
  chunk_count: number;
  indexed_at: string;
  size_bytes: number;
  metadata: Record<string, unknown>;
  embedding: { status: string; chunks: number; embedded: number; failed: number };
  score?: number;
  matches?: Array<{ chunk: number; text: string }>;
}

const START = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

const enc = encodeURIComponent;
const MiB = 1024 * 1024;

/** A document of `paragraphs` filler paragraphs with `special` as paragraph number `at`. */
function document(paragraphs: number, special: string, at: number): string {
  return Array.from({ length: paragraphs }, (_, i) =>
    i === at ? special : `Paragraph ${i} covers routine operations of the service, its configuration and logs.`,
  ).join('\n\n');
}

describe('knowledge API', () => {
  // One gateway for the file; each test deletes what the previous one added.
  const rig = useHarness({ clock: START, scope: 'all' });
  const get = (url: string, headers: Record<string, string> = apiHeaders) =>
    rig.inject({ method: 'GET', url, headers });
  const send = (
    method: 'POST' | 'DELETE',
    url: string,
    payload?: unknown,
    headers: Record<string, string> = adminHeaders,
  ) =>
    rig.inject({
      method,
      url,
      headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
    });
  const post = async (body: Record<string, unknown>) => {
    const res = await send('POST', '/api/v1/knowledge', { source: 'docs', ...body });
    expect(res.statusCode, res.body.slice(0, 500)).toBe(201);
    rig.clock.advance(1000);
    return res.json<KnowledgeView>();
  };
  const list = async (query = '') => {
    const res = await get(`/api/v1/knowledge${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ items: KnowledgeView[] }>().items;
  };

  beforeEach(async () => {
    for (const item of await list('?limit=100')) {
      expect((await send('DELETE', `/api/v1/knowledge/${item.id}`)).statusCode).toBe(200);
    }
  });

  describe('happy', () => {
    it('POST chunks and indexes a document (201) with the documented shape; GET /knowledge/{id} returns it', async () => {
      const content = `${document(30, 'Rotate the signing key every ninety days.', 20)}\n\nÜber café`;
      const entry = await post({ title: 'Ops handbook', content, source: 'file:///ops.md', metadata: { team: 'ops' } });
      expect(entry).toEqual({
        id: expect.stringMatching(/^kn_/),
        title: 'Ops handbook',
        source: 'file:///ops.md',
        chunk_count: expect.any(Number),
        indexed_at: new Date(START).toISOString(),
        size_bytes: Buffer.byteLength(content, 'utf8'),
        metadata: { team: 'ops' },
        // No embeddings provider here: full text only, and the entry says so.
        embedding: { status: 'off', chunks: expect.any(Number), embedded: 0, failed: 0 },
      });
      expect(entry.chunk_count).toBeGreaterThan(1);
      expect(entry.embedding.chunks).toBe(entry.chunk_count);
      expect((await get(`/api/v1/knowledge/${entry.id}`)).json()).toEqual(entry);
      expect((await get(`/api/knowledge/${entry.id}`)).json()).toEqual(entry);
      const minimal = await post({ title: 'T', content: 'c' });
      expect(minimal).toMatchObject({ metadata: {}, chunk_count: 1, size_bytes: 1 });
    });

    it('GET without a query lists newest first, 10 by default, limit or top_k 1..100', async () => {
      for (let i = 0; i < 12; i++) await post({ title: `doc ${i}`, content: `content ${i}` });
      const items = await list();
      expect(items).toHaveLength(10);
      expect(items[0]!.title).toBe('doc 11');
      expect(items[0]).not.toHaveProperty('score');
      expect(items[0]!.embedding).toEqual({ status: 'off', chunks: 1, embedded: 0, failed: 0 });
      expect(await list('?limit=3')).toHaveLength(3);
      expect(await list('?top_k=4')).toHaveLength(4);
      expect(await list('?limit=5&top_k=5')).toHaveLength(5);
      expect(await list('?limit=100')).toHaveLength(12);
    });

    it('query ranks the document about it first, each item with score and matches [{chunk, text}]', async () => {
      const keys = await post({
        title: 'Keys',
        content: document(25, 'To rotate the signing key, generate a new secret and restart.', 14),
      });
      await post({ title: 'Bread', content: 'Flour, water, yeast and salt make bread. Knead the dough.' });
      await post({ title: 'Chess', content: 'The knight moves in an L shape.' });
      const items = await list(`?query=${enc('how do I rotate the signing key?')}`);
      expect(items[0]!.id).toBe(keys.id);
      expect(items[0]!.score).toBe(1);
      expect(items[0]!.matches![0]!.text).toContain('rotate the signing key');
      expect(items[0]!.matches![0]!.text.length).toBeLessThanOrEqual(242);
      expect(typeof items[0]!.matches![0]!.chunk).toBe('number');
      for (const item of items) {
        expect(item.score).toBeGreaterThan(0);
        expect(item.score).toBeLessThanOrEqual(1);
      }
      expect((await list('?query=knight')).map((i) => i.title)).toEqual(['Chess']);
      expect(await list('?query=submarine')).toEqual([]);
      expect(await list('?query=the&top_k=1')).toHaveLength(1);
    });

    it('filters by source and by metadata equalities (filter=JSON object)', async () => {
      await post({ title: 'A', content: 'alpha guide', source: 'wiki', metadata: { lang: 'en', v: 2 } });
      await post({ title: 'B', content: 'alpha guide', source: 'wiki', metadata: { lang: 'fr', v: 2 } });
      await post({ title: 'C', content: 'alpha guide', source: 'file', metadata: { lang: 'en', nested: { x: [1] } } });
      const titles = async (query: string) => (await list(query)).map((i) => i.title);
      expect(await titles('?source=wiki')).toEqual(['B', 'A']);
      expect(await titles(`?filter=${enc('{"lang":"en"}')}`)).toEqual(['C', 'A']);
      expect(await titles(`?filter=${enc('{"lang":"en","v":2}')}`)).toEqual(['A']);
      expect(await titles(`?filter=${enc('{"nested":{"x":[1]}}')}`)).toEqual(['C']);
      expect(await titles(`?filter=${enc('{"v":"2"}')}`)).toEqual([]);
      expect(await titles(`?filter=${enc('{}')}`)).toEqual(['C', 'B', 'A']);
      expect((await titles(`?query=alpha&source=wiki`)).sort()).toEqual(['A', 'B']);
      expect(await titles(`?query=alpha&filter=${enc('{"lang":"fr"}')}`)).toEqual(['B']);
    });

    it('DELETE answers {id, deleted: true} and takes the document out of search', async () => {
      const entry = await post({ title: 'Comets', content: 'Comets have icy nuclei.' });
      expect((await send('DELETE', `/api/v1/knowledge/${entry.id}`)).json()).toEqual({ id: entry.id, deleted: true });
      expect((await get(`/api/v1/knowledge/${entry.id}`)).statusCode).toBe(404);
      expect(await list('?query=comets')).toEqual([]);
    });

    it('reindex (lifecycle rate group) re-chunks the entry and moves indexed_at', async () => {
      const entry = await post({ title: 'Guide', content: document(12, 'Zebra crossings are striped.', 3) });
      rig.clock.advance(60_000);
      const res = await send('POST', `/api/v1/knowledge/${entry.id}/reindex`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe(String(ROOMY_LIMITS.lifecycle));
      const after = res.json<KnowledgeView>();
      expect(after).toEqual({ ...entry, indexed_at: new Date(rig.clock.now()).toISOString() });
      expect((await list('?query=zebra')).map((i) => i.id)).toEqual([entry.id]);
    });

    it('accepts a 10 MiB document; a body over the cap is 413', async () => {
      const words = ['lorem', 'ipsum', 'gateway', 'signal', 'harbor', 'violet', 'quartz', 'meadow'];
      let text = '';
      for (let i = 0; text.length < KNOWLEDGE_MAX_CONTENT_BYTES; i++) {
        text += `${words[i % 8]} ${words[(i * 7) % 8]}${i % 97 === 0 ? '.\n\n' : ' '}`;
      }
      const content = text.slice(0, KNOWLEDGE_MAX_CONTENT_BYTES);
      const res = await send('POST', '/api/v1/knowledge', { title: 'Big', content, source: 'bulk' });
      expect(res.statusCode, res.body.slice(0, 300)).toBe(201);
      const entry = res.json<KnowledgeView>();
      expect(entry.size_bytes).toBe(10 * MiB);
      expect(Buffer.byteLength(JSON.stringify({ title: 'Big', content, source: 'bulk' }))).toBeGreaterThan(10 * MiB);
      expect(entry.chunk_count).toBeGreaterThan(8000);
      expect((await list('?query=quartz&top_k=1')).map((i) => i.id)).toEqual([entry.id]);

      const tooBigContent = await send('POST', '/api/v1/knowledge', {
        title: 'Big',
        content: `${content}x`,
        source: 's',
      });
      expect(tooBigContent.statusCode).toBe(413);
      const overCap = await send('POST', '/api/v1/knowledge', 'x'.repeat(KNOWLEDGE_BODY_LIMIT + 1));
      expect(overCap.statusCode).toBe(413);
      expect(overCap.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    });

    it('hostile query strings answer 200', async () => {
      await post({ title: 'Fox', content: 'The quick brown fox (a test) jumps.' });
      for (const query of HOSTILE_QUERIES) {
        expect((await get(`/api/v1/knowledge?query=${enc(query)}`)).statusCode, query).toBe(200);
      }
      expect((await list(`?query=${enc('(fox OR')}`)).map((i) => i.title)).toEqual(['Fox']);
    });
  });

  describe('errors', () => {
    it('POST takes source as optional (default "api")', async () => {
      const res = await send('POST', '/api/v1/knowledge', { title: 't', content: 'c' });
      expect(res.statusCode).toBe(201);
      expect(res.json().source).toBe('api');
    });

    it('POST validates title, content, source and metadata', async () => {
      const ok = { title: 't', content: 'c', source: 's' };
      const bad: unknown[] = [
        {},
        { ...ok, title: undefined },
        { ...ok, title: '' },
        { ...ok, content: undefined },
        { ...ok, content: '  ' },
        { ...ok, content: 5 },
        { ...ok, content: 'nul\u0000' },
        { ...ok, source: '' },
        { ...ok, metadata: [] },
        { ...ok, metadata: 'x' },
        { ...ok, metadata: null },
        [ok],
      ];
      for (const body of bad) {
        const res = await send('POST', '/api/v1/knowledge', body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json().error.code).toBe('BAD_REQUEST');
      }
      expect((await send('POST', '/api/v1/knowledge', '{"title":')).statusCode).toBe(400);
      expect(await list()).toEqual([]);
    });

    it('GET rejects bad limit/top_k, differing limit and top_k, and a filter that is not a JSON object', async () => {
      for (const query of [
        'limit=0',
        'limit=101',
        'top_k=0',
        'top_k=abc',
        'top_k=2.5',
        'limit=3&top_k=4',
        'filter=not-json',
        `filter=${enc('[1,2]')}`,
        'filter=null',
        'filter=42',
        `filter=${enc('"text"')}`,
      ]) {
        const res = await get(`/api/v1/knowledge?${query}`);
        expect(res.statusCode, query).toBe(400);
        expect(res.json().error.code).toBe('BAD_REQUEST');
      }
    });

    it('unknown ids are 404 for GET, DELETE and reindex', async () => {
      expect((await get('/api/v1/knowledge/kn_nope')).statusCode).toBe(404);
      expect((await send('DELETE', '/api/v1/knowledge/kn_nope')).statusCode).toBe(404);
      expect((await send('POST', '/api/v1/knowledge/kn_nope/reindex')).statusCode).toBe(404);
    });
  });

  describe('security', () => {
    it('api token: reads 200, upload, delete and reindex 403 (even for a huge body); ?token= is not read', async () => {
      const entry = await post({ title: 'Private', content: 'internal notes' });
      expect((await get('/api/v1/knowledge')).statusCode).toBe(200);
      expect((await get('/api/v1/knowledge?query=notes')).statusCode).toBe(200);
      expect((await get(`/api/v1/knowledge/${entry.id}`)).statusCode).toBe(200);
      const doc = { title: 't', content: 'c', source: 's' };
      expect((await send('POST', '/api/v1/knowledge', doc, apiHeaders)).statusCode).toBe(403);
      expect((await send('POST', '/api/v1/knowledge', 'x'.repeat(12 * MiB), apiHeaders)).statusCode).toBe(403);
      expect((await send('DELETE', `/api/v1/knowledge/${entry.id}`, undefined, apiHeaders)).statusCode).toBe(403);
      expect((await send('POST', `/api/v1/knowledge/${entry.id}/reindex`, undefined, apiHeaders)).statusCode).toBe(403);
      expect((await get('/api/v1/knowledge', {})).statusCode).toBe(401);
      expect((await send('POST', `/api/v1/knowledge?token=${ADMIN_TOKEN}`, doc, {})).statusCode).toBe(401);
      expect(
        (await send('DELETE', `/api/v1/knowledge/${entry.id}?token=${ADMIN_TOKEN}`, undefined, {})).statusCode,
      ).toBe(401);
      expect(await list()).toHaveLength(1);
    });
  });
});

describe('knowledge in the agent loop, with embeddings', () => {
  // Embeddings answer with hashed vectors unless a test queues a failure; each test scripts the model.
  const rig = useHarness({
    fake: { alwaysEmbeddings: HASHED_EMBEDDINGS },
    embeddings: true,
    clock: START,
    scope: 'all',
  });

  const postDoc = async (title: string, content: string) => {
    const res = await rig.inject({
      method: 'POST',
      url: '/api/v1/knowledge',
      headers: adminHeaders,
      payload: { title, content, source: 'kb' },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<KnowledgeView>();
  };

  it('knowledge_search finds a chunk of a posted document and the tool result in history holds it', async () => {
    const doc = await postDoc(
      'Runbook',
      document(20, 'Escalation: page the on-call engineer through the Pagerduty rotation named ORCA.', 11),
    );
    await postDoc('Recipes', 'Bread needs flour, water, salt and yeast.');
    rig.fake.enqueue(
      { tool_calls: [{ name: 'knowledge_search', arguments: { query: 'who do I page for an escalation?' } }] },
      { content: 'Page the on-call engineer.' },
    );
    const res = await rig.inject({
      method: 'POST',
      url: '/api/v1/message',
      headers: apiHeaders,
      payload: { platform: 'api', user_id: 'u1', chat_id: 'kn-1', text: 'Who do I page?', wait: true },
    });
    expect(res.statusCode, res.body).toBe(200);
    const reply = res.json<{ status: string; session_key: string }>();
    expect(reply.status).toBe('completed');
    const history = await rig.inject({
      method: 'GET',
      url: `/api/v1/sessions/${enc(reply.session_key)}/history`,
      headers: apiHeaders,
    });
    const tool = history
      .json<{ items: Array<{ role: string; name?: string; content: string }> }>()
      .items.find((entry) => entry.role === 'tool');
    expect(tool?.name).toBe('knowledge_search');
    expect(tool!.content).toContain('Pagerduty rotation named ORCA');
    const result = JSON.parse(tool!.content) as { items: Array<{ id: string; score: number }> };
    expect(result.items[0]!.id).toBe(doc.id);
    // The embeddings provider was used for the document and the query.
    expect(rig.fake.requests.filter((r) => r.path === '/v1/embeddings').length).toBeGreaterThanOrEqual(3);
  });

  it('an embeddings failure does not fail the upload: the document is found by full text', async () => {
    rig.fake.enqueueEmbeddings({ status: 500 });
    const doc = await postDoc('Outage', 'Written while embeddings were down: kumquat.');
    // Its one chunk waits for the background embedder: vector search does not cover it yet.
    expect(doc.embedding).toEqual({ status: 'pending', chunks: 1, embedded: 0, failed: 0 });
    const found = await rig.inject({ method: 'GET', url: '/api/v1/knowledge?query=kumquat', headers: apiHeaders });
    expect(found.json<{ items: KnowledgeView[] }>().items.map((i) => i.id)).toEqual([doc.id]);
  });

  it('each entry says how far vector search covers it: ready once every chunk has a vector', async () => {
    const doc = await postDoc('Backups', document(30, 'The backup runs nightly at two.', 4));
    expect(doc.chunk_count).toBeGreaterThan(1);
    // Small documents are embedded before their write.
    const ready = { status: 'ready', chunks: doc.chunk_count, embedded: doc.chunk_count, failed: 0 };
    expect(doc.embedding).toEqual(ready);
    const one = await rig.inject({ method: 'GET', url: `/api/v1/knowledge/${doc.id}`, headers: apiHeaders });
    expect(one.json<KnowledgeView>().embedding).toEqual(ready);
    const listed = await rig.inject({ method: 'GET', url: '/api/v1/knowledge?query=backup', headers: apiHeaders });
    expect(listed.json<{ items: KnowledgeView[] }>().items.find((i) => i.id === doc.id)!.embedding).toEqual(ready);
  });
});
