import { Validator } from '@seriousme/openapi-schema-validator';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { CronScheduler, CronSecurityProfile } from '../../src/scheduler/index.js';
import { getTurn } from '../../src/turns/turns.repo.js';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { ISO_MS } from './builders.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const MINUTE = 60_000;
/** ISO timestamp `minutes` after the base time. */
const at = (minutes: number): string => new Date(BASE + minutes * MINUTE).toISOString();

interface JobView {
  id: string;
  schedule: string;
  prompt: string;
  enabled: boolean;
  authorized: boolean;
  last_run: string | null;
  next_run: string | null;
  created_at: string;
  updated_at: string;
}

interface RunView {
  id: string;
  cron_id: string;
  scheduled_at: string;
  started_at: string | null;
  finished_at: string | null;
  status: string;
  event_id: string | null;
  reason: string | null;
  triggered_by: string;
}

interface ErrorView {
  error: { code: string; message: string; details: unknown; request_id: string };
}

/** A harness on a ManualClock at BASE, with the gateway's cron scheduler and request helpers. */
interface CronHarness extends Harness {
  scheduler: CronScheduler;
  /** A request with the admin token (plus `headers`). */
  admin(method: InjectOptions['method'], url: string, payload?: unknown): Promise<LightMyRequestResponse>;
  /** Creates a job and answers it. */
  create(body?: Record<string, unknown>): Promise<JobView>;
}

/** Adds the cron helpers to a harness. */
function cronHelpers(harness: Harness): CronHarness {
  const admin = (method: InjectOptions['method'], url: string, payload?: unknown) =>
    harness.inject({
      method,
      url,
      headers: adminHeaders,
      ...(payload === undefined ? {} : { payload: payload as InjectOptions['payload'] }),
    });
  return Object.assign(harness, {
    scheduler: harness.internals.cron,
    admin,
    async create(body: Record<string, unknown> = {}) {
      const res = await admin('POST', '/api/v1/cron', { schedule: '*/5 * * * *', prompt: 'daily report', ...body });
      expect(res.statusCode, res.body).toBe(201);
      return res.json<JobView>();
    },
  });
}

