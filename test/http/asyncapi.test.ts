/**
 * The AsyncAPI document (DECISIONS §14; ADR 0017): served with an api token,
 * valid for `@asyncapi/parser`, describing the WebSocket and the three SSE
 * streams; its payload schemas accept the frames the gateway builds and
 * refuse malformed ones.
 */
import { Parser } from '@asyncapi/parser';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/index.js';
import type { DescribedServerFrame } from '../../src/channels/index.js';
import { payloadChecker, type AsyncApiDoc } from '../helpers/asyncapi-payloads.js';
import { apiHeaders, useHarness } from '../helpers/harness.js';

/** The parser's diagnostic severity of an error (Spectral's `DiagnosticSeverity.Error`). */
const ERROR = 0;

describe('AsyncAPI document', () => {
  const t = useHarness({ roomyLimits: false, scope: 'all' });
  const fetchDoc = async (): Promise<AsyncApiDoc & Record<string, unknown>> => {
    const res = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/asyncapi.json', headers: apiHeaders });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    return res.json();
  };

  it('needs a token, like openapi.json', async () => {
    expect((await t.gateway.app.inject({ method: 'GET', url: '/api/v1/asyncapi.json' })).statusCode).toBe(401);
    expect(
      (await t.gateway.app.inject({ method: 'GET', url: '/api/asyncapi.json', headers: apiHeaders })).statusCode,
    ).toBe(200);
  });

  it('is a valid AsyncAPI 3.0 document (no parser errors)', async () => {
    const doc = await fetchDoc();
    expect(doc.asyncapi).toBe('3.0.0');
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(doc));
    const errors = diagnostics
      .filter((d) => d.severity.valueOf() === ERROR)
      .map((d) => `${d.path.join('.')}: ${d.message}`);
    expect(errors).toEqual([]);
    // The same check sees a broken document: an operation without its action.
    const broken = structuredClone(doc) as unknown as { operations: Record<string, Record<string, unknown>> };
    delete broken.operations.sendTurnEvents!.action;
    const parsed = await new Parser().parse(JSON.stringify(broken));
    expect(parsed.diagnostics.filter((d) => d.severity.valueOf() === ERROR)).not.toEqual([]);
    expect(document).toBeDefined();
    expect(
      document!
        .channels()
        .all()
        .map((c) => c.address()),
    ).toEqual(['/ws', '/sessions/{session_id}/messages', '/turns/{event_id}/events', '/logs']);
    const actions = Object.fromEntries(
      document!
        .operations()
        .all()
        .map((o) => [o.id(), o.action()]),
    );
    expect(actions).toEqual({
      receiveClientFrames: 'receive',
      sendServerFrames: 'send',
      sendMessageStream: 'send',
      sendTurnEvents: 'send',
      sendLogFollow: 'send',
    });
  });

  it('names every frame and event of each stream', async () => {
    const doc = await fetchDoc();
    const names = (channel: string) =>
      Object.values(doc.channels[channel]!.messages).map(
        (m) => doc.components.messages[m.$ref.replace('#/components/messages/', '')]!.name,
      );
    expect(names('websocket').sort()).toEqual(
      [
        ...['auth', 'message', 'interrupt', 'subscribe', 'unsubscribe', 'ping'],
        ...['auth_ok', 'accepted', 'delta', 'tool_call', 'tool_result', 'final', 'error'],
        ...['subscribed', 'unsubscribed', 'event', 'pong'],
      ].sort(),
    );
    expect(names('messageStream')).toEqual(['accepted', 'delta', 'tool_call', 'tool_result', 'done', 'error']);
    expect(names('turnEvents')).toEqual(['status', 'delta', 'tool_call', 'tool_result', 'done', 'error']);
    expect(names('logFollow')).toEqual(['log']);
    // The servers name the Host the document was asked at.
    expect(doc.servers).toMatchObject({ api: { host: 'localhost:80', pathname: '/api/v1', protocol: 'http' } });
  });

  it('its payload schemas accept well-formed payloads and refuse malformed ones', async () => {
    const check = payloadChecker(await fetchDoc());
    expect(check.errors('websocket', 'message', { type: 'message', text: 'hi', ref: 7 })).toEqual([]);
    expect(check.errors('websocket', 'message', { type: 'message', text: '' })).not.toEqual([]);
    expect(check.errors('websocket', 'pong', { type: 'pong' })).toEqual([]);
    expect(check.errors('websocket', 'delta', { type: 'delta', event_id: 'evt_1' })).not.toEqual([]);
    expect(check.errors('websocket', 'error', { type: 'error', error: { code: 'NOPE', message: 'x' } })).not.toEqual(
      [],
    );
    expect(check.errors('messageStream', 'accepted', { event_id: 'evt_1', session_key: 'gateway:api:x' })).toEqual([]);
    expect(check.errors('turnEvents', 'status', { status: 'running' })).toEqual([]);
    expect(check.errors('turnEvents', 'delta', { content: 3 })).not.toEqual([]);
    expect(
      check.errors('logFollow', 'log', {
        timestamp: '2026-11-21T10:00:00.000Z',
        level: 'warning',
        source: 'http',
        message: 'm',
        metadata: {},
      }),
    ).toEqual([]);
    expect(() => check.errors('logFollow', 'delta', {})).toThrow(/no message named delta/);
  });

  it('every frame the schemas describe is a frame the WebSocket types', () => {
    expectTypeOf<DescribedServerFrame>().toExtend<ServerFrame>();
    expectTypeOf<DescribedServerFrame['type']>().toEqualTypeOf<ServerFrame['type']>();
  });
});
