import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Merx, { MerxError, MerxOperator, RateLimitError, VERSION } from '@merx/sdk';
import { FaultProxy } from './support/proxy.js';
import { merxServer, packageRoot, type Merchant, type MerxServer } from './support/server.js';

const run = promisify(execFile);

describe('client options, per-request options and telemetry', function () {
  this.timeout(120_000);
  let server: MerxServer;
  let merchant: Merchant;
  let proxy: FaultProxy;

  before(async () => {
    server = await merxServer();
    merchant = await server.createMerchant();
  });
  beforeEach(async () => {
    proxy = await FaultProxy.start(server.baseUrl);
  });
  afterEach(() => proxy.close());

  it('sends User-Agent merx-node/<version> node/<version>, default headers and per-request headers', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url, defaultHeaders: { 'X-Team': 'catalog' } });
    await merx.products.list({ limit: 1 }, { headers: { 'X-Trace': 'abc' } });
    const [call] = proxy.seen({ path: '/api/v1/products' });
    assert.equal(call!.headers['user-agent'], `merx-node/${VERSION} node/${process.versions.node}`);
    assert.equal(call!.headers['x-team'], 'catalog');
    assert.equal(call!.headers['x-trace'], 'abc');
    assert.equal(VERSION, (JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version);
  });

  it('GET carries no Idempotency-Key; query parameters are encoded', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    await merx.products.list({ limit: 2, status: 'active' });
    const [call] = proxy.seen({ path: '/api/v1/products' });
    assert.equal(call!.headers['idempotency-key'], undefined);
    assert.equal(new URL(call!.path, proxy.url).search, '?limit=2&status=active');
  });

  it('a custom fetch is used for every request, the token exchange included', async () => {
    const seen: string[] = [];
    const counting: typeof fetch = (input, init) => {
      seen.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
      return fetch(input, init);
    };
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl, fetch: counting });
    await merx.merchant.retrieve();
    assert.deepEqual(seen, ['POST /oauth/token', 'GET /api/v1/merchant']);
  });

  it('a Retry-After beyond a minute is not waited out: the RateLimitError says how long', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    proxy.inject({
      kind: 'respond',
      path: '/api/v1/products',
      status: 429,
      headers: { 'Retry-After': '3600' },
      body: JSON.stringify({ status: 429, code: 'rate_limited', throttle_class: 'sustained' }),
    });
    const started = Date.now();
    await assert.rejects(merx.products.list(), (error: unknown) => error instanceof RateLimitError && error.retryAfter === 3600);
    assert.ok(Date.now() - started < 5_000);
    assert.equal(proxy.seen({ path: '/api/v1/products' }).length, 1);
  });

  it('MERX_LOG=debug logs each request without secrets', async () => {
    const script = `
      import Merx from '@merx/sdk';
      const merx = new Merx({ apiKey: process.env.KEY, baseUrl: process.env.URL });
      await merx.products.list({ limit: 1 });`;
    const { stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: packageRoot,
      env: { ...process.env, KEY: merchant.apiKey, URL: server.baseUrl, MERX_LOG: 'debug' },
    });
    assert.match(stderr, /\[merx\] POST \/oauth\/token 200 \d+ms/);
    assert.match(stderr, /\[merx\] GET \/api\/v1\/products 200 \d+ms request_id=\S+/);
    assert.ok(!stderr.includes(merchant.apiKey.slice(-10)) && !/Bearer|eyJ/.test(stderr), 'no key or token in the log');
  });

  it('MerxOperator uses the operator token as it is, with no token exchange', async () => {
    const operator = new MerxOperator({ operatorToken: server.operatorToken, baseUrl: proxy.url });
    const throttle = await operator.merchants.throttle.retrieve(merchant.id);
    assert.equal(throttle.merchant_id, merchant.id);
    assert.equal(proxy.seen({ path: '/oauth/token' }).length, 0);
    assert.equal(proxy.seen()[0]!.headers.authorization, `Bearer ${server.operatorToken}`);
  });

  it('an aborted signal cancels the call and its retries', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    await merx.products.list(); // the token first
    proxy.inject({ kind: 'delay', path: '/api/v1/products', ms: 2_000 });
    const controller = new AbortController();
    const call = merx.products.list({}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(call, (error: unknown) => error instanceof Error && error.name === 'AbortError');
    assert.equal(proxy.seen({ path: '/api/v1/products' }).length, 2, 'no retry after the caller gave up');
  });

  it('an abort during the wait before a retry ends the call at once', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    await merx.products.list();
    proxy.inject({ kind: 'respond', path: '/api/v1/products', status: 503, headers: { 'Retry-After': '30' } });
    const controller = new AbortController();
    const started = Date.now();
    const call = merx.products.list({}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await assert.rejects(call, (error: unknown) => error instanceof Error && error.name === 'AbortError');
    assert.ok(Date.now() - started < 5_000, 'did not sit out the 30 s Retry-After');
  });

  it('an answer that claims JSON but is not is a MerxError, not a SyntaxError', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    proxy.inject({
      kind: 'respond',
      path: '/api/v1/merchant',
      status: 200,
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'req_broken' },
      body: '<html>gateway</html>',
    });
    await assert.rejects(merx.merchant.retrieve(), (error: unknown) => error instanceof MerxError && error.status === 200 && error.requestId === 'req_broken');
  });
});
