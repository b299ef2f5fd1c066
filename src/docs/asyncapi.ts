import { z } from 'zod';
import {
  authFrame,
  interruptFrame,
  messageFrame,
  pingFrame,
  SERVER_FRAMES,
  subscribeFrame,
  unsubscribeFrame,
} from '../channels/index.js';
import { logLevels } from '../config/config.schema.js';
import { SSE_PING_MS } from '../http/sse.js';
import { LOG_STREAM_EVENTS } from '../logs/index.js';
import { MESSAGE_STREAM_EVENTS, TURN_STREAM_EVENTS } from '../turns/index.js';

type Json = Record<string, unknown>;

/** What the AsyncAPI document names: where the API lives and how a token is presented. */
export interface AsyncApiOptions {
  /** `gateway.api_prefix`, e.g. `/api/v1`. */
  apiPrefix: string;
  version: string;
  /** `gateway.auth.token_header`. */
  tokenHeader: string;
  /** `host[:port]` the servers are reached at (the request's Host, which passed the Host rules). */
  host: string;
}

/**
 * A zod schema as a JSON Schema draft-07 payload (AsyncAPI's default schema
 * format is a superset of it). `io: 'input'` for what a client sends.
 */
function payloadOf(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

/**
 * Client frames (read by `websocket.frames.ts` with these very schemas).
 * A function, not a constant: the modules that declare route schemas import
 * this folder while the channels are still loading.
 */
const clientFrames = (): Record<string, z.ZodType> => ({
  auth: authFrame,
  message: messageFrame,
  interrupt: interruptFrame,
  subscribe: subscribeFrame,
  unsubscribe: unsubscribeFrame,
  ping: pingFrame,
});

const PING = `A \`: ping\` comment every ${SSE_PING_MS / 1000} s keeps an idle stream alive.`;

/** Messages of one SSE stream, each named by its SSE event name; keys `<prefix>_<event>`. */
function sseMessages(prefix: string, events: Record<string, z.ZodType>, idNote: string): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [event, schema] of Object.entries(events)) {
    const meta = z.globalRegistry.get(schema);
    out[`${prefix}_${event}`] = {
      name: event,
      title: `event: ${event}`,
      summary: meta?.description ?? `SSE event \`${event}\``,
      description: `Sent as \`event: ${event}\` with the payload as JSON on one \`data:\` line. ${idNote}`,
      contentType: 'application/json',
      payload: payloadOf(schema, 'output'),
    };
  }
  return out;
}

/** The messages a channel carries, as references to `components.messages`. */
function refs(keys: string[]): Record<string, Json> {
  return Object.fromEntries(keys.map((key) => [key, { $ref: `#/components/messages/${key}` }]));
}

/** An operation's messages: references into its channel. */
function channelRefs(channel: string, keys: string[]): Json[] {
  return keys.map((key) => ({ $ref: `#/channels/${channel}/messages/${key}` }));
}

/** One operation on `channel` carrying the messages named by `keys`; `extra` adds bindings. */
function operation(action: 'send' | 'receive', title: string, channel: string, keys: string[], extra: Json = {}): Json {
  return { action, title, channel: { $ref: `#/channels/${channel}` }, messages: channelRefs(channel, keys), ...extra };
}

/** The HTTP binding of an SSE stream's request. */
function httpBinding(method: 'GET' | 'POST', extra: Json = {}): Json {
  return { bindings: { http: { method, ...extra, bindingVersion: '0.3.0' } } };
}

/**
 * Builds the AsyncAPI 3.0 document of the gateway's streams (DECISIONS §14,
 * ADR 0017): the WebSocket (auth, client frames, server frames) and the SSE
 * streams — the message stream, a turn's events and the log follow — as
 * channels, operations and messages with JSON Schema payloads. The
 * document describes the gateway: it `receive`s client frames and `send`s
 * everything else.
 */
