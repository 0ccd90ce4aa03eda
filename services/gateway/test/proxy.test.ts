import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { Pool, errors } from 'undici';
import { createLogger, newId } from '@merx/kit';
import { AnswerCutShort, exchange } from '../src/exchange.js';
import { InProcessDispatcher } from '../src/in-process.js';
import { startGateway, type RunningGateway } from '../src/index.js';
import { testTokens } from './test-tokens.js';

const LARGE = Buffer.alloc(2 * 1024 * 1024 + 17, 'a');

function send(response: ServerResponse, text: string): void {
  response.setHeader('Content-Length', Buffer.byteLength(text));
  response.end(isHead(response) ? undefined : text);
}

function isHead(response: ServerResponse): boolean {
  return response.req.method === 'HEAD';
}

/** The answers an upstream may give, by the last segment of the path. */
function answer(request: IncomingMessage, response: ServerResponse, aborted: (path: string) => void): void {
  const last = request.url!.split('?')[0]!.split('/').pop();
  switch (last) {
    case 'small':
      response.setHeader('Set-Cookie', ['a=1; Path=/', 'b=2; Path=/; HttpOnly']);
      response.setHeader('ETag', '"v1"');
      response.setHeader('Content-Type', 'application/json');
      // Sized, as Koa sizes every answer it holds whole.
      send(response, JSON.stringify({ path: request.url, method: request.method, requestId: request.headers['x-request-id'] }));
      return;
    case 'large':
      response.setHeader('Content-Type', 'application/octet-stream');
      response.setHeader('Content-Length', LARGE.length);
      response.end(LARGE);
      return;
    case 'unsized':
      // Chunked: no Content-Length, so the proxy cannot know the size before the end.
      response.setHeader('Content-Type', 'text/plain');
      response.write('first,');
      setImmediate(() => response.end('second'));
      return;
    case 'empty':
      response.setHeader('X-Deleted', 'yes');
      response.statusCode = 204;
      response.end();
      return;
    case 'cut':
      // Declares 1,000 bytes, sends 10, then the connection dies.
      response.setHeader('Content-Length', 1000);
      response.setHeader('Content-Type', 'application/json');
      response.write('{"partial"');
      setImmediate(() => response.socket?.destroy());
      return;
    case 'endless':
      // Larger than the proxy buffers, and never finished: only an abort ends it.
      response.setHeader('Content-Length', 64 * 1024 * 1024);
      response.write(Buffer.alloc(64 * 1024, 'b'));
      response.on('close', () => aborted(request.url!));
      return;
    default:
      response.statusCode = 404;
      response.end();
  }
}

