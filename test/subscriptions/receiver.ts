/**
 * A real HTTP receiver for subscription deliveries: listens on 127.0.0.1, records every request (headers and
 * raw body) and answers as the test scripts it — a status, a hang (never answering), or a call of the test's own.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { vi } from 'vitest';
import { Webhook } from 'standardwebhooks';

/** One request the receiver saw. */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { type: string; timestamp: string; data: Record<string, unknown> };
  /** The status it was answered with; null while unanswered (a hang). */
  answered: number | null;
}

/** How to answer one request: a status, `hang` (never answer), or close the socket without an answer. */
export type Answer = number | 'hang' | 'reset';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** The answers to give, in order; when empty, `fallback`. */
  script: Answer[];
  fallback: Answer;
  /** Called with each request as it arrives, once recorded and before its answer is chosen from `script`. */
  onRequest: ((request: Received) => void) | null;
  /** Requests by webhook-id. */
  byId(): Map<string, Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    script: [],
    fallback: 200,
    onRequest: null,
    byId() {
      const map = new Map<string, Received[]>();
      for (const each of receiver.received) map.set(each.id, [...(map.get(each.id) ?? []), each]);
      return map;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const seen: Received = {
        id: String(request.headers['webhook-id']),
        timestamp: String(request.headers['webhook-timestamp']),
        signature: String(request.headers['webhook-signature']),
        headers: request.headers,
        body,
        json: JSON.parse(body) as Received['json'],
        answered: null,
      };
      receiver.received.push(seen);
      receiver.onRequest?.(seen);
      const answer = receiver.script.length > 0 ? receiver.script.shift()! : receiver.fallback;
      if (answer === 'hang') {
        hanging.add(response);
        return;
      }
      if (answer === 'reset') {
        request.socket.destroy();
        return;
      }
      seen.answered = answer;
      response.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  return receiver;
}

/**
 * Verifies a request with the `standardwebhooks` package, as a subscriber would, at `nowMs` (the gateway's
 * clock: the timestamp check compares the header with the receiver's time). Throws when it does not verify.
 */
export function verifyDelivery(secret: string, request: Received, nowMs: number): unknown {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(nowMs);
  try {
    return new Webhook(secret).verify(request.body, {
      'webhook-id': request.id,
      'webhook-timestamp': request.timestamp,
      'webhook-signature': request.signature,
    });
  } finally {
    vi.useRealTimers();
  }
}
