import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import Koa from 'koa';
import { Pool, errors, type Dispatcher } from 'undici';
import { listen, type RunningServer } from '@merx/kit';
import { InProcessDispatcher } from '../src/in-process.js';

/**
 * The embedded gateway reaches its services through InProcessDispatcher instead of their ports.
 * Whatever a service answers must reach the proxy exactly as it does over the network: each case
 * sends the same request both ways and compares.
 */
describe('in-process upstreams (the embedded gateway without loopback HTTP)', () => {
  let service: RunningServer;
  let overNetwork: Pool;
  let inProcess: InProcessDispatcher;
  const closedResponses: string[] = [];

  before(async () => {
    const app = new Koa();
    app.use(async (ctx) => {
      if (ctx.path === '/streamed') {
        // Koa pipes a stream: several writes, no Content-Length, chunked on a socket.
        ctx.type = 'text/plain';
        ctx.body = Readable.from(['one,', 'two,', 'three']);
        return;
      }
      if (ctx.path === '/closes') {
        ctx.res.on('close', () => closedResponses.push(ctx.url));
        ctx.body = { ok: true };
        return;
      }
      if (ctx.path === '/hangs-up') {
        ctx.res.destroy();
        ctx.respond = false;
        return;
      }
      if (ctx.path === '/cookies') {
        ctx.append('Set-Cookie', 'a=1; Path=/');
        ctx.append('Set-Cookie', 'b=2; Path=/; HttpOnly');
        ctx.status = 204;
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req as AsyncIterable<Buffer>) chunks.push(chunk);
      ctx.status = ctx.method === 'POST' ? 201 : 200;
      ctx.set('X-Echo-Id', ctx.get('x-request-id'));
      ctx.body = {
        method: ctx.method,
        url: ctx.url,
        forwardedFor: ctx.get('x-forwarded-for'),
        contentType: ctx.get('content-type'),
        body: Buffer.concat(chunks).toString(),
        remote: ctx.req.socket.remoteAddress,
      };
    });
    service = await listen(app, 0);
    overNetwork = new Pool(service.url);
    inProcess = new InProcessDispatcher(service);
  });

  after(async () => {
    await overNetwork.close();
    await service.close();
  });

  /** Status, headers (less those only a socket has) and body of one answer. */
  async function answer(dispatcher: Dispatcher, options: Omit<Dispatcher.RequestOptions, 'origin'>) {
    const response = await dispatcher.request(options);
    const headers = { ...response.headers };
    for (const name of ['date', 'connection', 'keep-alive']) delete headers[name];
    return { status: response.statusCode, headers, body: await response.body.text() };
  }

  it('answers a JSON POST with its body, headers and status as the network does', async () => {
    const request = {
      method: 'POST' as const,
      path: '/api/v1/products?expand=x&limit=2',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req_inproc', 'x-forwarded-for': '203.0.113.9' },
      body: Buffer.from(JSON.stringify({ sku: 'ü-1', price: '12.50' })),
    };
    const [network, local] = [await answer(overNetwork, request), await answer(inProcess, request)];
    assert.deepEqual(local, network);
    assert.equal(local.status, 201);
    assert.equal(local.headers['x-echo-id'], 'req_inproc');
    assert.deepEqual(JSON.parse(local.body), {
      method: 'POST',
      url: '/api/v1/products?expand=x&limit=2',
      forwardedFor: '203.0.113.9',
      contentType: 'application/json',
      body: JSON.stringify({ sku: 'ü-1', price: '12.50' }),
      // The service sees the gateway as a loopback peer either way, so its trust in X-Forwarded-For is unchanged.
      remote: '127.0.0.1',
    });
  });

  it('keeps every Set-Cookie of an answer without a body', async () => {
    const [network, local] = [await answer(overNetwork, { method: 'GET', path: '/cookies' }), await answer(inProcess, { method: 'GET', path: '/cookies' })];
    assert.deepEqual(local, network);
    assert.deepEqual(local.headers['set-cookie'], ['a=1; Path=/', 'b=2; Path=/; HttpOnly']);
  });

  it('answers a HEAD with the headers and no body, as the network does', async () => {
    const request = { method: 'HEAD' as const, path: '/anything', headers: { 'x-request-id': 'req_head' } };
    const [network, local] = [await answer(overNetwork, request), await answer(inProcess, request)];
    assert.deepEqual(local, network);
    assert.equal(local.body, '');
    assert.equal(local.headers['x-echo-id'], 'req_head');
  });

  it('gives a streamed answer whole, in order', async () => {
    const network = await answer(overNetwork, { method: 'GET', path: '/streamed' });
    const local = await answer(inProcess, { method: 'GET', path: '/streamed' });
    assert.equal(local.body, 'one,two,three');
    assert.equal(local.body, network.body);
    assert.equal(local.status, network.status);
    assert.equal(local.headers['content-type'], network.headers['content-type']);
  });

  it("closes the service's response once it is answered, as a server does", async () => {
    await answer(inProcess, { method: 'GET', path: '/closes?in-process' });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(closedResponses, ['/closes?in-process']);
  });

  it('fails like a reset connection when the service destroys its response', async () => {
    await assert.rejects(overNetwork.request({ method: 'GET', path: '/hangs-up' }), (error: unknown) => error instanceof errors.UndiciError);
    await assert.rejects(inProcess.request({ method: 'GET', path: '/hangs-up' }), (error: unknown) => error instanceof errors.UndiciError);
  });

  it('fails like a closed port once the service has stopped, so the proxy answers 503', async () => {
    const app = new Koa();
    app.use((ctx) => (ctx.body = 'up'));
    const stopping = await listen(app, 0);
    const dispatcher = new InProcessDispatcher(stopping);
    assert.equal((await answer(dispatcher, { method: 'GET', path: '/' })).body, 'up');
    await stopping.close();
    await assert.rejects(dispatcher.request({ method: 'GET', path: '/' }), (error: unknown) => error instanceof errors.UndiciError);
  });
});
