// A small HTTP proxy in front of the real Merx gateway, for the SDK suite's fault injection. It
// forwards every request unchanged unless a fault rule matches it, and logs what it saw (method,
// path, headers) so tests can check what the SDK sent.
//
//   node fault-proxy.mjs <target base URL>     → prints {"port": N} once listening on 127.0.0.1
//
// Control (never forwarded):
//   POST   /__proxy/faults  [{method?, path?, times?, action, status?, headers?, body?, delay_ms?}, …]
//          action: drop_before (close the connection without forwarding),
//                  drop_after (forward, then close the connection instead of answering),
//                  status (answer `status` with `headers` and `body` without forwarding),
//                  delay (forward and answer after `delay_ms`)
//   DELETE /__proxy/faults   GET /__proxy/log   DELETE /__proxy/log
import http from 'node:http';

const target = new URL(process.argv[2] ?? '');
let faults = [];
let log = [];

const readBody = (stream) =>
  new Promise((resolve, reject) => {
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });

function takeFault(method, path) {
  const index = faults.findIndex((fault) => (!fault.method || fault.method === method) && (!fault.path || path === fault.path || path.startsWith(`${fault.path}?`) || (fault.prefix && path.startsWith(fault.path))));
  if (index < 0) return null;
  const fault = faults[index];
  fault.times = (fault.times ?? 1) - 1;
  if (fault.times <= 0) faults.splice(index, 1);
  return fault;
}

function forward(request, body) {
  return new Promise((resolve, reject) => {
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: request.method, path: request.url, headers: { ...request.headers, host: target.host } },
      async (response) => resolve({ status: response.statusCode, headers: response.headers, body: await readBody(response) }),
    );
    upstream.on('error', reject);
    upstream.end(body);
  });
}

async function control(request, response, body) {
  const send = (status, value) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(value));
  };
  if (request.url === '/__proxy/faults' && request.method === 'POST') {
    faults.push(...JSON.parse(body.toString('utf8')));
    return send(200, faults);
  }
  if (request.url === '/__proxy/faults' && request.method === 'DELETE') {
    faults = [];
    return send(200, faults);
  }
  if (request.url === '/__proxy/log' && request.method === 'GET') return send(200, log);
  if (request.url === '/__proxy/log' && request.method === 'DELETE') {
    log = [];
    return send(200, log);
  }
  return send(404, { error: 'unknown control path' });
}

const server = http.createServer(async (request, response) => {
  try {
    const body = await readBody(request);
    if (request.url.startsWith('/__proxy/')) return await control(request, response, body);
    const fault = takeFault(request.method, request.url);
    const entry = { method: request.method, path: request.url, headers: request.headers, body: body.toString('utf8'), fault: fault?.action ?? null, status: null };
    log.push(entry);
    if (fault?.action === 'drop_before') return request.socket.destroy();
    if (fault?.action === 'status') {
      entry.status = fault.status;
      response.writeHead(fault.status, { 'content-type': 'application/problem+json', ...(fault.headers ?? {}) });
      return response.end(JSON.stringify(fault.body ?? {}));
    }
    const answer = await forward(request, body);
    entry.status = answer.status;
    if (fault?.action === 'drop_after') return request.socket.destroy();
    if (fault?.action === 'delay') await new Promise((resolve) => setTimeout(resolve, fault.delay_ms ?? 1000));
    if (response.destroyed) return;
    const headers = { ...answer.headers };
    delete headers['transfer-encoding'];
    delete headers.connection;
    headers['content-length'] = String(answer.body.length);
    response.writeHead(answer.status, headers);
    response.end(answer.body);
  } catch (error) {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(String(error));
  }
});
server.keepAliveTimeout = 1_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));
