/**
 * Tracing off (the default, DECISIONS §21): a gateway whose config names a live OTLP receiver but leaves tracing
 * disabled sends it nothing, never loads the OpenTelemetry SDK (this file runs in a process of its own), sends
 * no trace context on model calls and shows no trace id on its turns.
 */
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { tracingSdkLoaded } from '../../src/tracing/index.js';
import { echoReply } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness } from '../helpers/harness.js';
import { startOtlpReceiver } from '../helpers/otlp-receiver.js';

describe('tracing off', async () => {
  const receiver = await startOtlpReceiver();
  afterAll(async () => {
    await receiver.close();
  });
  const rig = useHarness({
    fake: { always: echoReply },
    config: { tracing: { enabled: false, endpoint: receiver.url } },
  });

  it('sends the receiver nothing, loads no SDK, propagates nothing and records no trace id', async () => {
    const traceparent = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
    const res = await rig.message(
      { platform: 'cli', user_id: 'u', chat_id: 'c', text: 'hi', wait: true },
      { traceparent },
    );
    expect(res.statusCode).toBe(200);
    const eventId = res.json<{ event_id: string }>().event_id;

    const record = await rig.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders });
    expect(record.json<{ trace_id: string | null }>().trace_id).toBeNull();
    const call = rig.fake.requests.find((r) => r.path === '/v1/chat/completions')!;
    expect(call.headers.traceparent).toBeUndefined();

    // Whatever a shutdown would flush is flushed: still nothing arrives.
    await rig.internals.tracing.flush();
    await rig.gateway.shutdown(0);
    expect(receiver.posts).toBe(0);
    expect(receiver.spans).toEqual([]);

    expect(tracingSdkLoaded()).toBe(false);
    // The API package alone may be loaded by others (prom-client asks for it); nothing of the SDK is.
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter(
      (path) => path.includes('@opentelemetry/') && !path.includes('@opentelemetry/api/'),
    );
    expect(loaded).toEqual([]);
  });
});