describe('cron API', () => {
  // The configured rate limits; time stands at BASE until a test moves it.
  const rig = useHarness({ clock: BASE, roomyLimits: false, autoOpen: false });
  const open = async (profile: CronSecurityProfile = 'standard') =>
    cronHelpers(await rig.open({ config: { security: { profile } } }));

  describe('happy', () => {
    it('POST /cron answers 201 with the job: unauthorised, enabled, next_run from now (UTC)', async () => {
      const h = await open();
      const res = await h.admin('POST', '/api/v1/cron', { schedule: ' 0  9 * * 1-5 ', prompt: 'standup notes' });
      expect(res.statusCode).toBe(201);
      const job = res.json<JobView>();
      expect(Object.keys(job).sort()).toEqual(
        [
          'id',
          'schedule',
          'prompt',
          'enabled',
          'authorized',
          'last_run',
          'next_run',
          'created_at',
          'updated_at',
        ].sort(),
      );
      expect(job).toMatchObject({
        schedule: '0 9 * * 1-5',
        prompt: 'standup notes',
        enabled: true,
        authorized: false,
        last_run: null,
        next_run: '2026-11-23T09:00:00.000Z', // 21 Nov 2026 is a Saturday
        created_at: at(0),
        updated_at: at(0),
      });
      expect(job.id).toMatch(/^cron_[0-9a-z]+$/);
      expect(job.created_at).toMatch(ISO_MS);
    });

    it('POST /cron with enabled false has no next_run; unknown fields, authorized included, are ignored', async () => {
      const h = await open();
      const job = await h.create({ enabled: false, authorized: true, bogus: 1 });
      expect(job).toMatchObject({ enabled: false, authorized: false, next_run: null });
      expect(job).not.toHaveProperty('bogus');
    });

    it('GET /cron lists every job oldest first; GET /cron/{id} answers one; /api alias too', async () => {
      const h = await open();
      const first = await h.create({ prompt: 'one' });
      const second = await h.create({ prompt: 'two' });
      const list = await h.admin('GET', '/api/v1/cron');
      expect(list.statusCode).toBe(200);
      expect(list.json<{ items: JobView[] }>().items).toEqual([first, second]);
      const one = await h.admin('GET', `/api/cron/${second.id}`);
      expect(one.statusCode).toBe(200);
      expect(one.json()).toEqual(second);
    });

    it('GET /cron with no jobs answers an empty list', async () => {
      const h = await open();
      expect((await h.admin('GET', '/api/v1/cron')).json()).toEqual({ items: [] });
    });

    it('authorize sets authorized (idempotently), revoke clears it', async () => {
      const h = await open();
      const job = await h.create();
      h.clock.advance(MINUTE);
      const authorized = await h.admin('POST', `/api/v1/cron/${job.id}/authorize`);
      expect(authorized.statusCode).toBe(200);
      expect(authorized.json()).toMatchObject({ id: job.id, authorized: true, updated_at: at(1) });
      const again = await h.admin('POST', `/api/v1/cron/${job.id}/authorize`);
      expect(again.statusCode).toBe(200);
      expect(again.json()).toMatchObject({ authorized: true });
      const revoked = await h.admin('POST', `/api/v1/cron/${job.id}/revoke`);
      expect(revoked.statusCode).toBe(200);
      expect(revoked.json()).toMatchObject({ authorized: false });
      expect((await h.admin('POST', `/api/v1/cron/${job.id}/revoke`)).json()).toMatchObject({ authorized: false });
    });

    it('PUT changes the fields given; a new prompt or schedule resets authorized, enabled alone keeps it', async () => {
      const h = await open();
      const job = await h.create();
      await h.admin('POST', `/api/v1/cron/${job.id}/authorize`);
      h.clock.advance(2 * MINUTE);

      const disabled = await h.admin('PUT', `/api/v1/cron/${job.id}`, { enabled: false });
      expect(disabled.statusCode).toBe(200);
      expect(disabled.json()).toMatchObject({ enabled: false, authorized: true, next_run: null, updated_at: at(2) });
      const enabled = await h.admin('PUT', `/api/v1/cron/${job.id}`, { enabled: true });
      expect(enabled.json()).toMatchObject({ enabled: true, authorized: true, next_run: at(5) });

      const samePrompt = await h.admin('PUT', `/api/v1/cron/${job.id}`, { prompt: 'daily report' });
      expect(samePrompt.json()).toMatchObject({ authorized: true });
      const newPrompt = await h.admin('PUT', `/api/v1/cron/${job.id}`, { prompt: 'weekly report' });
      expect(newPrompt.json()).toMatchObject({ prompt: 'weekly report', authorized: false, next_run: at(5) });

      await h.admin('POST', `/api/v1/cron/${job.id}/authorize`);
      const newSchedule = await h.admin('PUT', `/api/v1/cron/${job.id}`, { schedule: '0 12 * * *' });
      expect(newSchedule.json()).toMatchObject({
        schedule: '0 12 * * *',
        authorized: false,
        next_run: '2026-11-21T12:00:00.000Z',
      });

      const unchanged = await h.admin('PUT', `/api/v1/cron/${job.id}`, {});
      expect(unchanged.statusCode).toBe(200);
      expect(unchanged.json()).toEqual(newSchedule.json());
    });

    it('DELETE answers {id, deleted: true}; the job and its runs are gone', async () => {
      const h = await open();
      const job = await h.create();
      await h.admin('POST', `/api/v1/cron/${job.id}/trigger`);
      const res = await h.admin('DELETE', `/api/v1/cron/${job.id}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ id: job.id, deleted: true });
      expect((await h.admin('GET', `/api/v1/cron/${job.id}`)).statusCode).toBe(404);
      expect((await h.admin('GET', `/api/v1/cron/${job.id}/runs`)).statusCode).toBe(404);
      expect((await h.admin('GET', '/api/v1/cron')).json()).toEqual({ items: [] });
    });

    it('POST /trigger runs an authorised job now: the run with its turn, completed once the turn ends', async () => {
      const h = await open();
      const job = await h.create({ prompt: 'ping' });
      await h.admin('POST', `/api/v1/cron/${job.id}/authorize`);
      h.clock.advance(MINUTE);
      const res = await h.admin('POST', `/api/v1/cron/${job.id}/trigger`);
      expect(res.statusCode).toBe(200);
      const run = res.json<RunView>();
      expect(Object.keys(run).sort()).toEqual(
        [
          'id',
          'cron_id',
          'scheduled_at',
          'started_at',
          'finished_at',
          'status',
          'event_id',
          'reason',
          'triggered_by',
        ].sort(),
      );
      expect(run).toMatchObject({
        cron_id: job.id,
        scheduled_at: at(1),
        started_at: at(1),
        status: 'completed',
        reason: null,
        triggered_by: 'manual',
      });
      expect(run.finished_at).toMatch(ISO_MS);
      expect(run.id).toMatch(/^crun_/);
      expect(run.event_id).toMatch(/^evt_/);
      await h.scheduler.settled();
      const runs = (await h.admin('GET', `/api/v1/cron/${job.id}/runs`)).json<{ items: RunView[] }>().items;
      expect(runs).toEqual([{ ...run, status: 'completed', finished_at: expect.stringMatching(ISO_MS) as string }]);
      expect(await getTurn(h.internals.store.db, run.event_id!)).toMatchObject({
        sessionKey: `gateway:cron:${job.id}`,
        response: 'echo: ping',
      });
      expect((await h.admin('GET', `/api/v1/cron/${job.id}`)).json()).toMatchObject({
        last_run: at(1),
        next_run: at(5),
      });
    });

    it('POST /trigger of an unauthorised job under standard answers the skipped run', async () => {
      const h = await open('standard');
      const job = await h.create();
      const res = await h.admin('POST', `/api/v1/cron/${job.id}/trigger`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        status: 'skipped',
        reason: 'not_authorized',
        event_id: null,
        started_at: null,
        finished_at: at(0),
      });
    });

    it('GET /runs: newest first, default 10, limit 1..100, no offset; scheduled runs appear as the clock moves', async () => {
      const h = await open();
      const job = await h.create();
      for (let minute = 1; minute <= 12; minute++) {
        h.clock.set(BASE + minute * MINUTE);
        await h.scheduler.tick();
        if (minute !== 5 && minute !== 10) await h.admin('POST', `/api/v1/cron/${job.id}/trigger`);
      }
      const runs = async (query = '') =>
        (await h.admin('GET', `/api/v1/cron/${job.id}/runs${query}`)).json<{ items: RunView[] }>().items;
      const byDefault = await runs();
      expect(byDefault).toHaveLength(10);
      expect(byDefault.map((r) => r.scheduled_at)).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3].map(at));
      expect(byDefault[2]).toMatchObject({ triggered_by: 'schedule', status: 'skipped', reason: 'not_authorized' });
      expect((await runs('?limit=3')).map((r) => r.scheduled_at)).toEqual([at(12), at(11), at(10)]);
      expect(await runs('?limit=100')).toHaveLength(12);
      expect((await runs('?limit=2&offset=5')).map((r) => r.scheduled_at)).toEqual([at(12), at(11)]);
    });

    it('under minimal no token is needed and unauthorised jobs run on schedule', async () => {
      const h = await open('minimal');
      const create = await h.gateway.app.inject({
        method: 'POST',
        url: '/api/v1/cron',
        payload: { schedule: '*/5 * * * *', prompt: 'hello' },
      });
      expect(create.statusCode).toBe(201);
      const job = create.json<JobView>();
      h.clock.set(BASE + 5 * MINUTE);
      await h.scheduler.tick();
      await h.scheduler.settled();
      const runs = await h.gateway.app.inject({ method: 'GET', url: `/api/v1/cron/${job.id}/runs` });
      expect(runs.json<{ items: RunView[] }>().items).toEqual([
        expect.objectContaining({ scheduled_at: at(5), status: 'completed', triggered_by: 'schedule' }),
      ]);
    });
    it('the OpenAPI document describes every cron operation as admin and stays valid', async () => {
      const h = await open();
      const res = await h.admin('GET', '/api/v1/openapi.json');
      const doc = res.json<{ paths: Record<string, Record<string, { 'x-permission': string }>> }>();
      const result = await new Validator().validate(doc);
      expect(result.errors ?? []).toEqual([]);
      const operations = Object.entries(doc.paths)
        .filter(([path]) => path.startsWith('/api/v1/cron'))
        .flatMap(([path, methods]) =>
          Object.entries(methods).map(([method, op]) => [`${method} ${path}`, op['x-permission']]),
        );
      expect(operations.sort()).toEqual(
        [
          'delete /api/v1/cron/{cron_id}',
          'get /api/v1/cron',
          'get /api/v1/cron/{cron_id}',
          'get /api/v1/cron/{cron_id}/runs',
          'post /api/v1/cron',
          'post /api/v1/cron/{cron_id}/authorize',
          'post /api/v1/cron/{cron_id}/revoke',
          'post /api/v1/cron/{cron_id}/trigger',
          'put /api/v1/cron/{cron_id}',
        ].map((op) => [op, 'admin']),
      );
    });
  });

  describe('errors', () => {
    const scheduleError = async (h: CronHarness, schedule: unknown, method: 'POST' | 'PUT' = 'POST', id = '') => {
      const url = method === 'POST' ? '/api/v1/cron' : `/api/v1/cron/${id}`;
      const res = await h.admin(method, url, { schedule, prompt: 'x' });
      expect(res.statusCode, JSON.stringify(schedule)).toBe(400);
      const body = res.json<ErrorView>();
      expect(body.error.code).toBe('BAD_REQUEST');
      expect(body.error.request_id).toEqual(expect.any(String));
      const details = body.error.details as Array<{ path: string; message: string }>;
      expect(details.map((d) => d.path)).toEqual(['body.schedule']);
      return details[0]!.message;
    };

    it('POST /cron refuses schedules that are not five valid fields, saying why', async () => {
      const h = await open();
      expect(await scheduleError(h, '* * * *')).toMatch(/exactly five fields.*got 4/);
      expect(await scheduleError(h, '0 * * * * *')).toMatch(/got 6.*seconds and years are not supported/);
      expect(await scheduleError(h, '@daily')).toMatch(/nicknames such as @daily are not supported/);
      expect(await scheduleError(h, '61 * * * *')).toMatch(/invalid value for minute: 61/);
      expect(await scheduleError(h, '* * * 13 *')).toMatch(/month/);
      expect(await scheduleError(h, '5-1 * * * *')).toMatch(/larger than/);
      expect(await scheduleError(h, 'every day at noon ok')).toMatch(/illegal characters/);
      expect(await scheduleError(h, '0 0 30 2 *')).toMatch(/never fires/);
      expect(await scheduleError(h, '')).toMatch(/five-field/);
      expect(await scheduleError(h, 5)).toMatch(/string/);
      expect((await h.admin('GET', '/api/v1/cron')).json()).toEqual({ items: [] });
    });

    it('POST /cron refuses a missing, empty or blank prompt, a missing schedule, a non-boolean enabled, a non-object body', async () => {
      const h = await open();
      const bad = async (payload: unknown, path: string) => {
        const res = await h.admin('POST', '/api/v1/cron', payload);
        expect(res.statusCode, JSON.stringify(payload)).toBe(400);
        const details = res.json<ErrorView>().error.details as Array<{ path: string }>;
        expect(details.map((d) => d.path)).toContain(path);
      };
      await bad({ schedule: '* * * * *' }, 'body.prompt');
      await bad({ schedule: '* * * * *', prompt: '' }, 'body.prompt');
      await bad({ schedule: '* * * * *', prompt: '  \n ' }, 'body.prompt');
      await bad({ schedule: '* * * * *', prompt: 42 }, 'body.prompt');
      await bad({ prompt: 'x' }, 'body.schedule');
      await bad({ schedule: '* * * * *', prompt: 'x', enabled: 'true' }, 'body.enabled');
      await bad({ schedule: '* * * * *', prompt: 'x', enabled: 1 }, 'body.enabled');
      await bad([{ schedule: '* * * * *', prompt: 'x' }], 'body');
    });

    it('PUT refuses an invalid schedule, prompt or enabled and leaves the job as it was', async () => {
      const h = await open();
      const job = await h.create();
      await h.admin('POST', `/api/v1/cron/${job.id}/authorize`);
      expect(await scheduleError(h, '*/5 * * *', 'PUT', job.id)).toMatch(/exactly five fields/);
      expect((await h.admin('PUT', `/api/v1/cron/${job.id}`, { prompt: '' })).statusCode).toBe(400);
      expect((await h.admin('PUT', `/api/v1/cron/${job.id}`, { enabled: 'no' })).statusCode).toBe(400);
      expect((await h.admin('PUT', `/api/v1/cron/${job.id}`, { schedule: null })).statusCode).toBe(400);
      expect((await h.admin('GET', `/api/v1/cron/${job.id}`)).json()).toMatchObject({
        schedule: job.schedule,
        prompt: job.prompt,
        authorized: true,
      });
    });

    it('GET /runs refuses a limit outside 1..100 or not an integer', async () => {
      const h = await open();
      const job = await h.create();
      for (const limit of ['0', '101', '-1', 'abc', '1.5', '']) {
        const res = await h.admin('GET', `/api/v1/cron/${job.id}/runs?limit=${limit}`);
        expect(res.statusCode, `limit=${limit}`).toBe(400);
        expect(res.json<ErrorView>().error.code).toBe('BAD_REQUEST');
      }
    });

    it('an unknown id is 404 on every operation', async () => {
      const h = await open();
      const id = 'cron_doesnotexist';
      const calls: Array<[InjectOptions['method'], string, unknown?]> = [
        ['GET', `/api/v1/cron/${id}`],
        ['PUT', `/api/v1/cron/${id}`, { prompt: 'x' }],
        ['DELETE', `/api/v1/cron/${id}`],
        ['POST', `/api/v1/cron/${id}/authorize`],
        ['POST', `/api/v1/cron/${id}/revoke`],
        ['GET', `/api/v1/cron/${id}/runs`],
        ['POST', `/api/v1/cron/${id}/trigger`],
      ];
      for (const [method, url, payload] of calls) {
        const res = await h.admin(method, url, payload);
        expect(res.statusCode, `${method} ${url}`).toBe(404);
        expect(res.json<ErrorView>().error).toMatchObject({ code: 'NOT_FOUND', message: 'cron job not found' });
      }
    });
  });

  describe('security', () => {
    it('every cron operation, reads included, needs an admin token: api token → 403, none → 401', async () => {
      const h = await open('standard');
      const job = await h.create();
      const calls: Array<[InjectOptions['method'], string, unknown?]> = [
        ['GET', '/api/v1/cron'],
        ['POST', '/api/v1/cron', { schedule: '* * * * *', prompt: 'x' }],
        ['GET', `/api/v1/cron/${job.id}`],
        ['PUT', `/api/v1/cron/${job.id}`, { prompt: 'x' }],
        ['DELETE', `/api/v1/cron/${job.id}`],
        ['POST', `/api/v1/cron/${job.id}/authorize`],
        ['POST', `/api/v1/cron/${job.id}/revoke`],
        ['GET', `/api/v1/cron/${job.id}/runs`],
        ['POST', `/api/v1/cron/${job.id}/trigger`],
      ];
      for (const [method, url, payload] of calls) {
        const body = payload === undefined ? {} : { payload: payload as InjectOptions['payload'] };
        const api = await h.gateway.app.inject({ method, url, headers: apiHeaders, ...body });
        expect(api.statusCode, `${method} ${url} api token`).toBe(403);
        expect(api.json<ErrorView>().error.code).toBe('FORBIDDEN');
        const none = await h.gateway.app.inject({ method, url, ...body });
        expect(none.statusCode, `${method} ${url} no token`).toBe(401);
      }
      // Nothing changed: the job is as created, with no runs.
      expect((await h.admin('GET', `/api/v1/cron/${job.id}`)).json()).toEqual(job);
      expect((await h.admin('GET', `/api/v1/cron/${job.id}/runs`)).json()).toEqual({ items: [] });
    });
  });
});
