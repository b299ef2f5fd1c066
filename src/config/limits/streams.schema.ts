import { z } from 'zod';
import { about, positiveInt } from '../schema-meta.js';

/** `limits.streams`: a reader that doesn't read is closed once its unsent bytes pass a bound. */
export const streamsSchema = z
  .strictObject({
    max_buffered_bytes: positiveInt
      .default(1_048_576)
      .meta(
        about(
          'Unsent bytes one SSE stream or WebSocket client may hold; past it the client is closed (WebSocket 1013,',
          'SSE stream ended) and may resume with Last-Event-ID or a resubscribe (WebSocket: subscribe again, and',
          'retry the message with its idempotency_key and the after_seq of the last frame it got). Read at start-up.',
        ),
      ),
    websocket_max_connections: positiveInt
      .default(20_000)
      .meta(
        about(
          'Open WebSocket connections (authenticated or not) one process accepts; further upgrades are answered',
          '503. Each idle client costs a few KB; keep this under the open-file limit (ulimit -n). Read at start-up.',
        ),
      ),
  })
  .prefault({})
  .meta(about('Streams to clients: SSE, the WebSocket, the live feed, the logs follow.'));
