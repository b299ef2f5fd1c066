import type http from 'node:http';

/** Prints `{"url": …, "pid": …}` on stdout, one line: how the bench learns where a child server listens. */
export function announce(url: string): void {
  process.stdout.write(`${JSON.stringify({ url, pid: process.pid })}\n`);
}

/** Listens on 127.0.0.1 with a free port and announces its URL. */
export function listenAndAnnounce(server: http.Server): void {
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected server address');
    announce(`http://127.0.0.1:${address.port}`);
  });
}

/**
 * The bench keeps our stdin open; when it goes (the bench exited or died),
 * or on SIGTERM/SIGINT, `close` runs and the process exits.
 */
export function exitWithParent(close: () => unknown): void {
  const quit = (): void => {
    void Promise.resolve()
      .then(close)
      .finally(() => process.exit(0));
  };
  process.stdin.on('end', quit);
  process.stdin.on('error', quit);
  process.stdin.resume();
  process.on('SIGTERM', quit);
  process.on('SIGINT', quit);
}
