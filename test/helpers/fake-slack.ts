/**
 * A fake Slack over real HTTP (node:http on 127.0.0.1, port 0), for the
 * Slack channel through Slack's own clients (`api_url`): the Web API
 * methods `auth.test`, `chat.postMessage`, `chat.update` and
 * `apps.connections.open`, which hands out a `ws://127.0.0.1:…` URL served
 * by the same server (Socket Mode: `hello`, `events_api` envelopes, acks).
 * Every call is recorded; a test scripts failures per method (429 with
 * `Retry-After`, 5xx). It also plays Slack's side of the Events API over
 * HTTP: it builds `event_callback` envelopes and POSTs them signed with the
 * signing secret, as Slack does (retries with `X-Slack-Retry-Num`).
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/** One recorded Web API call. */
export interface SlackCall {
  method: string;
  params: Record<string, string>;
  /** The bearer token it carried. */
  token: string | null;
  /** When it was answered (ms, Date.now). */
  at: number;
  status: number;
}

/** A message the bot posted, with its edits. */
export interface PostedSlackMessage {
  channel: string;
  ts: string;
  threadTs: string | null;
  /** The text now shown (as sent: Slack-escaped). */
  text: string;
  /** Every text it showed, in order (the post first, then each update). */
  versions: string[];
}

/** A scripted failure of the next call(s) of a method. */
export type SlackFailure = { status: 429; retryAfter: number } | { status: 500 | 502 | 503 };

/** What a test builds a message event from. */
export interface SlackMessageInput {
  user: string;
  text: string;
  /** Default: a DM channel of the user (`D<user>`). */
  channel?: string;
  channelType?: 'im' | 'channel' | 'group' | 'mpim';
  /** `app_mention` instead of `message`. */
  mention?: boolean;
  threadTs?: string;
  parentUserId?: string;
  subtype?: string;
  botId?: string;
}

/** An Events API POST as the gateway answered it. */
export interface EventsAnswer {
  status: number;
  body: Record<string, unknown>;
  ms: number;
}

export interface FakeSlack {
  /** `api_url` for the Web API client: `http://127.0.0.1:PORT/api/`. */
  url: string;
  botToken: string;
  appToken: string;
  signingSecret: string;
  botUserId: string;
  calls: SlackCall[];
  posted: PostedSlackMessage[];
  callsOf(method: string): SlackCall[];
  /** Calls to unknown methods, or with a wrong token. */
  unexpected: string[];
  /** The next `count` calls of `method` fail with `failure`. */
  fail(method: string, failure: SlackFailure, count?: number): void;
  /** An `event_callback` envelope (fresh `event_id`, `ts`). */
  envelope(input: SlackMessageInput): Record<string, unknown>;
  /** POSTs an envelope to `url` signed as Slack signs it; `retryNum` adds `X-Slack-Retry-Num`. */
  deliver(
    url: string,
    envelope: Record<string, unknown>,
    options?: { retryNum?: number; secret?: string; timestamp?: number; unsigned?: boolean; rawBody?: string },
  ): Promise<EventsAnswer>;
  /** Socket Mode: connections now open. */
  sockets(): number;
  /** Socket Mode: sends an envelope over every open socket; resolves with its envelope id. */
  push(envelope: Record<string, unknown>, retryAttempt?: number): string;
  /** Socket Mode: envelope ids acknowledged, in order. */
  acks: string[];
  /** Socket Mode: drops every open socket without a close frame (a lost connection). */
  dropSockets(): void;
  close(): Promise<void>;
}

/** Slack's signature of a body: `v0=` HMAC-SHA256 over `v0:{timestamp}:{body}`. */
export function slackSignature(secret: string, timestamp: number, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
}