describe('proxy: answers read by the gateway’s own dispatch handler', () => {
  let upstream: Server;
  let origin: string;
  let pool: Pool;
  let inProcess: InProcessDispatcher;
  let gateway: RunningGateway;
  let token: string;
  const abortedPaths: string[] = [];

  before(async () => {
    upstream = createServer((request, response) => answer(request, response, (path) => abortedPaths.push(path)));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    pool = new Pool(origin);
    inProcess = new InProcessDispatcher({ handle: (request, response) => answer(request, response, () => undefined), server: upstream });

    const tokens = await testTokens();
    token = await tokens.sign({ merchant_id: newId('mch'), client_id: 'mx_test_AAAAAAAAAAAAAAAA', scope: 'products:read' });
    gateway = await startGateway({
      logger: createLogger('gateway-test', 'silent'),
      verifier: tokens.verifier,
      publicUrl: 'http://localhost:8080',
      upstreams: { oauth: origin, catalog: origin, audit: origin, webhooks: origin, merchants: origin },
      serviceToken: 'gateway-test-service-token',
      port: 0,
    });
  });

  after(async () => {
    await gateway.stop();
    await pool.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });

  const viaGateway = (path: string, init: RequestInit = {}) =>
    fetch(`${gateway.url}/api/v1/products/${path}`, { ...init, headers: { authorization: `Bearer ${token}` } });

  for (const [name, dispatcher] of [
    ['a keep-alive pool', () => pool],
    ['the in-process dispatcher', () => inProcess],
  ] as const) {
    it(`reads a small answer whole through ${name}, every Set-Cookie kept`, async () => {
      const answered = await exchange(dispatcher(), { method: 'GET', path: '/x/small?q=1', headers: { 'x-request-id': 'req_1' }, body: null }, 1024);
      assert.equal(answered.statusCode, 200);
      assert.ok(Buffer.isBuffer(answered.body));
      assert.deepEqual(JSON.parse(answered.body.toString()), { path: '/x/small?q=1', method: 'GET', requestId: 'req_1' });
      assert.deepEqual(answered.headers['set-cookie'], ['a=1; Path=/', 'b=2; Path=/; HttpOnly']);
      assert.equal(answered.headers.etag, '"v1"');
    });

    it(`gives a HEAD and a 204 no body through ${name}`, async () => {
      const head = await exchange(dispatcher(), { method: 'HEAD', path: '/x/small', headers: {}, body: null }, 1024);
      assert.equal(head.statusCode, 200);
      assert.equal(head.body, null);
      const empty = await exchange(dispatcher(), { method: 'DELETE', path: '/x/empty', headers: {}, body: null }, 1024);
      assert.equal(empty.statusCode, 204);
      assert.equal(empty.body, null);
      assert.equal(empty.headers['x-deleted'], 'yes');
    });
  }

  it('streams an answer larger than it buffers, and one of unknown size', async () => {
    const large = await exchange(pool, { method: 'GET', path: '/x/large', headers: {}, body: null }, 1024);
    assert.ok(large.body instanceof Readable, 'a stream, not a buffer');
    assert.ok(Buffer.concat(await large.body.toArray()).equals(LARGE));
    const unsized = await exchange(pool, { method: 'GET', path: '/x/unsized', headers: {}, body: null }, 1024 * 1024);
    assert.ok(unsized.body instanceof Readable);
    assert.equal(Buffer.concat(await unsized.body.toArray()).toString(), 'first,second');
  });

  it('rejects with AnswerCutShort when the upstream dies mid-body, and with the transport error before it answers', async () => {
    await assert.rejects(exchange(pool, { method: 'GET', path: '/x/cut', headers: {}, body: null }, 1024 * 1024), AnswerCutShort);
    const refused = new Pool('http://127.0.0.1:1');
    await assert.rejects(exchange(refused, { method: 'GET', path: '/', headers: {}, body: null }, 1024), (error) => !(error instanceof AnswerCutShort));
    await refused.close();
    const stopped = new InProcessDispatcher({ handle: () => undefined, server: createServer() });
    await assert.rejects(exchange(stopped, { method: 'GET', path: '/', headers: {}, body: null }, 1024), errors.SocketError);
  });

  it('aborts the upstream request when the reader of a streamed answer goes away', async () => {
    const endless = await exchange(pool, { method: 'GET', path: '/x/endless', headers: {}, body: null }, 1024);
    assert.ok(endless.body instanceof Readable);
    const upstreamClosed = new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (abortedPaths.includes('/x/endless')) {
          clearInterval(poll);
          resolve();
        }
      }, 5);
    });
    endless.body.destroy();
    await upstreamClosed;
  });

  it('through the gateway: the answer’s status, headers and body, with its own request id', async () => {
    const response = await viaGateway('small?q=2');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('etag'), '"v1"');
    assert.deepEqual(response.headers.getSetCookie(), ['a=1; Path=/', 'b=2; Path=/; HttpOnly']);
    const body = (await response.json()) as { path: string; requestId: string };
    assert.equal(body.path, '/api/v1/products/small?q=2');
    assert.equal(body.requestId, response.headers.get('x-request-id'));
    assert.equal(response.headers.get('content-length'), String(JSON.stringify(body).length));
  });

  it('through the gateway: a HEAD and a 204 go out without a body', async () => {
    const head = await viaGateway('small', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('etag'), '"v1"');
    assert.equal((await head.arrayBuffer()).byteLength, 0);
    const empty = await viaGateway('empty', { method: 'DELETE' });
    assert.equal(empty.status, 204);
    assert.equal(empty.headers.get('x-deleted'), 'yes');
    assert.equal((await empty.arrayBuffer()).byteLength, 0);
  });

  it('through the gateway: a large answer streams whole', async () => {
    const response = await viaGateway('large');
    assert.equal(response.status, 200);
    assert.ok(Buffer.from(await response.arrayBuffer()).equals(LARGE));
  });

  it('through the gateway: an upstream that dies mid-body is a 503 problem, not a truncated 200', async () => {
    const response = await viaGateway('cut');
    assert.equal(response.status, 503);
    assert.match(response.headers.get('content-type') ?? '', /application\/problem\+json/);
    const body = (await response.json()) as Record<string, string>;
    assert.equal(body.code, 'unavailable');
    assert.match(body.detail!, /stopped answering mid-response/);
    assert.equal(response.headers.get('etag'), null, 'no header of the broken answer is copied');
  });
});
