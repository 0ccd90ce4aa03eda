import assert from 'node:assert/strict';
import { request } from 'node:http';
import { SENSITIVE_OPERATIONS } from '@merx/gateway';
import { call, createMerchant, eventually, sharedStack, type Stack, type TestMerchant } from '../src/harness/index.js';

/** A request whose path goes on the wire exactly as written: fetch would normalise `.` segments and more. */
function rawRequest(stack: Stack, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; text: string }> {
  const origin = new URL(stack.baseUrl);
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const sent = request(
      {
        host: '127.0.0.1',
        port: origin.port,
        method,
        path,
        headers: {
          host: origin.host,
          authorization: `Bearer ${token}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    sent.on('error', reject);
    sent.end(payload);
  });
}

/** Every way a client might write the same path that some parser could read as the operation. */
function variantsOf(path: string): string[] {
  const segments = path.split('/');
  const last = segments.length - 1;
  const word = segments[last]!;
  const withLast = (replacement: string) => [...segments.slice(0, last), replacement].join('/');
  const firstLetter = word.search(/[a-z]/);
  return [
    withLast(word.toUpperCase()),
    withLast(word[0]!.toUpperCase() + word.slice(1)),
    path.replace('/api/', '/API/'),
    path.replace('/v1/', '/V1/'),
    withLast(`${word.slice(0, firstLetter)}%${word.charCodeAt(firstLetter).toString(16)}${word.slice(firstLetter + 1)}`),
    withLast(`${word.slice(0, firstLetter)}%${word.charCodeAt(firstLetter).toString(16).toUpperCase()}${word.slice(firstLetter + 1)}`.toUpperCase()),
    `${path}/`,
    withLast(`/${word}`),
    withLast(`./${word}`),
    withLast(`x/../${word}`),
    withLast(`%2e/${word}`),
  ];
}

describe('sensitive operations cannot step outside their throttle class by case or encoding', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  it('counts every written form of every sensitive operation, or refuses it without acting', async function () {
    this.timeout(60_000);
    merchant = await createMerchant(stack);
    const subscription = await call(stack, 'POST', '/api/v1/webhooks/subscriptions', {
      token: merchant.token,
      body: { url: 'https://example.com/hooks', topics: ['products'] },
    });
    assert.equal(subscription.status, 201, subscription.text);
    const key = await call(stack, 'POST', '/api/v1/api-keys', { token: merchant.token, body: { name: 'Target', scopes: ['products:read'] } });
    assert.equal(key.status, 201, key.text);
    const destination = await call(stack, 'POST', '/api/v1/destinations', {
      token: merchant.token,
      body: { name: 'Target', url: 'http://127.0.0.1:9/erp', status: 'paused' },
    });
    assert.equal(destination.status, 201, destination.text);
    const keysBefore = (await call(stack, 'GET', '/api/v1/api-keys?limit=100', { token: merchant.token })).body.data.length;

    // One sensitive request a minute, then spend it.
    const set = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
      body: { sensitive: { limit: 1, window_seconds: 60 } },
    });
    assert.equal(set.status, 200, set.text);
    await eventually(
      () => call(stack, 'POST', '/api/v1/webhooks/dead-letters/replay', { token: merchant.token, body: {} }),
      (response) => response.status === 429,
      'the lowered sensitive budget to apply and be spent',
    );

    const operations: Array<{ method: string; path: string; body?: unknown }> = [
      { method: 'POST', path: '/api/v1/api-keys', body: { name: 'Sneaked in', scopes: ['products:read'] } },
      { method: 'DELETE', path: `/api/v1/api-keys/${key.body.id}` },
      { method: 'POST', path: `/api/v1/webhooks/subscriptions/${subscription.body.id}/rotate-secret` },
      { method: 'POST', path: `/api/v1/destinations/${destination.body.id}/rotate-secret` },
      { method: 'POST', path: '/api/v1/sandbox/reset', body: {} },
      { method: 'POST', path: '/api/v1/webhooks/dead-letters/replay', body: {} },
      { method: 'POST', path: '/api/v1/webhooks/dead-letters/del_01jd3k7q8m2x4v6b9c0d1e2f3g/replay', body: {} },
    ];
    // Every sensitive operation the gateway knows (but the token endpoint, counted per client id) is walked.
    for (const operation of SENSITIVE_OPERATIONS.filter((known) => !known.path.test('/oauth/token'))) {
      assert.ok(
        operations.some(({ method, path }) => method === operation.method && operation.path.test(path)),
        `no variant walk for ${operation.what}`,
      );
    }
    const executed: string[] = [];
    for (const { method, path, body } of operations) {
      for (const variant of [path, ...variantsOf(path)]) {
        const answer = await rawRequest(stack, method, variant, merchant.token, body);
        if (![400, 404, 405, 429].includes(answer.status)) executed.push(`${method} ${variant} → ${answer.status} ${answer.text.slice(0, 120)}`);
        if (answer.status === 429) assert.match(answer.text, /"throttle_class":"sensitive"/, `${method} ${variant}`);
      }
    }
    assert.deepEqual(executed, [], 'no written form of a sensitive operation ran past the spent budget');

    const keysAfter = (await call(stack, 'GET', '/api/v1/api-keys?limit=100', { token: merchant.token })).body.data;
    assert.equal(keysAfter.length, keysBefore, 'no key was created');
    assert.equal(keysAfter.find((listed: { id: string }) => listed.id === key.body.id)?.revoked_at, null, 'the target key was not revoked');
    assert.deepEqual(
      stack.events
        .forMerchant(merchant.merchantId)
        .filter((event) => ['webhooks.secret_rotated', 'sandbox.reset', 'api_keys.revoked'].includes(event.topic))
        .map((event) => event.topic),
      [],
      'no secret rotated, no reset, no revocation',
    );
    const unrotated = await call(stack, 'GET', `/api/v1/destinations/${destination.body.id}`, { token: merchant.token });
    assert.equal(unrotated.body.version, 1, "the destination's secret was not rotated");
  });
});
