import { created, defineRoute, type RouteDef } from '../http/route.js';
import { presentCronJob, presentCronRun } from './cron.presenter.js';
import {
  createCronBody,
  cronJobDeletedSchema,
  cronJobListSchema,
  cronJobSchema,
  cronParams,
  cronRunListSchema,
  cronRunSchema,
  cronRunsQuery,
  updateCronBody,
} from './cron.schema.js';
import { CronService, type CronServiceDeps } from './cron.service.js';

/**
 * Cron API (spec: Cron; DECISIONS §2, §4, §9). Every operation needs an admin
 * token, reads included. Unknown ids answer 404.
 */
export function cronRoutes(deps: CronServiceDeps): RouteDef[] {
  const service = new CronService(deps);
  const tags = ['cron'];
  const authorization = (authorized: boolean) =>
    defineRoute({
      method: 'POST',
      path: `/cron/:cron_id/${authorized ? 'authorize' : 'revoke'}`,
      permission: 'admin',
      summary: authorized
        ? 'Authorise a cron job to run under the standard and extended profiles'
        : "Withdraw a cron job's authorisation",
      tags,
      params: cronParams,
      responses: [{ status: 200, description: 'The job after the change', schema: cronJobSchema }],
      handler: async (_ctx, { params }) => presentCronJob(await service.setAuthorized(params.cron_id, authorized)),
    });
  return [
    defineRoute({
      method: 'GET',
      path: '/cron',
      permission: 'admin',
      summary: 'Every cron job, oldest first',
      tags,
      responses: [{ status: 200, description: 'The jobs', schema: cronJobListSchema }],
      handler: async () => ({ items: (await service.list()).map(presentCronJob) }),
    }),
    defineRoute({
      method: 'POST',
      path: '/cron',
      permission: 'admin',
      summary: 'Create a cron job (five-field schedule, UTC); it starts unauthorised',
      tags,
      body: createCronBody,
      responses: [{ status: 201, description: 'The created job, unauthorised', schema: cronJobSchema }],
      handler: async (_ctx, { body }) => created(presentCronJob(await service.create(body))),
    }),
    defineRoute({
      method: 'GET',
      path: '/cron/:cron_id',
      permission: 'admin',
      summary: 'One cron job',
      tags,
      params: cronParams,
      responses: [{ status: 200, description: 'The job', schema: cronJobSchema }],
      handler: async (_ctx, { params }) => presentCronJob(await service.get(params.cron_id)),
    }),
    defineRoute({
      method: 'PUT',
      path: '/cron/:cron_id',
      permission: 'admin',
      summary: 'Update a cron job; a new schedule or prompt withdraws its authorisation',
      tags,
      params: cronParams,
      body: updateCronBody,
      responses: [{ status: 200, description: 'The job after the change', schema: cronJobSchema }],
      handler: async (_ctx, { params, body }) => presentCronJob(await service.update(params.cron_id, body)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/cron/:cron_id',
      permission: 'admin',
      summary: 'Delete a cron job and its run history',
      tags,
      params: cronParams,
      responses: [{ status: 200, description: 'Deleted', schema: cronJobDeletedSchema }],
      handler: async (_ctx, { params }) => {
        await service.remove(params.cron_id);
        return { id: params.cron_id, deleted: true };
      },
    }),
    authorization(true),
    authorization(false),
    defineRoute({
      method: 'GET',
      path: '/cron/:cron_id/runs',
      permission: 'admin',
      summary: "A cron job's runs, newest first",
      tags,
      params: cronParams,
      query: cronRunsQuery,
      responses: [{ status: 200, description: 'The runs, newest first', schema: cronRunListSchema }],
      handler: async (_ctx, { params, query }) => ({
        items: (await service.runs(params.cron_id, query.limit)).map(presentCronRun),
      }),
    }),
    defineRoute({
      method: 'POST',
      path: '/cron/:cron_id/trigger',
      permission: 'admin',
      summary: 'Run a cron job now; answers the run once its turn is submitted (or skipped)',
      tags,
      params: cronParams,
      responses: [
        { status: 200, description: 'The run, once its turn is submitted (or skipped)', schema: cronRunSchema },
      ],
      handler: async (_ctx, { params }) => presentCronRun(await service.trigger(params.cron_id)),
    }),
  ];
}
