import { z } from 'zod';
import type { AuthConfig } from '../config/config.schema.js';
import { ApiError, errors } from '../http/errors.js';
import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { objectBody } from '../http/validation.js';
import { pairedSchema, pairingCodeSchema } from './pairing.schema.js';
import type { PairingService } from './pairing.service.js';

const nonEmpty = z.string().min(1, 'must not be empty');

const ISSUE_SUMMARY = 'Issue a single-use pairing code for a platform (201 {code, ttl_seconds}); pairing mode only';
const VERIFY_SUMMARY = 'Bind platform:user_id with a pairing code; 401 on failure, 429 while locked; pairing mode only';

/** What both variants (pairing mode or not) declare, so the document does not depend on the mode. */
const ISSUE_CONTRACT = {
  responses: [
    {
      status: 201,
      description: 'The code, single use, valid `ttl_seconds`',
      schema: pairingCodeSchema,
      headers: ['Cache-Control'],
    },
  ],
  // 404: the auth mode is not pairing.
  errors: [404],
};
const VERIFY_CONTRACT = {
  responses: [{ status: 200, description: 'Paired', schema: pairedSchema }],
  // 404: the auth mode is not pairing; 429: locked after failed attempts (with Retry-After), in every profile.
  errors: [404, 429],
};

/** POST /pair body: the platform the code will pair users of (same bounds as POST /message). */
const issueBody = objectBody({ platform: nonEmpty.max(100) });

/** POST /pair/verify body. */
const verifyBody = objectBody({
  platform: nonEmpty.max(100),
  user_id: nonEmpty.max(200),
  code: nonEmpty.max(64),
});

/**
 * POST /pair (admin) and POST /pair/verify (api); spec: Pairing, States →
 * "Pairing and lockout"; DECISIONS §4. Both count in the `write` rate group.
 * Unless `gateway.auth.mode` is `pairing` both answer 404 (after the token
 * check, before any body validation), so other modes never reveal their shape.
 */
export function pairingRoutes(deps: { service: PairingService; auth: AuthConfig }): RouteDef[] {
  const { service, auth } = deps;
  if (auth.mode !== 'pairing') {
    const absent = (): never => {
      throw errors.notFound('pairing (auth mode is not pairing)');
    };
    return [
      defineRoute({
        method: 'POST',
        path: '/pair',
        permission: 'admin',
        summary: ISSUE_SUMMARY,
        tags: ['pairing'],
        ...ISSUE_CONTRACT,
        handler: absent,
      }),
      defineRoute({
        method: 'POST',
        path: '/pair/verify',
        permission: 'api',
        summary: VERIFY_SUMMARY,
        tags: ['pairing'],
        ...VERIFY_CONTRACT,
        handler: absent,
      }),
    ];
  }
  return [
    defineRoute({
      method: 'POST',
      path: '/pair',
      permission: 'admin',
      summary: ISSUE_SUMMARY,
      tags: ['pairing'],
      body: issueBody,
      ...ISSUE_CONTRACT,
      handler: async (ctx, { body }) => {
        const issued = await service.issue({
          platform: body.platform,
          ip: ctx.ip,
          issuer: ctx.principal.fingerprint ?? 'anonymous',
        });
        // The code is a secret: keep it out of every cache.
        return new HttpResult(
          201,
          { code: issued.code, ttl_seconds: issued.ttlSeconds },
          { 'cache-control': 'no-store' },
        );
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/pair/verify',
      permission: 'api',
      summary: VERIFY_SUMMARY,
      tags: ['pairing'],
      body: verifyBody,
      ...VERIFY_CONTRACT,
      handler: async (ctx, { body }) => {
        const result = await service.verify({
          platform: body.platform,
          userId: body.user_id,
          code: body.code,
          ip: ctx.ip,
        });
        if (result.ok) return { status: 'paired', platform: body.platform, user_id: body.user_id };
        if (result.reason === 'locked') {
          throw new ApiError(
            'RATE_LIMITED',
            'too many failed pairing attempts; try again later',
            { retry_after_seconds: result.retryAfterSeconds },
            { 'retry-after': String(result.retryAfterSeconds) },
          );
        }
        throw errors.unauthorized('invalid pairing code');
      },
    }),
  ];
}