/** Starts the fake; `close()` it in afterEach. */
export async function startFakeSlack(): Promise<FakeSlack> {
  const botToken = 'xoxb-test-bot-token-not-real';
  const appToken = 'xapp-test-app-token-not-real';
  const signingSecret = 'test-signing-secret-not-real';
  const botUserId = 'UBOT1';
  const calls: SlackCall[] = [];
  const posted: PostedSlackMessage[] = [];
  const unexpected: string[] = [];
  const acks: string[] = [];
  const failures = new Map<string, SlackFailure[]>();
  const sockets = new Set<Socket>();
  const clients = new Set<WebSocket>();
  let seq = 0;
  let clock = 1_700_000_000;
  const nextTs = (): string => `${clock++}.${String(++seq).padStart(6, '0')}`;

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const readParams = async (req: IncomingMessage): Promise<Record<string, string>> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text) return {};
    if ((req.headers['content-type'] ?? '').includes('application/json')) {
      return Object.fromEntries(
        Object.entries(JSON.parse(text) as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
      );
    }
    return Object.fromEntries(new URLSearchParams(text));
  };

  let address = '';
  const server = createServer((req, res) => {
    void (async () => {
      const method = /^\/api\/([A-Za-z.]+)$/.exec(req.url ?? '')?.[1] ?? null;
      const params = await readParams(req);
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? params.token ?? null;
      const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        calls.push({ method: method ?? String(req.url), params, token: bearer, at: Date.now(), status });
        json(res, status, body, headers);
      };
      if (method === null || req.method !== 'POST') {
        unexpected.push(`${req.method} ${req.url}`);
        return answer(404, { ok: false, error: 'unknown_method' });
      }
      const expectedToken = method === 'apps.connections.open' ? appToken : botToken;
      if (bearer !== expectedToken) {
        unexpected.push(`${method}: wrong token`);
        return answer(200, { ok: false, error: 'invalid_auth' });
      }
      const scripted = failures.get(method)?.shift();
      if (scripted) {
        if (scripted.status === 429) {
          return answer(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(scripted.retryAfter) });
        }
        return answer(scripted.status, { ok: false, error: 'fatal_error' });
      }
      switch (method) {
        case 'auth.test':
          return answer(200, { ok: true, user_id: botUserId, bot_id: 'BBOT1', team_id: 'T1', user: 'gatehouse' });
        case 'chat.postMessage': {
          if (!params.channel || !params.text) return answer(200, { ok: false, error: 'no_text' });
          const message: PostedSlackMessage = {
            channel: params.channel,
            ts: nextTs(),
            threadTs: params.thread_ts ?? null,
            text: params.text,
            versions: [params.text],
          };
          posted.push(message);
          return answer(200, { ok: true, channel: message.channel, ts: message.ts });
        }
        case 'chat.update': {
          const message = posted.find((m) => m.channel === params.channel && m.ts === params.ts);
          if (!message) return answer(200, { ok: false, error: 'message_not_found' });
          message.text = params.text ?? '';
          message.versions.push(message.text);
          return answer(200, { ok: true, channel: message.channel, ts: message.ts });
        }
        case 'apps.connections.open':
          return answer(200, { ok: true, url: `${address.replace('http', 'ws')}/socket?ticket=t${++seq}` });
        default:
          unexpected.push(method);
          return answer(200, { ok: false, error: 'unknown_method' });
      }
    })().catch((err: unknown) => {
      unexpected.push(`fake error: ${String(err)}`);
      if (!res.headersSent) json(res, 500, { ok: false });
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/socket')) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      clients.add(ws);
      ws.on('close', () => clients.delete(ws));
      ws.on('message', (data: Buffer) => {
        const message = JSON.parse(data.toString('utf8')) as { envelope_id?: string };
        if (message.envelope_id) acks.push(message.envelope_id);
      });
      ws.send(JSON.stringify({ type: 'hello', num_connections: clients.size }));
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: `${address}/api/`,
    botToken,
    appToken,
    signingSecret,
    botUserId,
    calls,
    posted,
    unexpected,
    acks,
    callsOf: (method) => calls.filter((c) => c.method === method),
    fail(method, failure, count = 1) {
      const list = failures.get(method) ?? [];
      for (let i = 0; i < count; i++) list.push(failure);
      failures.set(method, list);
    },
    envelope(input) {
      const ts = nextTs();
      const event: Record<string, unknown> = {
        type: input.mention ? 'app_mention' : 'message',
        user: input.user,
        text: input.text,
        ts,
        channel: input.channel ?? `D${input.user}`,
        event_ts: ts,
      };
      if (!input.mention) event.channel_type = input.channelType ?? 'im';
      if (input.threadTs) event.thread_ts = input.threadTs;
      if (input.parentUserId) event.parent_user_id = input.parentUserId;
      if (input.subtype) event.subtype = input.subtype;
      if (input.botId) event.bot_id = input.botId;
      return {
        token: 'verification-token-unused',
        team_id: 'T1',
        api_app_id: 'A1',
        type: 'event_callback',
        event_id: `Ev${String(++seq).padStart(8, '0')}`,
        event_time: Math.floor(Date.now() / 1000),
        event,
      };
    },
    async deliver(url, envelope, options = {}) {
      const body = options.rawBody ?? JSON.stringify(envelope);
      const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (!options.unsigned) {
        headers['x-slack-request-timestamp'] = String(timestamp);
        headers['x-slack-signature'] = slackSignature(options.secret ?? signingSecret, timestamp, body);
      }
      if (options.retryNum !== undefined) {
        headers['x-slack-retry-num'] = String(options.retryNum);
        headers['x-slack-retry-reason'] = 'http_timeout';
      }
      const started = Date.now();
      const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(15_000) });
      const text = await res.text();
      let parsed: Record<string, unknown> = {};
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      } catch {
        parsed = { raw: text };
      }
      return { status: res.status, body: parsed, ms: Date.now() - started };
    },
    sockets: () => clients.size,
    dropSockets() {
      for (const ws of clients) ws.terminate();
    },
    push(envelope, retryAttempt = 0) {
      const envelopeId = `env-${++seq}`;
      const frame = JSON.stringify({
        envelope_id: envelopeId,
        type: 'events_api',
        payload: envelope,
        accepts_response_payload: false,
        retry_attempt: retryAttempt,
        retry_reason: retryAttempt > 0 ? 'timeout' : '',
      });
      for (const ws of clients) ws.send(frame);
      return envelopeId;
    },
    async close() {
      for (const ws of clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
