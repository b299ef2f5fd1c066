/**
 * GET /logs over `app.inject` (and one real socket for `follow=true`):
 * happy paths, parameter errors, security, and the no-secrets rule.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { secretValues } from '../../src/config/config.redact.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createLogPipeline, logsDir, type LogEntry, type LogPipeline } from '../../src/logs/index.js';
import { createTokenScrubber } from '../../src/security/audit.js';
import { adminHeaders, apiHeaders, ROOMY_LIMITS, useHarness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';

const SECRET = 'sk-live-DO-NOT-LOG-4f9a1c77e2';
const BUFFER_ENTRIES = 40;

interface LogsBody {
  items: LogEntry[];
  total: number;
  limit: number;
  offset: number;
  partial?: true;
}

interface ErrorBody {
  error: { code: string; message: string; details: { path: string; message: string }[]; request_id: string };
}

describe('GET /logs', () => {
  let pipeline: LogPipeline;
  const stdout: string[] = [];
  const clock = new ManualClock(Date.UTC(2026, 10, 21, 10, 0, 0, 0));
  // One gateway for the block, logging through a pipeline on the same clock (GET /logs serves from it).
  const rig = useHarness({
    scope: 'all',
    config: { provider: { api_key: SECRET }, logs: { level: 'debug', buffer_entries: BUFFER_ENTRIES } },
    logs: (config) =>
      (pipeline = createLogPipeline({
        dataDir: config.data_dir,
        level: config.logs.level,
        bufferEntries: config.logs.buffer_entries,
        scrub: createTokenScrubber(secretValues(config)),
        stdout: { write: (line) => void stdout.push(line) },
        clock,
      })),
  });
  /** Logs one line per message under `source`, one second apart. */
  const logAt = (source: string, level: 'debug' | 'info' | 'warn' | 'error', message: string): string => {
    clock.advance(1000);
    pipeline.logger.child({ source })[level]({ seq: message }, message);
    return new Date(clock.now()).toISOString();
  };
  const get = async (query: string, headers: Record<string, string> = adminHeaders) =>
    rig.gateway.app.inject({ method: 'GET', url: `/api/v1/logs${query}`, headers });
  const list = async (query: string): Promise<LogsBody> => {
    const res = await get(query);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<LogsBody>();
  };
  const messages = (body: LogsBody): string[] => body.items.map((e) => e.message);
  /** The rig's gateway on a real socket (listening once, whichever test asks first). */
  const listening = async (): Promise<string> => {
    const { server } = rig.gateway.app;
    if (!server.listening) return rig.gateway.app.listen({ host: '127.0.0.1', port: 0 });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  describe('happy', () => {
    it('answers newest first with the defaults', async () => {
      logAt('order', 'info', 'first');
      logAt('order', 'info', 'second');
      logAt('order', 'info', 'third');
      const body = await list('?source=order');
      expect(messages(body)).toEqual(['third', 'second', 'first']);
      expect(body).toMatchObject({ total: 3, limit: 100, offset: 0 });
      expect(body.items[0]).toEqual({
        timestamp: new Date(clock.now()).toISOString(),
        level: 'info',
        source: 'order',
        message: 'third',
        metadata: { seq: 'third' },
      });
      const alias = await rig.gateway.app.inject({
        method: 'GET',
        url: '/api/logs?source=order',
        headers: adminHeaders,
      });
      expect(alias.json<LogsBody>().total).toBe(3);
    });

    it('filters by minimum level', async () => {
      logAt('levels', 'debug', 'd');
      logAt('levels', 'info', 'i');
      logAt('levels', 'warn', 'w');
      logAt('levels', 'error', 'e');
      expect(messages(await list('?source=levels'))).toEqual(['e', 'w', 'i', 'd']);
      expect(messages(await list('?source=levels&level=debug'))).toEqual(['e', 'w', 'i', 'd']);
      expect(messages(await list('?source=levels&level=info'))).toEqual(['e', 'w', 'i']);
      expect(messages(await list('?source=levels&level=warning'))).toEqual(['e', 'w']);
      expect(messages(await list('?source=levels&level=error'))).toEqual(['e']);
      expect((await list('?source=levels&level=warning')).items.map((e) => e.level)).toEqual(['error', 'warning']);
    });

    it('filters by exact source', async () => {
      logAt('alpha', 'info', 'a1');
      logAt('alphabet', 'info', 'ab1');
      logAt('alpha', 'info', 'a2');
      expect(messages(await list('?source=alpha'))).toEqual(['a2', 'a1']);
      expect(messages(await list('?source=alp'))).toEqual([]);
    });

    it('filters by since and until, both inclusive', async () => {
      const t1 = logAt('timed', 'info', 't1');
      const t2 = logAt('timed', 'info', 't2');
      const t3 = logAt('timed', 'info', 't3');
      expect(messages(await list(`?source=timed&since=${t2}`))).toEqual(['t3', 't2']);
      expect(messages(await list(`?source=timed&until=${t2}`))).toEqual(['t2', 't1']);
      expect(messages(await list(`?source=timed&since=${t2}&until=${t2}`))).toEqual(['t2']);
      expect(messages(await list(`?source=timed&since=${t1}&until=${t3}`))).toEqual(['t3', 't2', 't1']);
    });

    it('pages with limit and offset and reports the total', async () => {
      for (let i = 1; i <= 7; i++) logAt('paged', 'info', `p${i}`);
      const first = await list('?source=paged&limit=3');
      expect(messages(first)).toEqual(['p7', 'p6', 'p5']);
      expect(first).toMatchObject({ total: 7, limit: 3, offset: 0 });
      expect(messages(await list('?source=paged&limit=3&offset=3'))).toEqual(['p4', 'p3', 'p2']);
      expect(messages(await list('?source=paged&limit=3&offset=6'))).toEqual(['p1']);
      expect(await list('?source=paged&limit=3&offset=7')).toMatchObject({ items: [], total: 7, offset: 7 });
      expect((await list('?limit=1000')).limit).toBe(1000);
    });

    it('reads the daily files when `since` reaches back past the ring buffer', async () => {
      const since = new Date(clock.now()).toISOString();
      for (let i = 1; i <= BUFFER_ENTRIES + 10; i++) logAt('bulk', 'info', `b${i}`);
      const body = await list(`?source=bulk&since=${since}&limit=1000`);
      expect(body.items).toHaveLength(BUFFER_ENTRIES + 10);
      expect(body.total).toBe(BUFFER_ENTRIES + 10);
      expect(body.items[0]!.message).toBe(`b${BUFFER_ENTRIES + 10}`);
      expect(body.items.at(-1)!.message).toBe('b1');
      // Without `since` only the ring buffer answers.
      expect((await list('?source=bulk&limit=1000')).total).toBeLessThan(BUFFER_ENTRIES + 1);
    });
  });

  describe('errors', () => {
    it.each([
      ['?limit=0', 'query.limit'],
      ['?limit=1001', 'query.limit'],
      ['?limit=abc', 'query.limit'],
      ['?limit=1.5', 'query.limit'],
      ['?offset=-1', 'query.offset'],
      ['?offset=x', 'query.offset'],
      ['?level=verbose', 'query.level'],
      ['?level=WARNING', 'query.level'],
      ['?since=yesterday', 'query.since'],
      ['?since=2026-13-45T00:00:00Z', 'query.since'],
      ['?until=soon', 'query.until'],
      ['?source=', 'query.source'],
      ['?follow=maybe', 'query.follow'],
      ['?since=2026-11-22T00:00:00.000Z&until=2026-11-21T00:00:00.000Z', 'query.until'],
    ])('%s → 400 naming %s', async (query, path) => {
      const res = await get(query);
      expect(res.statusCode).toBe(400);
      const body = res.json<ErrorBody>();
      expect(body.error.code).toBe('BAD_REQUEST');
      expect(body.error.details.map((d) => d.path)).toContain(path);
      expect(body.error.request_id).toBe(res.headers['x-request-id']);
    });
  });

  describe('security', () => {
    it('is admin only', async () => {
      expect((await get('', {})).statusCode).toBe(401);
      expect((await get('', apiHeaders)).statusCode).toBe(403);
      expect((await get('?follow=true', apiHeaders)).statusCode).toBe(403);
      expect((await get('', { authorization: `Bearer ${adminHeaders['x-api-token']}` })).statusCode).toBe(200);
    });

    it('is counted in the read rate group', async () => {
      const res = await get('');
      expect(res.headers['x-ratelimit-limit']).toBe(String(ROOMY_LIMITS.read));
    });

    it('never shows a configured secret: not in the buffer, the response, the day file or stdout', async () => {
      pipeline.logger
        .child({ source: 'secrets' })
        .warn(
          { note: `the key ${SECRET} leaked`, nested: { value: SECRET }, api_key: SECRET },
          `calling with key ${SECRET}`,
        );
      const entries = pipeline.buffer.query({ source: 'secrets' }, { limit: 10, offset: 0 }).items;
      expect(entries).toHaveLength(1);
      expect(entries[0]!.message).toBe('calling with key ***');
      expect(entries[0]!.metadata).toEqual({ note: 'the key *** leaked', nested: { value: '***' }, api_key: '***' });
      expect(JSON.stringify(entries)).not.toContain(SECRET);

      const res = await get('?source=secrets');
      expect(res.json<LogsBody>().items).toHaveLength(1);
      expect(res.body).not.toContain(SECRET);

      await pipeline.flush();
      const dir = logsDir(rig.config.data_dir);
      const files = readdirSync(dir);
      expect(files.length).toBeGreaterThan(0);
      const written = files.map((name) => readFileSync(join(dir, name), 'utf8')).join('');
      expect(written).toContain('calling with key ***');
      expect(written).not.toContain(SECRET);
      expect(stdout.join('')).not.toContain(SECRET);
    });
  });

  describe('follow=true', () => {
    it('a page carries X-Log-Cursor; a follow from it misses nothing logged in between and repeats nothing', async () => {
      const base = await listening();
      const listenersBefore = pipeline.buffer.stats().listeners;
      logAt('cursor', 'info', 'on the page');
      const page = await get('?source=cursor');
      const cursor = page.headers['x-log-cursor'] as string;
      expect(cursor).toMatch(new RegExp(`^${pipeline.buffer.run}-\\d+$`));
      expect(page.json<LogsBody>().items.map((e) => e.message)).toEqual(['on the page']);
      logAt('cursor', 'info', 'between the page and the follow');

      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        httpGet(
          `${base}/api/v1/logs?follow=true&source=cursor`,
          { headers: { ...adminHeaders, 'last-event-id': cursor }, agent: false },
          resolve,
        ).on('error', reject);
      });
      expect(res.statusCode).toBe(200);
      logAt('cursor', 'info', 'after the follow');
      res.setEncoding('utf8');
      let text = '';
      for await (const chunk of res) {
        text += chunk as string;
        if (text.includes('after the follow')) break;
      }
      expect(parseSse(text).map((e) => (e.data as LogEntry).message)).toEqual([
        'between the page and the follow',
        'after the follow',
      ]);
      await vi.waitFor(() => expect(pipeline.buffer.stats().listeners).toBe(listenersBefore));
    });

    it('streams entries logged after the subscription as `log` events, filters applied', async () => {
      const base = await listening();
      const listenersBefore = pipeline.buffer.stats().listeners;
      logAt('follow', 'info', 'before the subscription');
      // A real socket of its own (no pooled keep-alive connection outliving the test).
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        httpGet(
          `${base}/api/v1/logs?follow=true&source=follow&level=info`,
          { headers: adminHeaders, agent: false },
          resolve,
        ).on('error', reject);
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/event-stream');
      expect(pipeline.buffer.stats().listeners).toBe(listenersBefore + 1);

      logAt('follow', 'debug', 'below the level');
      logAt('elsewhere', 'info', 'another source');
      logAt('follow', 'info', 'after the subscription');
      logAt('follow', 'error', 'and one more');

      res.setEncoding('utf8');
      let text = '';
      for await (const chunk of res) {
        text += chunk as string;
        if (text.includes('and one more')) break; // leaving the loop destroys the response and its socket
      }
      const events = parseSse(text);
      expect(events.map((e) => e.event)).toEqual(['log', 'log']);
      expect(events.map((e) => (e.data as LogEntry).message)).toEqual(['after the subscription', 'and one more']);
      expect(events[0]!.data).toMatchObject({
        level: 'info',
        source: 'follow',
        metadata: { seq: 'after the subscription' },
      });

      // The client went away: the subscription ends with it.
      await vi.waitFor(() => expect(pipeline.buffer.stats().listeners).toBe(listenersBefore));
    });
  });
});
