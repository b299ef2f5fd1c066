import http from 'node:http';
import { exitWithParent, listenAndAnnounce } from './child-server.js';

/** The baseline: a bare node:http server that reads the body and answers a small JSON object. */
const reply = Buffer.from(JSON.stringify({ status: 'ok', message: 'hello' }));

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': reply.length });
    res.end(reply);
  });
});

exitWithParent(() => {
  server.closeAllConnections();
  server.close();
});
listenAndAnnounce(server);
