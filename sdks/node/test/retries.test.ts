import assert from 'node:assert/strict';
import Merx, { ConnectionError, InternalServerError, RateLimitError, TimeoutError } from '@merx/sdk';
import { FaultProxy } from './support/proxy.js';
import { merxServer, type Merchant, type MerxServer } from './support/server.js';

describe('retries: backoff honouring Retry-After, one Idempotency-Key across attempts', function () {
  this.timeout(120_000);
  let server: MerxServer;
  let merchant: Merchant;
  let proxy: FaultProxy;
  let merx: Merx;

  before(async () => {
    server = await merxServer();
  });
  beforeEach(async () => {
    merchant = await server.createMerchant();
    proxy = await FaultProxy.start(server.baseUrl);
    merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
  });
  afterEach(() => proxy.close());

  const creates = () => proxy.seen({ method: 'POST', path: '/api/v1/products' });

  it('retries a 503 after the Retry-After it gives, with the same Idempotency-Key', async () => {
    proxy.inject({ kind: 'respond', method: 'POST', path: '/api/v1/products', status: 503, headers: { 'Retry-After': '1' } });
    const product = await merx.products.create({ sku: 'RETRY-1', title: 'Retried', price: '5.00', currency: 'USD' });
    const [failed, succeeded] = creates();
    assert.ok(failed && succeeded);
    assert.equal(failed.status, 503);
    assert.equal(succeeded.status, 201);
    assert.match(String(failed.headers['idempotency-key']), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(succeeded.headers['idempotency-key'], failed.headers['idempotency-key']);
    assert.ok(succeeded.at - failed.at >= 950, `waited ${succeeded.at - failed.at} ms for Retry-After: 1`);
    assert.equal(product.sku, 'RETRY-1');
  });

  it('a create whose answer was lost is retried and still creates one product', async () => {
    proxy.inject({ kind: 'cutAfterForward', method: 'POST', path: '/api/v1/products' });
    const product = await merx.products.create({ sku: 'LOST-1', title: 'Answer lost', price: '2.00', currency: 'USD' });
    const attempts = creates();
    assert.equal(attempts.length, 2);
    assert.equal(attempts[0]!.status, 201, 'Merx created it the first time');
    assert.equal(attempts[1]!.headers['idempotency-key'], attempts[0]!.headers['idempotency-key']);
    const all = [];
    for await (const item of merx.products.list({ limit: 100 })) all.push(item);
    assert.deepEqual(
      all.filter((item) => item.sku === 'LOST-1').map((item) => item.id),
      [product.id],
    );
  });

  it('retries a dropped connection and a 429, then succeeds', async () => {
    proxy.inject({ kind: 'drop', method: 'GET', path: '/api/v1/products' });
    proxy.inject({
      kind: 'respond',
      method: 'GET',
      path: '/api/v1/products',
      status: 429,
      headers: { 'Retry-After': '0' },
      body: JSON.stringify({ status: 429, code: 'rate_limited' }),
    });
    const page = await merx.products.list();
    assert.ok(Array.isArray(page.data));
    assert.deepEqual(
      proxy.seen({ path: '/api/v1/products' }).map((seen) => seen.fault ?? seen.status),
      ['drop', 'respond', 200],
    );
  });

  it("the caller's idempotencyKey is sent on every attempt", async () => {
    proxy.inject({ kind: 'respond', method: 'POST', path: '/api/v1/products', status: 502 });
    await merx.products.create({ sku: 'KEY-1', title: 'Own key', price: '1.00', currency: 'USD' }, { idempotencyKey: 'node-sdk-own-key-1' });
    assert.deepEqual(
      creates().map((seen) => seen.headers['idempotency-key']),
      ['node-sdk-own-key-1', 'node-sdk-own-key-1'],
    );
  });

  it('gives up after maxRetries with the typed error of the last answer', async () => {
    proxy.inject({ kind: 'respond', path: '/api/v1/products', status: 503, headers: { 'Retry-After': '0' } }, 3);
    await assert.rejects(merx.products.list({}, { maxRetries: 1 }), InternalServerError);
    assert.equal(proxy.seen({ path: '/api/v1/products' }).length, 2);
    assert.equal(proxy.pendingFaults(), 1);
    const noRetries = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url, maxRetries: 0 });
    await assert.rejects(noRetries.products.list(), InternalServerError);
    assert.equal(proxy.pendingFaults(), 0, 'maxRetries: 0 on the client made one attempt');

    proxy.inject({
      kind: 'respond',
      path: '/api/v1/products',
      status: 429,
      headers: { 'Retry-After': '7' },
      body: JSON.stringify({ status: 429, code: 'rate_limited', throttle_class: 'burst' }),
    });
    await assert.rejects(noRetries.products.list(), (error: unknown) => {
      assert.ok(error instanceof RateLimitError);
      assert.equal(error.retryAfter, 7);
      assert.equal(error.throttleClass, 'burst');
      return true;
    });
  });

  it('a call slower than its timeout is a TimeoutError; a closed port a ConnectionError', async () => {
    await merx.products.list(); // the token first, so the delay below hits the call itself
    proxy.inject({ kind: 'delay', path: '/api/v1/products', ms: 1_500 });
    await assert.rejects(merx.products.list({}, { timeout: 300, maxRetries: 0 }), TimeoutError);
    const closed = await FaultProxy.start(server.baseUrl);
    const url = closed.url;
    await closed.close();
    const error = await new Merx({ apiKey: merchant.apiKey, baseUrl: url, maxRetries: 0 }).products.list().then(
      () => null,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof ConnectionError && !(error instanceof TimeoutError), String(error));
  });
});
