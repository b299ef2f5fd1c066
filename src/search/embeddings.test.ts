import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HASHED_EMBEDDINGS, fakeEmbedding, startFakeOpenAI, type FakeOpenAI } from '../../test/helpers/fake-openai.js';
import { DEFAULT_EMBEDDING_MODEL, EmbeddingsError, createEmbeddingsClient } from './embeddings.js';
import { decodeVector, dot, encodeVector, normalizeVector } from './vectors.js';

describe('embeddings client', () => {
  let fake: FakeOpenAI;
  beforeEach(async () => {
    fake = await startFakeOpenAI();
    fake.alwaysEmbeddings(HASHED_EMBEDDINGS); // every embeddings call the test does not queue: hashed vectors
  });
  afterEach(async () => {
    await fake.close();
  });

  it('is absent without a base_url', () => {
    expect(createEmbeddingsClient({ base_url: null, api_key: null, model: null })).toBeNull();
    expect(createEmbeddingsClient({ base_url: '  ', api_key: null, model: null })).toBeNull();
  });

  it('posts to {base_url}/embeddings in batches, with the key and model, and returns unit vectors in order', async () => {
    const client = createEmbeddingsClient(
      { base_url: `${fake.url}/`, api_key: 'sk-test', model: null },
      { batchSize: 2 },
    )!;
    expect(client.model).toBe(DEFAULT_EMBEDDING_MODEL);
    const texts = ['solar panels', 'bread and yeast', 'fox in the forest'];
    const vectors = await client.embed(texts);
    expect(vectors).toHaveLength(3);
    vectors.forEach((vector, i) => {
      expect(dot(vector, vector)).toBeCloseTo(1, 5);
      expect(dot(vector, Float32Array.from(fakeEmbedding(texts[i]!)))).toBeCloseTo(1, 5);
    });
    const calls = fake.requests.filter((r) => r.path === '/v1/embeddings');
    expect(calls.map((c) => c.body.input)).toEqual([['solar panels', 'bread and yeast'], ['fox in the forest']]);
    expect(calls[0]!.headers.authorization).toBe('Bearer sk-test');
    expect(calls[0]!.body.model).toBe(DEFAULT_EMBEDDING_MODEL);
  });

  it('rejects with EmbeddingsError on HTTP errors, telling refused input apart', async () => {
    const client = createEmbeddingsClient({ base_url: fake.url, api_key: null, model: 'm' })!;
    fake.enqueueEmbeddings({ status: 500 }, { status: 400, body: { error: { message: 'too long' } } });
    const first = await client.embed(['x']).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(EmbeddingsError);
    expect((first as EmbeddingsError).rejectedInput).toBe(false);
    const second = await client.embed(['x']).catch((e: unknown) => e);
    expect((second as EmbeddingsError).message).toContain('too long');
    expect((second as EmbeddingsError).rejectedInput).toBe(true);
  });

  it('times out, and fails on an unreachable server', async () => {
    const slow = createEmbeddingsClient({ base_url: fake.url, api_key: null, model: 'm' }, { timeoutMs: 100 })!;
    fake.enqueueEmbeddings({ hang: true });
    await expect(slow.embed(['x'])).rejects.toThrow(/timed out/);
    await fake.close();
    await expect(slow.embed(['x'])).rejects.toBeInstanceOf(EmbeddingsError);
  });
});

describe('vectors', () => {
  it('normalises, round-trips through bytes, and compares', () => {
    const v = normalizeVector([3, 4])!;
    expect([...v].map((x) => Number(x.toFixed(3)))).toEqual([0.6, 0.8]);
    const back = decodeVector(encodeVector(v))!;
    expect(dot(back, v)).toBeCloseTo(1, 6);
    expect(normalizeVector([0, 0])).toBeNull();
    expect(decodeVector(Buffer.from([1, 2, 3]))).toBeNull();
    expect(dot(v, new Float32Array(3))).toBe(0);
  });
});
