/**
 * A local OTLP/HTTP trace receiver for the tracing scenario (j): a node:http server in the bench's own process
 * that reads each export, counts its spans and answers 200 as a collector does. It keeps nothing but counts.
 */
import { createServer } from 'node:http';

export interface OtlpSink {
  /** `http://127.0.0.1:PORT/v1/traces`. */
  readonly url: string;
  /** Exports (POST requests) received. */
  readonly exports: number;
  /** Spans received (counted from the JSON). */
  readonly spans: number;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let exports = 0;
  let spans = 0;
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      exports++;
      // Spans of an OTLP JSON export each carry one `spanId`: counted without building the tree.
      spans += Buffer.concat(parts).toString('utf8').split('"spanId"').length - 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    get exports() {
      return exports;
    },
    get spans() {
      return spans;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
