import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The ceiling: the least a Node HTTP server can do per request. Runs as its own process so it
 * never shares an event loop with the load generator; prints its port on the first line.
 */
const body = JSON.stringify({ hello: 'world' });
const server = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  response.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
