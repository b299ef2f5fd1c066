import { Validator } from '@seriousme/openapi-schema-validator';
import { beforeEach, describe, expect, it } from 'vitest';
import { HASHED_EMBEDDINGS } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';
import { HOSTILE_QUERIES, ISO_MS } from './builders.js';

interface MemoryView {
  id: string;
  key: string | null;
  content: string;
  tags: string[];
  created_at: string;
  last_accessed: string;
  relevance_score: number;
}
interface MemoryPage {
  items: MemoryView[];
  total: number;
  limit: number;
  offset: number;
}

const START = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

const enc = encodeURIComponent;

describe('memory API', () => {
  // One gateway for the file; each test clears memory through the API.
  const rig = useHarness({ clock: START, scope: 'all' });
  const get = (url: string, headers: Record<string, string> = apiHeaders) =>
    rig.inject({ method: 'GET', url, headers });
  const send = (
    method: 'POST' | 'PUT' | 'DELETE',
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
  const create = async (body: Record<string, unknown>) => {
    const res = await send('POST', '/api/v1/memory', body);
    expect(res.statusCode, res.body).toBe(201);
    rig.clock.advance(60_000);
    return res.json<MemoryView>();
  };
  const list = async (query = '') => {
    const res = await get(`/api/v1/memory${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<MemoryPage>();
  };

  beforeEach(async () => {
    for (const item of (await list('?limit=500')).items) {
      expect((await send('DELETE', `/api/v1/memory/${item.id}`)).statusCode).toBe(200);
    }
  });

  describe('happy', () => {
    it('POST creates an entry (201) with the documented shape; GET by id or key returns it', async () => {
      const entry = await create({
        content: 'The user prefers tea over coffee.',
        tags: ['pref', 'drink'],
        key: 'drink',
      });
      expect(entry).toEqual({
        id: expect.stringMatching(/^mem_/),
        key: 'drink',
        content: 'The user prefers tea over coffee.',
        tags: ['pref', 'drink'],
        created_at: new Date(START).toISOString(),
        last_accessed: new Date(START).toISOString(),
        relevance_score: 0,
      });
      const plain = await create({ content: 'No tags, no key' });
      expect(plain).toMatchObject({ key: null, tags: [] });
      expect(plain.created_at).toMatch(ISO_MS);
      expect((await get(`/api/v1/memory/${entry.id}`)).json()).toEqual(entry);
      expect((await get('/api/v1/memory/drink')).json()).toEqual(entry);
      expect((await get('/api/memory/drink')).json()).toEqual(entry);
    });

    it('GET lists newest first with {items, total, limit, offset}; limit and offset page through', async () => {
      for (const n of [1, 2, 3, 4, 5]) await create({ content: `note ${n}` });
      const all = await list();
      expect(all).toMatchObject({ total: 5, limit: 50, offset: 0 });
      expect(all.items.map((i) => i.content)).toEqual(['note 5', 'note 4', 'note 3', 'note 2', 'note 1']);
      const page = await list('?limit=2&offset=2');
      expect(page).toMatchObject({ total: 5, limit: 2, offset: 2 });
      expect(page.items.map((i) => i.content)).toEqual(['note 3', 'note 2']);
      expect((await list('?limit=500&offset=5')).items).toEqual([]);
    });

    it('filters by tag, since and key', async () => {
      await create({ content: 'a', tags: ['x'] });
      const b = await create({ content: 'b', tags: ['y'], key: 'kb' });
      await create({ content: 'c', tags: ['x', 'y'] });
      expect((await list('?tag=x')).items.map((i) => i.content)).toEqual(['c', 'a']);
      expect((await list(`?since=${enc(b.created_at)}`)).items.map((i) => i.content)).toEqual(['c', 'b']);
      expect((await list('?key=kb')).items.map((i) => i.content)).toEqual(['b']);
      expect((await list('?tag=y&key=kb')).total).toBe(1);
      expect((await list('?key=unknown')).total).toBe(0);
    });

    it('query ranks the entry about it first with relevance_score in 0..1, and moves last_accessed', async () => {
      await create({ content: 'The user is allergic to peanuts.', tags: ['health'] });
      const rust = await create({ content: 'Favourite programming language: Rust.', tags: ['tech'] });
      await create({ content: 'The user lives in Lisbon.', tags: ['location'] });
      rig.clock.advance(3_600_000);
      const now = new Date(rig.clock.now()).toISOString();
      const found = await list(`?query=${enc('which programming language?')}`);
      expect(found.items[0]!.id).toBe(rust.id);
      expect(found.items[0]!.relevance_score).toBe(1);
      expect(found.items[0]!.last_accessed).toBe(now);
      for (const item of found.items) {
        expect(item.relevance_score).toBeGreaterThan(0);
        expect(item.relevance_score).toBeLessThanOrEqual(1);
      }
      expect((await get(`/api/v1/memory/${rust.id}`)).json<MemoryView>().last_accessed).toBe(now);
      // Without a query nothing is touched and scores are 0.
      rig.clock.advance(60_000);
      const listed = await list();
      expect(listed.items.every((i) => i.relevance_score === 0)).toBe(true);
      expect(listed.items.find((i) => i.id === rust.id)!.last_accessed).toBe(now);
      // Query combined with a filter, total counts the matches.
      const filtered = await list(`?query=user&tag=location`);
      expect(filtered.total).toBe(1);
      expect(filtered.items[0]!.content).toContain('Lisbon');
    });

    it('PUT changes content and/or tags by id or key and reindexes', async () => {
      const entry = await create({ content: 'likes jazz', tags: ['music'], key: 'music' });
      const updated = await send('PUT', '/api/v1/memory/music', { content: 'likes opera' });
      expect(updated.statusCode, updated.body).toBe(200);
      expect(updated.json()).toMatchObject({ id: entry.id, key: 'music', content: 'likes opera', tags: ['music'] });
      const retagged = await send('PUT', `/api/v1/memory/${entry.id}`, { tags: ['art'] });
      expect(retagged.json()).toMatchObject({ content: 'likes opera', tags: ['art'] });
      expect((await list('?query=jazz')).total).toBe(0);
      expect((await list('?query=opera')).items.map((i) => i.id)).toEqual([entry.id]);
      expect((await list('?tag=art')).total).toBe(1);
    });

    it('DELETE by id or key answers {id, deleted: true} and removes the entry from search', async () => {
      const a = await create({ content: 'alpha fact', key: 'ka' });
      const b = await create({ content: 'beta fact' });
      expect((await send('DELETE', '/api/v1/memory/ka')).json()).toEqual({ id: a.id, deleted: true });
      expect((await send('DELETE', `/api/memory/${b.id}`)).json()).toEqual({ id: b.id, deleted: true });
      expect((await get(`/api/v1/memory/${a.id}`)).statusCode).toBe(404);
      expect((await list('?query=fact')).total).toBe(0);
    });

    it('hostile query strings answer 200', async () => {
      await create({ content: 'The quick brown fox (a test).' });
      for (const query of HOSTILE_QUERIES) {
        const res = await get(`/api/v1/memory?query=${enc(query)}`);
        expect(res.statusCode, query).toBe(200);
      }
      expect((await list(`?query=${enc('(fox OR')}`)).total).toBe(1);
    });
  });

  describe('errors', () => {
    it('POST validates content, tags and key; a used key is 400', async () => {
      const bad = [
        {},
        { content: '' },
        { content: '   ' },
        { content: 42 },
        { content: 'x\u0000y' },
        { content: 'ok', tags: 'x' },
        { content: 'ok', tags: [''] },
        { content: 'ok', tags: [1] },
        { content: 'ok', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) },
        { content: 'ok', key: '' },
        { content: 'ok', key: 'mem_lookalike' },
        { content: 'ok', key: 'a\nb' },
        { content: 'ok', key: 'k'.repeat(201) },
      ];
      for (const body of bad) {
        const res = await send('POST', '/api/v1/memory', body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json().error.code).toBe('BAD_REQUEST');
      }
      expect((await send('POST', '/api/v1/memory', '[1]')).statusCode).toBe(400);
      expect((await send('POST', '/api/v1/memory', '{"content":')).statusCode).toBe(400);
      await create({ content: 'first', key: 'taken' });
      const dup = await send('POST', '/api/v1/memory', { content: 'second', key: 'taken' });
      expect(dup.statusCode).toBe(400);
      expect(dup.json().error.details).toEqual([{ path: 'body.key', message: 'key is already used by another entry' }]);
      expect((await list()).total).toBe(1);
    });

    it('GET rejects out-of-range or malformed limit, offset and since', async () => {
      for (const query of [
        'limit=0',
        'limit=501',
        'limit=abc',
        'limit=1.5',
        'limit=',
        'offset=-1',
        'offset=x',
        'since=yesterday',
        'since=2026-13-45',
      ]) {
        const res = await get(`/api/v1/memory?${query}`);
        expect(res.statusCode, query).toBe(400);
      }
      expect((await get('/api/v1/memory?limit=500&offset=0')).statusCode).toBe(200);
    });

    it('PUT and DELETE of an unknown entry are 404; PUT needs content or tags', async () => {
      expect((await send('PUT', '/api/v1/memory/mem_nope', { content: 'x' })).statusCode).toBe(404);
      expect((await send('DELETE', '/api/v1/memory/mem_nope')).statusCode).toBe(404);
      expect((await get('/api/v1/memory/mem_nope')).statusCode).toBe(404);
      const entry = await create({ content: 'x' });
      expect((await send('PUT', `/api/v1/memory/${entry.id}`, {})).statusCode).toBe(400);
      expect((await send('PUT', `/api/v1/memory/${entry.id}`, { content: '' })).statusCode).toBe(400);
      expect((await send('PUT', `/api/v1/memory/${entry.id}`, { tags: 'x' })).statusCode).toBe(400);
    });
  });

  describe('security', () => {
    it('api token: reads 200, every write 403; no token 401; an admin token in ?token= is not read', async () => {
      const entry = await create({ content: 'secret plans', key: 'plans' });
      expect((await get('/api/v1/memory')).statusCode).toBe(200);
      expect((await get('/api/v1/memory?query=plans')).statusCode).toBe(200);
      expect((await get('/api/v1/memory/plans')).statusCode).toBe(200);
      expect((await send('POST', '/api/v1/memory', { content: 'x' }, apiHeaders)).statusCode).toBe(403);
      expect((await send('PUT', `/api/v1/memory/${entry.id}`, { content: 'x' }, apiHeaders)).statusCode).toBe(403);
      expect((await send('DELETE', `/api/v1/memory/${entry.id}`, undefined, apiHeaders)).statusCode).toBe(403);
      expect((await get('/api/v1/memory', {})).statusCode).toBe(401);
      expect((await send('POST', '/api/v1/memory', { content: 'x' }, {})).statusCode).toBe(401);
      expect((await send('POST', `/api/v1/memory?token=${ADMIN_TOKEN}`, { content: 'x' }, {})).statusCode).toBe(401);
      expect((await list()).total).toBe(1);
    });
  });
});

describe('memory and knowledge in the OpenAPI document', () => {
  const rig = useHarness({ clock: START, scope: 'all' });

  it('lists their routes with permissions and rate groups, and the document stays valid', async () => {
    const doc = (await rig.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: apiHeaders })).json<{
      paths: Record<string, Record<string, { 'x-permission': string; 'x-rate-group': string | null }>>;
    }>();
    expect(doc.paths['/api/v1/memory']?.get?.['x-permission']).toBe('api');
    expect(doc.paths['/api/v1/memory']?.post?.['x-permission']).toBe('admin');
    expect(doc.paths['/api/v1/memory/{id}']?.put?.['x-permission']).toBe('admin');
    expect(doc.paths['/api/v1/memory/{id}']?.delete?.['x-permission']).toBe('admin');
    expect(doc.paths['/api/v1/knowledge']?.post?.['x-permission']).toBe('admin');
    expect(doc.paths['/api/v1/knowledge/{id}/reindex']?.post?.['x-rate-group']).toBe('lifecycle');
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
  });
});

describe('memory tools in the agent loop', () => {
  // Embeddings answer with hashed vectors unless a test queues a failure; each test scripts the model.
  const rig = useHarness({
    fake: { alwaysEmbeddings: HASHED_EMBEDDINGS },
    embeddings: true,
    clock: START,
    scope: 'all',
  });

  const ask = async (text: string, chat: string) => {
    const res = await rig.inject({
      method: 'POST',
      url: '/api/v1/message',
      headers: apiHeaders,
      payload: { platform: 'api', user_id: 'u1', chat_id: chat, text, wait: true },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ status: string; session_key: string; response: string }>();
  };
  const toolResults = async (sessionKey: string) => {
    const res = await rig.inject({
      method: 'GET',
      url: `/api/v1/sessions/${enc(sessionKey)}/history`,
      headers: apiHeaders,
    });
    expect(res.statusCode).toBe(200);
    return res
      .json<{ items: Array<{ role: string; name?: string; content: string }> }>()
      .items.filter((entry) => entry.role === 'tool');
  };

  it('memory_save stores an entry, memory_search finds it, and deleting the session keeps it', async () => {
    rig.fake.enqueue(
      {
        tool_calls: [
          { name: 'memory_save', arguments: { content: 'The user is vegetarian.', tags: ['diet'], key: 'diet' } },
        ],
      },
      { content: 'Noted.' },
    );
    const saved = await ask('Remember that I am vegetarian', 'mem-1');
    expect(saved).toMatchObject({ status: 'completed', response: 'Noted.' });
    const entry = await rig.inject({ method: 'GET', url: '/api/v1/memory/diet', headers: apiHeaders });
    expect(entry.statusCode).toBe(200);
    expect(entry.json()).toMatchObject({ content: 'The user is vegetarian.', tags: ['diet'] });
    const [saveResult] = await toolResults(saved.session_key);
    expect(JSON.parse(saveResult!.content)).toMatchObject({ status: 'created', memory: { key: 'diet' } });

    // Saving the same key again updates the entry instead of failing.
    rig.fake.enqueue(
      { tool_calls: [{ name: 'memory_save', arguments: { content: 'The user is vegan.', key: 'diet' } }] },
      { content: 'Updated.' },
    );
    await ask('Actually I am vegan now', 'mem-1');
    const after = await rig.inject({ method: 'GET', url: '/api/v1/memory?key=diet', headers: apiHeaders });
    expect(after.json<MemoryPage>().items.map((i) => i.content)).toEqual(['The user is vegan.']);

    rig.fake.enqueue(
      { tool_calls: [{ name: 'memory_search', arguments: { query: 'is the user vegan?' } }] },
      { content: 'You are vegan.' },
    );
    const searched = await ask('What do I eat?', 'mem-2');
    const [searchResult] = await toolResults(searched.session_key);
    expect(searchResult!.name).toBe('memory_search');
    const parsed = JSON.parse(searchResult!.content) as { items: Array<{ content: string; relevance_score: number }> };
    expect(parsed.items[0]).toMatchObject({ content: 'The user is vegan.' });
    expect(parsed.items[0]!.relevance_score).toBeGreaterThan(0);

    const deleted = await rig.inject({
      method: 'DELETE',
      url: `/api/v1/sessions/${enc(saved.session_key)}`,
      headers: apiHeaders,
    });
    expect(deleted.statusCode).toBe(200);
    expect((await rig.inject({ method: 'GET', url: '/api/v1/memory/diet', headers: apiHeaders })).statusCode).toBe(200);
  });

  it('reports invalid tool arguments to the model instead of failing the turn', async () => {
    rig.fake.enqueue({ tool_calls: [{ name: 'memory_save', arguments: { content: '' } }] }, { content: 'Sorry.' });
    const result = await ask('Remember nothing', 'mem-3');
    expect(result.status).toBe('completed');
    const [toolResult] = await toolResults(result.session_key);
    expect(toolResult!.content).toContain('invalid arguments');
  });

  it('an embeddings failure does not fail the write', async () => {
    rig.fake.enqueueEmbeddings({ status: 500 });
    const res = await rig.inject({
      method: 'POST',
      url: '/api/v1/memory',
      headers: adminHeaders,
      payload: { content: 'Embeddings were down when this was written: zeppelin.' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const found = await rig.inject({ method: 'GET', url: '/api/v1/memory?query=zeppelin', headers: apiHeaders });
    expect(found.json<MemoryPage>().items.map((i) => i.id)).toEqual([res.json<MemoryView>().id]);
  });
});
