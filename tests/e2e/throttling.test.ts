import assert from 'node:assert/strict';
import { call, createMerchant, sharedStack, type Stack, type TestMerchant } from '../src/harness/index.js';

const POLICY = /^"(burst|sustained|writes|sensitive)";q=\d+;w=\d+(, "(burst|sustained|writes|sensitive)";q=\d+;w=\d+)*$/;

async function until<T>(attempt: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await attempt();
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('throttle classes through the gateway', function () {
  this.timeout(30_000);
  let stack: Stack;
  let merchant: TestMerchant;
  const operator = () => ({ authorization: `Bearer ${stack.operatorToken}` });

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  it("states the plan's classes in RateLimit-Policy and RateLimit on every merchant response", async () => {
    const read = await call(stack, 'GET', '/api/v1/products', { token: merchant.token });
    assert.equal(read.status, 200);
    // A sandbox merchant (the default) gets the sandbox plan, named in its access token; the e2e
    // stack widens its buckets through MERX_THROTTLE_PLANS (E2E_THROTTLE_ENV).
    assert.equal(read.headers.get('ratelimit-policy'), '"burst";q=1000;w=2, "sustained";q=5000;w=3600');
    assert.match(read.headers.get('ratelimit') ?? '', /^"burst";r=\d+;t=\d+, "sustained";r=\d+;t=\d+$/);
    const write = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku: 'RL-1', title: 'Throttled', price: '1.00', currency: 'USD' },
    });
    assert.equal(write.status, 201);
    assert.match(write.headers.get('ratelimit-policy') ?? '', POLICY);
    assert.match(write.headers.get('ratelimit-policy') ?? '', /, "writes";q=1000;w=2$/);
  });

  it('an operator override throttles one merchant with a contract-valid 429; another merchant is unaffected; it recovers', async () => {
    const other = await createMerchant(stack);
    const set = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, {
      headers: operator(),
      body: { burst: { capacity: 3, refill_per_second: 2 } },
    });
    assert.equal(set.status, 200);
    assert.equal(set.body.object, 'throttle_override');
    assert.deepEqual(set.body.overrides, { burst: { capacity: 3, refill_per_second: 2 } });
    assert.equal(set.body.version, 1);
    const stored = await call(stack, 'GET', `/admin/v1/merchants/${merchant.merchantId}/throttle`, { headers: operator() });
    assert.deepEqual(stored.body, set.body);

    // The gateway learns it from merchants.throttle_updated: moments, not a token refresh.
    const refused = await until(
      async () => {
        const response = await call(stack, 'GET', '/api/v1/products', { token: merchant.token });
        return response.status === 429 ? response : undefined;
      },
      5_000,
      'override applied',
    );
    assert.equal(refused.body.code, 'rate_limited');
    assert.equal(refused.body.throttle_class, 'burst');
    assert.equal(String(refused.body.retry_after), refused.headers.get('retry-after'));
    assert.match(refused.headers.get('ratelimit-policy') ?? '', /^"burst";q=3;w=2, /);

    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: other.token })).status, 200);
    await until(
      async () => ((await call(stack, 'GET', '/api/v1/products', { token: merchant.token })).status === 200 ? true : undefined),
      3_000,
      'burst refilled',
    );

    const cleared = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, { headers: operator(), body: {} });
    assert.equal(cleared.body.version, 2);
    await until(
      async () => {
        const response = await call(stack, 'GET', '/api/v1/products', { token: merchant.token });
        return response.headers.get('ratelimit-policy')?.startsWith('"burst";q=1000;') ? true : undefined;
      },
      5_000,
      'override cleared',
    );
  });

  it('the writes class refuses while reads continue', async () => {
    await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, {
      headers: operator(),
      body: { writes: { capacity: 2, refill_per_second: 0.01 } },
    });
    const create = () =>
      call(stack, 'POST', '/api/v1/products', {
        token: merchant.token,
        body: { sku: `W-${Math.random().toString(36).slice(2, 8)}`, title: 'w', price: '1.00', currency: 'USD' },
      });
    const refused = await until(
      async () => {
        const response = await create();
        return response.status === 429 ? response : undefined;
      },
      5_000,
      'writes exhausted',
    );
    assert.equal(refused.body.throttle_class, 'writes');
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: merchant.token })).status, 200, 'reads continue');
  });

  it('rejects invalid overrides and unknown merchants', async () => {
    const invalid = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, {
      headers: operator(),
      body: { burst: { capacity: -1 }, hourly: {} },
    });
    assert.equal(invalid.status, 422);
    assert.deepEqual(invalid.body.errors.map((e: { field: string }) => e.field).sort(), ['burst.capacity', 'hourly']);
    const unknown = await call(stack, 'PUT', '/admin/v1/merchants/mch_00000000000000000000000000/throttle', { headers: operator(), body: {} });
    assert.equal(unknown.status, 404);
    const anonymous = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, { body: {} });
    assert.equal(anonymous.status, 401);
  });

  it('throttles the token endpoint per client id in the sensitive class; another key is unaffected', async () => {
    const other = await createMerchant(stack);
    const exchange = (apiKey: string, clientId: string) =>
      call(stack, 'POST', '/oauth/token', {
        rawBody: 'grant_type=client_credentials',
        contentType: 'application/x-www-form-urlencoded',
        headers: { authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}` },
      });
    // The e2e stack allows 10 per 2 s per client id (MERX_THROTTLE_TOKEN_ENDPOINT).
    const refused = await until(
      async () => {
        const response = await exchange(merchant.apiKey, merchant.clientId);
        return response.status === 429 ? response : undefined;
      },
      5_000,
      'token budget exhausted',
    );
    assert.equal(refused.body.throttle_class, 'sensitive');
    assert.match(refused.headers.get('ratelimit-policy') ?? '', /^"sensitive";q=10;w=2$/);
    assert.equal((await exchange(other.apiKey, other.clientId)).status, 200);
    await until(async () => ((await exchange(merchant.apiKey, merchant.clientId)).status === 200 ? true : undefined), 6_000, 'token budget back');
  });
});
