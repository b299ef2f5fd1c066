import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpStatusError, SseJsonClient, StreamErrorEvent } from './sse-client.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server answering every POST with `reply(body)`; counts the connections it accepted. */
async function serve(reply: (body: string, res: ServerResponse) => void) {
  const state = { connections: 0, bodies: [] as string[], headers: [] as Record<string, unknown>[] };
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      state.bodies.push(body);
      state.headers.push(req.headers);
      reply(body, res);
    });
  });
  server.on('connection', () => state.connections++);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1/chat/completions`, state };
}

async function collect(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

describe('SseJsonClient', () => {
  it('reads data events to [DONE] across chunk boundaries, and reuses one keep-alive connection', async () => {
    const { url, state } = await serve((_body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': keepalive comment\n\ndata: {"n":1}\n\nda');
      res.write('ta: {"n":2}\r\n\r\nevent: x\ndata: {"n":');
      res.end('3}\n\ndata: [DONE]\n\n');
    });
    const client = new SseJsonClient(url, { authorization: 'Bearer k' });
    for (let i = 0; i < 3; i++) {
      const events = await collect(await client.stream({ i }, new AbortController().signal));
      expect(events).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    }
    expect(state.connections).toBe(1);
    expect(state.bodies).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
    expect(state.headers[0]).toMatchObject({
      authorization: 'Bearer k',
      'content-type': 'application/json',
      accept: 'text/event-stream',
    });
    client.close();
  });

  it('rejects a non-2xx answer with its status and body, and an error event inside the stream', async () => {
    let n = 0;
    const { url } = await serve((_body, res) => {
      if (n++ === 0) {
        res.writeHead(429, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'slow down' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"error":{"message":"overloaded"}}\n\n');
    });
    const client = new SseJsonClient(url, {});
    const refused = await client.stream({}, new AbortController().signal).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HttpStatusError);
    expect(refused).toMatchObject({ status: 429, body: { error: { message: 'slow down' } } });
    const failed = await collect(await client.stream({}, new AbortController().signal)).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StreamErrorEvent);
    expect((failed as StreamErrorEvent).error).toEqual({ message: 'overloaded' });
    client.close();
  });

  it('stops when the signal fires mid-stream', async () => {
    const { url } = await serve((_body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // and never more
    });
    const client = new SseJsonClient(url, {});
    const controller = new AbortController();
    const seen: unknown[] = [];
    const err = await (async () => {
      for await (const item of await client.stream({}, controller.signal)) {
        seen.push(item);
        controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(seen).toEqual([{ n: 1 }]);
    expect(err).toBeInstanceOf(Error); // the connection is torn down: the iteration ends with its error
    client.close();
  });
});
