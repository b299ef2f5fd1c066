/**
 * Session titles and message search on GET /sessions (`title`, `?q=`), on every store: the title is the first
 * user message (cut), else `<platform> · <user>`; `q` keeps the sessions whose current context holds the text,
 * each with its newest matching message, paged and scoped to the caller's own sessions (DECISIONS §18).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoReply } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { testBackends } from '../helpers/stores.js';

const ALICE = { 'x-api-token': 'alice-token-0123456789abcdef' };
const BOB = { 'x-api-token': 'bob-token-0123456789abcdef' };
const PRINCIPALS = {
  gateway: {
    auth: {
      principals: [
        { id: 'alice', tokens: [ALICE['x-api-token']] },
        { id: 'bob', tokens: [BOB['x-api-token']] },
      ],
    },
  },
};

interface Match {
  message_id: string;
  role: string;
  event_id: string | null;
  created_at: string;
  snippet: string;
}
interface SessionView {
  id: string;
  title: string;
  match?: Match;
}
interface SessionPage {
  items: SessionView[];
  pagination: { cursor: string | null; has_more: boolean; total: number };
}

const postgres = testBackends().find((b) => b.name === 'postgres')!;
const pgUrl = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && postgres.skip)(`session titles and search [${backend}]`, () => {
    const schema = `gh_search_${randomBytes(6).toString('hex')}`;
    const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

    beforeAll(async () => {
      if (backend === 'postgres') await adminQuery(`create schema ${schema}`);
    });
    afterAll(async () => {
      if (backend === 'postgres') await adminQuery(`drop schema if exists ${schema} cascade`);
    });

    const open = async (): Promise<Harness> => {
      if (backend === 'postgres') {
        await adminQuery(`drop schema if exists ${schema} cascade`);
        await adminQuery(`create schema ${schema}`);
      }
      const url = new URL(pgUrl);
      url.searchParams.set('options', `-c search_path=${schema}`);
      const storage = backend === 'postgres' ? { storage: { driver: 'postgres', url: url.toString() } } : {};
      return rig.open({ config: { ...storage, ...PRINCIPALS } });
    };

    const say = async (h: Harness, chat: string, text: string, headers: Record<string, string> = ALICE) => {
      const res = await h.message({ platform: 'web', user_id: 'u', chat_id: chat, text, wait: true }, headers);
      expect(res.statusCode).toBe(200);
      return res.json<{ session_key: string; event_id: string }>();
    };
    const list = async (h: Harness, query: string, headers: Record<string, string> = ALICE) => {
      const res = await h.inject({ method: 'GET', url: `/api/v1/sessions?${query}`, headers });
      expect(res.statusCode).toBe(200);
      return res.json<SessionPage>();
    };

    it('titles a session by its first user message (one line, cut near 60 characters), else platform · user', async () => {
      const h = await open();
      const long = await say(
        h,
        'long',
        'Please summarise\n the quarterly report for the northern region and list every open risk item',
      );
      await say(h, 'long', 'a later message that is not the title');
      const short = await say(h, 'short', '  Reset my password  ');
      const empty = await h.inject({ method: 'POST', url: '/api/v1/sessions', headers: ALICE, payload: {} });
      const emptyId = empty.json<SessionView>().id;
      expect(empty.json<SessionView>().title).toMatch(/^api · chat_/);

      const titles = new Map((await list(h, 'limit=10')).items.map((s) => [s.id, s.title]));
      const cut = titles.get(long.session_key)!;
      expect(cut.startsWith('Please summarise the quarterly report for the northern')).toBe(true);
      expect(cut.endsWith('…')).toBe(true);
      expect(cut.length).toBeLessThanOrEqual(60);
      expect(titles.get(short.session_key)).toBe('Reset my password');
      expect(titles.get(emptyId)).toMatch(/^api · chat_/);

      const one = await h.inject({
        method: 'GET',
        url: `/api/v1/sessions/${encodeURIComponent(short.session_key)}`,
        headers: ALICE,
      });
      expect(one.json<SessionView>().title).toBe('Reset my password');
    });

    it('q finds sessions by message text: case-insensitive, wildcards literal, the newest match with its turn', async () => {
      const h = await open();
      const blue = await say(h, 'blue', 'The invoice number is INV-42');
      const again = await say(h, 'blue', 'resend invoice please');
      await say(h, 'red', 'weather tomorrow?');
      await say(h, 'pct', 'discount of 100% today');

      const found = await list(h, 'q=INVOICE');
      expect(found.items.map((s) => s.id)).toEqual([blue.session_key]);
      expect(found.pagination.total).toBe(1);
      // The echo reply repeats the text: the newest match is the assistant's answer to the second turn.
      expect(found.items[0]!.match).toMatchObject({ event_id: again.event_id });
      expect(found.items[0]!.match!.snippet.toLowerCase()).toContain('invoice');

      // `%` matches only itself; `_` likewise.
      expect((await list(h, `q=${encodeURIComponent('100%')}`)).items).toHaveLength(1);
      expect((await list(h, `q=${encodeURIComponent('0_ t')}`)).items).toHaveLength(0);
      expect((await list(h, 'q=nothing-like-this')).items).toEqual([]);
      // Without q, no match field.
      expect((await list(h, 'limit=10')).items.every((s) => s.match === undefined)).toBe(true);
    });

    it('q is paged and scoped: another principal never finds them, an admin does', async () => {
      const h = await open();
      for (const chat of ['p1', 'p2', 'p3']) await say(h, chat, `shared needle in ${chat}`);
      await say(h, 'bob1', 'needle of bob', BOB);

      const first = await list(h, 'q=needle&limit=2');
      expect(first.items).toHaveLength(2);
      expect(first.pagination).toMatchObject({ has_more: true, total: 3 });
      const second = await list(h, `q=needle&limit=2&cursor=${first.pagination.cursor}`);
      expect(second.items).toHaveLength(1);
      expect(second.pagination.has_more).toBe(false);
      expect(new Set([...first.items, ...second.items].map((s) => s.id)).size).toBe(3);

      const bob = await list(h, 'q=needle', BOB);
      expect(bob.items.map((s) => s.title)).toEqual(['needle of bob']);
      expect((await list(h, 'q=needle&limit=10', adminHeaders)).pagination.total).toBe(4);
    });

    it('q is validated: empty after trimming or over 200 characters is a 400', async () => {
      const h = await open();
      for (const q of ['%20%20', 'x'.repeat(201)]) {
        const res = await h.inject({ method: 'GET', url: `/api/v1/sessions?q=${q}`, headers: ALICE });
        expect(res.statusCode).toBe(400);
      }
    });
  });
}
