import { describe, expect, it } from 'vitest';
import { createGatehouseClient } from '../../client/index.js';
import { API_TOKEN, useHarness } from '../helpers/harness.js';

/** The generated typed client (ADR 0016) against a listening in-process gateway. */
describe('the typed client', () => {
  const t = useHarness();

  it('submits a message and reads the typed reply, the health report and a typed error', async () => {
    const client = createGatehouseClient(await t.gateway.listen(), API_TOKEN);
    const sent = await client.POST('/api/v1/message', {
      body: { platform: 'cli', user_id: 'me', chat_id: 'me', text: 'hello', wait: true },
    });
    expect(sent.response.status).toBe(200);
    if (sent.data?.status === 'accepted') throw new Error('expected the final result');
    expect(sent.data?.response).toBe('echo: hello');
    expect(sent.data?.message.role).toBe('assistant');

    const health = await client.GET('/api/v1/health');
    expect(health.data?.status).toBe('degraded');

    const missing = await client.GET('/api/v1/channels/{channel_name}', {
      params: { path: { channel_name: 'nope' } },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('NOT_FOUND');

    const logs = await client.GET('/api/v1/logs', { params: { query: { limit: 1 } } });
    expect(logs.response.status).toBe(403); // the api token is not admin
  });
});
