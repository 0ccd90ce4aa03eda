import assert from 'node:assert/strict';
import Merx, { type StoredToken, type TokenStore } from '@merx/sdk';
import { FaultProxy } from './support/proxy.js';
import { eventually, merxServer, type Merchant, type MerxServer } from './support/server.js';

describe('tokens: exchanged once, shared, refreshed before expiry and once on a 401', function () {
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

  const tokenRequests = () => proxy.seen({ method: 'POST', path: '/oauth/token' });

  it('sends the key only to the token endpoint, as HTTP Basic with the client id', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    await merx.products.list();
    const [token] = tokenRequests();
    assert.ok(token);
    const clientId = merchant.apiKey.slice(0, merchant.apiKey.lastIndexOf('_'));
    assert.equal(token.headers.authorization, `Basic ${Buffer.from(`${clientId}:${merchant.apiKey}`).toString('base64')}`);
    assert.equal(token.body, 'grant_type=client_credentials');
    for (const seen of proxy.seen().filter((request) => request.path !== '/oauth/token')) {
      assert.match(String(seen.headers.authorization), /^Bearer ey/);
      assert.ok(!JSON.stringify(seen).includes(merchant.apiKey), 'the key never leaves the token request');
    }
  });

  it('concurrent calls share one token request', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    const pages = await Promise.all(Array.from({ length: 8 }, () => merx.products.list({ limit: 1 })));
    assert.equal(pages.length, 8);
    assert.equal(tokenRequests().length, 1);
    await merx.products.list({ limit: 1 });
    assert.equal(tokenRequests().length, 1, 'the cached token is reused');
  });

  it('refreshes the token before it expires, with no failed call', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    await merx.products.list({ limit: 1 });
    // A 10 s token is refreshed half way through its life: keep calling until the client has fetched a second one.
    await eventually(
      async () => {
        await merx.products.list({ limit: 1 });
        return tokenRequests().length >= 2;
      },
      'a second token request',
      20_000,
    );
    const apiCalls = proxy.seen({ method: 'GET', path: '/api/v1/products' });
    assert.ok(
      apiCalls.every((call) => call.status === 200),
      'no call was refused for an expired token',
    );
  });

  it('on a 401 refreshes once and retries the call', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    await merx.products.list({ limit: 1 });
    proxy.inject({
      kind: 'respond',
      path: '/api/v1/products',
      status: 401,
      body: JSON.stringify({ status: 401, code: 'invalid_token', title: 'Unauthorized' }),
    });
    const page = await merx.products.list({ limit: 1 });
    assert.ok(Array.isArray(page.data));
    assert.equal(tokenRequests().length, 2);
    const calls = proxy.seen({ path: '/api/v1/products' });
    assert.equal(calls.length, 3);
    assert.notEqual(calls[1]!.headers.authorization, calls[2]!.headers.authorization, 'the retry carries the new token');
  });

  it('a second 401 in a row is an AuthenticationError, not a loop', async () => {
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
    proxy.inject({ kind: 'respond', path: '/api/v1/products', status: 401, body: JSON.stringify({ status: 401, code: 'invalid_token' }) }, 2);
    await assert.rejects(merx.products.list(), { name: 'AuthenticationError', status: 401, code: 'invalid_token' });
    assert.equal(tokenRequests().length, 2);
  });

  it('a tokenStore carries the token to the next client: no second exchange while it is fresh', async () => {
    let saved: StoredToken | undefined;
    const store: TokenStore = {
      load: () => saved,
      save: (token) => {
        saved = token;
      },
    };
    await new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url, tokenStore: store }).products.list({ limit: 1 });
    assert.equal(tokenRequests().length, 1);
    assert.ok(saved && saved.expiresAt > Date.now() && saved.accessToken.startsWith('ey'));
    await new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url, tokenStore: store }).products.list({ limit: 1 });
    assert.equal(tokenRequests().length, 1, 'the second client used the stored token');

    saved = { ...saved, refreshAt: Date.now() - 1 }; // due for a refresh: not used
    await new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url, tokenStore: store }).products.list({ limit: 1 });
    assert.equal(tokenRequests().length, 2);
    assert.ok(saved.refreshAt > Date.now(), 'the new token was saved');
  });
});