export function buildAsyncApi(options: AsyncApiOptions): Json {
  const clientMessages: Record<string, Json> = {};
  for (const [type, schema] of Object.entries(clientFrames())) {
    clientMessages[`ws_client_${type}`] = {
      name: type,
      title: `client frame: ${type}`,
      contentType: 'application/json',
      payload: payloadOf(schema, 'input'),
    };
  }
  const serverMessages: Record<string, Json> = {};
  for (const [type, schema] of Object.entries(SERVER_FRAMES)) {
    serverMessages[`ws_server_${type}`] = {
      name: type,
      title: `server frame: ${type}`,
      contentType: 'application/json',
      payload: payloadOf(schema, 'output'),
    };
  }
  const messageStream = sseMessages(
    'message_stream',
    MESSAGE_STREAM_EVENTS,
    'Its `id:` is the per-turn event number (`accepted` has `id: 0`), the numbering of GET /turns/{event_id}/events.',
  );
  const turnStream = sseMessages(
    'turn_events',
    TURN_STREAM_EVENTS,
    'Its `id:` is the per-turn event number; `Last-Event-ID` resumes after it.',
  );
  const logStream = sseMessages(
    'log_follow',
    LOG_STREAM_EVENTS,
    'Its `id:` is `<run>-<n>`, the entry in this run of the process; `Last-Event-ID` resumes after it.',
  );

  const clientKeys = Object.keys(clientMessages);
  const serverKeys = Object.keys(serverMessages);
  const messageKeys = Object.keys(messageStream);
  const turnKeys = Object.keys(turnStream);
  const logKeys = Object.keys(logStream);
  const tokenSchemes = [
    { $ref: '#/components/securitySchemes/apiToken' },
    { $ref: '#/components/securitySchemes/bearer' },
  ];

  return {
    asyncapi: '3.0.0',
    id: 'urn:gatehouse:streams',
    info: {
      title: 'Gatehouse streams',
      version: options.version,
      description:
        'The WebSocket and the server-sent-event streams of the Gatehouse API. The REST API is described by ' +
        `${options.apiPrefix}/openapi.json.`,
    },
    defaultContentType: 'application/json',
    servers: {
      api: {
        host: options.host,
        protocol: 'http',
        pathname: options.apiPrefix,
        description: 'The HTTP API: SSE streams (`Accept: text/event-stream`)',
        security: tokenSchemes,
      },
      websocket: {
        host: options.host,
        protocol: 'ws',
        pathname: options.apiPrefix,
        description: 'The WebSocket entry (also under `/ws`)',
        security: [...tokenSchemes, { $ref: '#/components/securitySchemes/queryToken' }],
      },
    },
    channels: {
      websocket: {
        address: '/ws',
        title: 'WebSocket',
        description:
          'JSON text frames `{type, …}` (DECISIONS §8). The token comes in a header, as `?token=` (api rights ' +
          'at most) or in a first `auth` frame within 10 s; the first server frame after success is `auth_ok`. ' +
          'A bad token is answered with an `error` frame (UNAUTHORIZED) and close 4401.',
        servers: [{ $ref: '#/servers/websocket' }],
        messages: refs([...clientKeys, ...serverKeys]),
        bindings: {
          ws: {
            method: 'GET',
            query: {
              type: 'object',
              properties: {
                token: { type: 'string', description: 'An API token (api rights at most)' },
                platform: { type: 'string', description: 'Chat identity: platform (default `ws`)' },
                user_id: { type: 'string', description: "Chat identity: user id (default: the token's fingerprint)" },
                chat_id: { type: 'string', description: 'Chat identity: chat id (default: the user id)' },
              },
            },
            bindingVersion: '0.1.0',
          },
        },
      },
      messageStream: {
        address: '/sessions/{session_id}/messages',
        title: 'Message stream',
        description:
          'POST /sessions/{session_id}/messages with `Accept: text/event-stream` (DECISIONS §5): `accepted` ' +
          '(the event id), then the turn as `delta`, `tool_call`, `tool_result` and a final `done` or `error`, ' +
          `after which the stream ends. Each event carries an \`id:\`. ${PING}`,
        servers: [{ $ref: '#/servers/api' }],
        parameters: { session_id: { description: 'The session key, URL-encoded' } },
        messages: refs(messageKeys),
      },
      turnEvents: {
        address: '/turns/{event_id}/events',
        title: "A turn's events",
        description:
          "GET /turns/{event_id}/events (DECISIONS §5): the turn's events so far, each with an `id:`, then live " +
          'to the final `done` or `error`, after which the stream ends. `Last-Event-ID` resumes after that ' +
          'event; when the turn is over and nothing follows it, the answer is 204 No Content, so an ' +
          `EventSource stops reconnecting. ${PING}`,
        servers: [{ $ref: '#/servers/api' }],
        parameters: { event_id: { description: 'The turn’s event id' } },
        messages: refs(turnKeys),
      },
      logFollow: {
        address: '/logs',
        title: 'Log follow',
        description:
          'GET /logs?follow=true (admin; DECISIONS §9): new entries passing the filters as `log` events, each ' +
          'with an `id:`. `Last-Event-ID` first replays the kept entries after it (the in-memory buffer); an id ' +
          'older than the buffer, or from an earlier run of the process, replays every kept entry. ' +
          PING,
        servers: [{ $ref: '#/servers/api' }],
        messages: refs(logKeys),
      },
    },
    operations: {
      receiveClientFrames: operation('receive', 'Client frames', 'websocket', clientKeys),
      sendServerFrames: operation('send', 'Server frames', 'websocket', serverKeys),
      sendMessageStream: operation(
        'send',
        'Stream the reply to a message',
        'messageStream',
        messageKeys,
        httpBinding('POST'),
      ),
      sendTurnEvents: operation('send', "Stream a turn's events", 'turnEvents', turnKeys, httpBinding('GET')),
      sendLogFollow: operation(
        'send',
        'Follow the log',
        'logFollow',
        logKeys,
        httpBinding('GET', {
          query: {
            type: 'object',
            required: ['follow'],
            properties: {
              follow: { type: 'string', enum: ['true'] },
              level: { type: 'string', enum: [...logLevels] },
              source: { type: 'string' },
              since: { type: 'string', description: 'ISO 8601 timestamp' },
              until: { type: 'string', description: 'ISO 8601 timestamp; an entry past it ends the stream' },
            },
          },
        }),
      ),
    },
    components: {
      messages: { ...clientMessages, ...serverMessages, ...messageStream, ...turnStream, ...logStream },
      securitySchemes: {
        apiToken: { type: 'httpApiKey', in: 'header', name: options.tokenHeader },
        bearer: { type: 'http', scheme: 'bearer' },
        queryToken: { type: 'httpApiKey', in: 'query', name: 'token', description: 'WebSocket only; api rights' },
      },
    },
  };
}
