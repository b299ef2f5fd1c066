import type http from 'node:http';

/** Listens on 127.0.0.1 with a free port and prints `{"url": …}` on stdout, one line. */
export function listenAndAnnounce(server: http.Server): void {
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected server address');
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${address.port}`, pid: process.pid })}\n`);
  });
}

/** The bench keeps our stdin open; when it goes (the bench exited or died), so do we. */
export function exitWithParent(server: http.Server): void {
  const quit = (): void => {
    server.closeAllConnections();
    server.close();
    process.exit(0);
  };
  process.stdin.on('end', quit);
  process.stdin.on('error', quit);
  process.stdin.resume();
  process.on('SIGTERM', quit);
  process.on('SIGINT', quit);
}
