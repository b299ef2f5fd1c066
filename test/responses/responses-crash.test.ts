/**
 * A background response across kill -9 (DECISIONS §5, §22; ADR 0041): the
 * built gateway process, the official `openai` SDK as its client, and the
 * fake OpenAI server in this process as its model provider. What the ledger
 * says after the restart is what the response says; nothing is lost.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { chatRequests, echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { API_TOKEN, e2eHome, killNow, removeE2EHomes, startGateway } from '../e2e/helpers.js';

function client(url: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: API_TOKEN, maxRetries: 0, timeout: 15_000 });
}

describe('background responses across kill -9', () => {
  let fake: FakeOpenAI | undefined;
  afterEach(async () => {
    killAllNow();
    removeE2EHomes();
    await fake?.close();
  });

  it('the running response ends incomplete (process_restart), the queued one runs after the restart', async () => {
    fake = await startFakeOpenAI();
    fake.enqueue({ hang: true }); // the first turn's model call never answers: it is running at the kill
    fake.always(echoReply);
    const home = e2eHome(fake, { security: { rate_limits: { read: 100_000, write: 100_000 } } });
    const first = await startGateway(home);
    const sdk = client(first.url);
    const running = await sdk.responses.create({ model: 'gatehouse', input: 'the running one', background: true });
    const queued = await sdk.responses.create({
      model: 'gatehouse',
      input: 'the queued one',
      background: true,
      previous_response_id: running.id,
    });
    expect(queued.status).toBe('queued');
    await vi.waitFor(() => expect(chatRequests(fake!)).toHaveLength(1), { timeout: 10_000 });
    expect((await sdk.responses.retrieve(running.id)).status).toBe('in_progress');

    expect(await killNow(first)).toBe('SIGKILL');
    const second = await startGateway(home);
    const after = client(second.url);
    const settled = async (id: string) =>
      vi.waitFor(
        async () => {
          const polled = await after.responses.retrieve(id);
          expect(['completed', 'incomplete', 'failed', 'cancelled']).toContain(polled.status);
          return polled;
        },
        { timeout: 10_000, interval: 50 },
      );
    const wasRunning = await settled(running.id);
    expect(wasRunning.status).toBe('incomplete');
    expect(wasRunning.incomplete_details).toEqual({ reason: 'process_restart' });
    const wasQueued = await settled(queued.id);
    expect(wasQueued.status).toBe('completed');
    expect(wasQueued.output_text).toBe('fake: the queued one');
    // Run once, never re-run: the interrupted turn's text went to the model once, the queued one's once.
    const texts = chatRequests(fake).map(lastUserText);
    expect(texts.filter((text) => text === 'the running one')).toHaveLength(1);
    expect(texts.filter((text) => text === 'the queued one')).toHaveLength(1);
  });
});
