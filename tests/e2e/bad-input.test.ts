import assert from 'node:assert/strict';
import { request } from 'node:http';
import { brotliCompressSync } from 'node:zlib';
import { call, createMerchant, sharedStack, type ApiResponse, type Stack, type TestMerchant } from '../src/harness/index.js';

/** The reproductions of issue 12 (bad input found by an adversarial probe), each a precise 4xx now and nothing written. */
describe('bad input gets a precise 4xx, never a 5xx, and writes nothing', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  /** JSON text sent as is: JSON.stringify would never write `\ud800` or `\u0000` the way an attacker does. */
  const raw = (method: string, path: string, json: string, headers: Record<string, string> = {}) =>
    call(stack, method, path, { token: merchant.token, rawBody: json, headers });
  const fieldsOf = (response: ApiResponse) => {
    assert.equal(response.status, 422, response.text);
    assert.equal(response.body.code, 'validation_failed');
    return response.body.errors.map((error: { field: string; code: string }) => `${error.field}:${error.code}`);
  };

  it('refuses unpaired surrogates and NUL in every kind of stored string, naming the field', async () => {
    assert.deepEqual(fieldsOf(await raw('POST', '/api/v1/api-keys', '{"name":"x\\ud800","scopes":["products:read"]}')), ['name:invalid_string']);
    assert.deepEqual(fieldsOf(await raw('POST', '/api/v1/products', '{"sku":"S-1","title":"\\ud800","price":"1.00","currency":"EUR"}')), [
      'title:invalid_string',
    ]);
    assert.deepEqual(fieldsOf(await raw('POST', '/api/v1/products', '{"sku":"S-1","title":"a\\u0000b","price":"1.00","currency":"EUR"}')), [
      'title:invalid_string',
    ]);
    assert.deepEqual(fieldsOf(await raw('POST', '/api/v1/sources', '{"name":"Shop","kind":"custom","settings":{"url":"x\\u0000"}}')), [
      'settings.url:invalid_string',
    ]);
    assert.deepEqual(fieldsOf(await raw('POST', '/api/v1/rules', '{"name":"R","condition":"data.x == \\"\\u0000\\"","action":"forward"}')), [
      'condition:invalid_string',
    ]);
    const source = await call(stack, 'POST', '/api/v1/sources', { token: merchant.token, body: { name: 'Shop', kind: 'storefront' } });
    assert.deepEqual(
      fieldsOf(
        await raw(
          'POST',
          `/api/v1/sources/${source.body.id}/records`,
          '{"records":[{"type":"order","external_id":"O-1","occurred_at":"2026-11-22T10:00:00Z","data":{"note":"\\udfff"}}]}',
        ),
      ),
      ['records[0].data.note:invalid_string'],
    );
    const keys = await call(stack, 'GET', '/api/v1/api-keys', { token: merchant.token });
    assert.equal(keys.body.data.length, 1, "only the merchant's first key: nothing was created");
    const products = await call(stack, 'GET', '/api/v1/products', { token: merchant.token });
    assert.equal(products.body.data.length, 0);
  });

  it('refuses NUL in filters and in ids with a 4xx', async () => {
    assert.deepEqual(fieldsOf(await call(stack, 'GET', '/api/v1/products?sku=%00', { token: merchant.token })), ['sku:invalid_string']);
    const path = await call(stack, 'GET', '/api/v1/products/prod_%00', { token: merchant.token });
    assert.equal(path.status, 400, path.text);
    assert.equal(path.body.code, 'malformed_request');
  });

  it('refuses JSON nested 10,000 deep, also with an Idempotency-Key and in free-form objects', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const answer of [
      await raw('POST', '/api/v1/products', deep, { 'idempotency-key': `deep-${merchant.merchantId}` }),
      await raw('POST', '/api/v1/sources', `{"name":"S","kind":"custom","settings":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`),
    ]) {
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.code, 'malformed_request');
      assert.match(answer.body.detail, /nests deeper than 64 levels/);
    }
  });

  it('refuses a body that is not what its Content-Encoding says with 400', async () => {
    for (const encoding of ['gzip', 'br', 'deflate']) {
      const answer = await raw('POST', '/api/v1/products', '{"sku":"Z-1","title":"Zip","price":"1.00","currency":"EUR"}', { 'content-encoding': encoding });
      assert.equal(answer.status, 400, `${encoding}: ${answer.text}`);
      assert.equal(answer.body.code, 'malformed_request');
    }
    const compressed = brotliCompressSync(Buffer.from('{"sku":"Z-2","title":"Zip","price":"1.00","currency":"EUR"}'));
    const accepted = await fetch(`${stack.baseUrl}/api/v1/products`, {
      method: 'POST',
      headers: { authorization: `Bearer ${merchant.token}`, 'content-type': 'application/json', 'content-encoding': 'br' },
      body: compressed,
    });
    assert.equal(accepted.status, 201, await accepted.text());
  });

  it('refuses times before year 1 on every time filter', async () => {
    for (const path of ['/api/v1/audit', '/api/v1/events', '/api/v1/webhooks/deliveries', '/api/v1/webhooks/dead-letters']) {
      assert.deepEqual(fieldsOf(await call(stack, 'GET', `${path}?since=0000-01-01T00:00:00Z`, { token: merchant.token })), ['since:invalid_timestamp'], path);
    }
  });

  it('answers a chunked body just over 1 MiB with 413 at the edge', async () => {
    const origin = new URL(stack.baseUrl);
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const sent = request(
        {
          host: '127.0.0.1',
          port: origin.port,
          method: 'POST',
          path: '/api/v1/products',
          headers: { host: origin.host, authorization: `Bearer ${merchant.token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
        },
      );
      sent.on('error', reject);
      const chunk = 'x'.repeat(64 * 1024);
      sent.write('{"title":"');
      for (let written = 0; written <= 1024 * 1024; written += chunk.length) sent.write(chunk);
      sent.end('"}');
    });
    assert.equal(answer.status, 413, answer.text);
    assert.equal(JSON.parse(answer.text).code, 'payload_too_large');
  });
});
