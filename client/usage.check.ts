/**
 * Compiled by `npm run typecheck` (never run): the generated client's types
 * must accept what the API accepts and refuse what it refuses, so a change of
 * a route's request or response schema that breaks a caller fails the build.
 * Each `@ts-expect-error` must stay an error: were the types to loosen (say,
 * to `any`), the directive itself would fail the check.
 */
import { createGatehouseClient } from './index.js';

const client = createGatehouseClient('http://127.0.0.1:58123', 'token');

/** POST /message with wait: the final state's reply text is `string | null`. */
export async function replyText(): Promise<string | null | undefined> {
  const r = await client.POST('/api/v1/message', {
    body: { platform: 'cli', user_id: 'me', chat_id: 'me', text: 'hello', wait: true },
    params: { header: { 'Idempotency-Key': 'k-1' } },
  });
  if (r.error) {
    // Every error answer is the envelope or the idempotency conflict's `{error: string}`.
    const code: string = typeof r.error.error === 'string' ? 'CONFLICT' : r.error.error.code;
    void code;
    return undefined;
  }
  // 202 (`status: "accepted"`) or 200 with the final state: the status field tells them apart.
  if (r.data?.status === 'accepted') return undefined;
  return r.data?.response;
}

/** Typed query parameters: integers are numbers, booleans booleans. */
export async function recentLogs(): Promise<number | undefined> {
  const r = await client.GET('/api/v1/logs', { params: { query: { limit: 10, offset: 0, follow: false } } });
  // 200 is a JSON page, or (follow=true) an event stream read as text.
  return typeof r.data === 'object' ? r.data.total : undefined;
}

/** Wrong requests do not compile. */
export async function refused(): Promise<void> {
  // @ts-expect-error `text` is required by POST /message.
  await client.POST('/api/v1/message', { body: { platform: 'cli', user_id: 'me', chat_id: 'me' } });
  // @ts-expect-error `limit` is an integer, not a string.
  await client.GET('/api/v1/logs', { params: { query: { limit: '10' } } });
  // @ts-expect-error no such path.
  await client.GET('/api/v1/nowhere');
  const health = await client.GET('/api/v1/health');
  // @ts-expect-error `status` is one of three words, never a number.
  const status: number | undefined = health.data?.status;
  void status;
}
