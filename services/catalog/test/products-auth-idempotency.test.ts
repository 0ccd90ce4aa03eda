import assert from 'node:assert/strict';
import { newId } from '@merx/kit';
import { ISSUER, useHarness, type ApiClient, type ApiResponse, type Harness } from './harness.js';

const BODY = { sku: 'IDEM-1', title: 'Idempotent', price: '5.00', currency: 'EUR' };

describe('catalog: authentication and idempotency (PostgreSQL)', () => {
  let harness: Harness;
  let api: ApiClient;

  useHarness(
    (started) => (harness = started),
    (merchant) => (api = merchant),
  );

  const ids = async (client: ApiClient) => (await client.get('/api/v1/products?limit=100')).body.data.map((p: { id: string }) => p.id);

  describe('authentication and scopes', () => {
    function assertUnauthenticated(response: ApiResponse) {
      assert.equal(response.status, 401, response.text);
      assert.equal(response.body.code, 'unauthenticated');
      assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
    }

    it('answers 401 with WWW-Authenticate without a token, and writes nothing', async () => {
      assertUnauthenticated(await api.get('/api/v1/products', { token: null }));
      assertUnauthenticated(await api.post('/api/v1/products', BODY, { token: null }));
      assert.deepEqual(await ids(api), []);
      assert.deepEqual(await api.events(), []);
    });

    it('answers 401 to an expired token', async () => {
      const past = Math.floor(Date.now() / 1000) - 3600;
      const expired = await harness.signToken({ merchantId: api.merchantId, issuedAt: past, expiresAt: past + 900 });
      const response = await api.get('/api/v1/products', { token: expired });
      assertUnauthenticated(response);
      assert.match(response.body.detail, /expired/);
      assertUnauthenticated(await api.post('/api/v1/products', BODY, { token: expired }));
      assert.deepEqual(await ids(api), []);
      assert.deepEqual(await api.events(), []);
    });

    it('answers 401 to a token for another audience', async () => {
      const foreign = await harness.signToken({ merchantId: api.merchantId, audience: 'urn:someone:else' });
      assertUnauthenticated(await api.post('/api/v1/products', BODY, { token: foreign }));
      assert.deepEqual(await ids(api), []);
      assert.deepEqual(await api.events(), []);
    });

    it('answers 401 to a tampered or malformed token', async () => {
      const token = api.token;
      const [header, payload] = token.split('.');
      const otherIssuer = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
      otherIssuer.iss = `${ISSUER}-evil`;
      const tampered = `${header}.${Buffer.from(JSON.stringify(otherIssuer)).toString('base64url')}.${token.split('.')[2]}`;
      assertUnauthenticated(await api.get('/api/v1/products', { token: tampered }));
      assertUnauthenticated(await api.post('/api/v1/products', BODY, { token: tampered }));
      assertUnauthenticated(await api.get('/api/v1/products', { token: 'not.a.jwt' }));
      assert.deepEqual(await ids(api), []);
      assert.deepEqual(await api.events(), []);
    });

    it('answers 403 insufficient_scope to POST without products:write', async () => {
      const reader = harness.as(api.merchantId, await harness.signToken({ merchantId: api.merchantId, scope: 'products:read' }));
      const response = await reader.post('/api/v1/products', BODY);
      assert.equal(response.status, 403, response.text);
      assert.equal(response.body.code, 'insufficient_scope');
      assert.equal(response.body.required_scope, 'products:write');
      assert.deepEqual(await ids(api), []);
      assert.deepEqual(await api.events(), []);
    });

    it('lets products:read list and retrieve but not change or delete', async () => {
      const product = await api.create();
      const reader = harness.as(api.merchantId, await harness.signToken({ merchantId: api.merchantId, scope: 'products:read' }));
      assert.equal((await reader.get(`/api/v1/products/${product.id}`)).status, 200);
      assert.deepEqual(await ids(reader), [product.id]);
      assert.equal((await reader.patch(`/api/v1/products/${product.id}`, { title: 'x' })).status, 403);
      assert.equal((await reader.delete(`/api/v1/products/${product.id}`)).status, 403);
      assert.deepEqual((await api.get(`/api/v1/products/${product.id}`)).body, product);
      assert.deepEqual(
        (await api.events()).map((e) => e.topic),
        ['products.created'],
      );
    });

    it('answers 403 to GET with only products:write', async () => {
      const writer = harness.as(api.merchantId, await harness.signToken({ merchantId: api.merchantId, scope: 'products:write' }));
      const response = await writer.get('/api/v1/products');
      assert.equal(response.status, 403);
      assert.equal(response.body.required_scope, 'products:read');
    });
  });

  describe('Idempotency-Key on POST', () => {
    const post = (client: ApiClient, key: string, body: unknown = BODY) => client.post('/api/v1/products', body, { headers: { 'idempotency-key': key } });

    it('replays a 4xx answer too, naming the first request in Original-Request-Id', async () => {
      await api.create({ sku: 'TAKEN-1' });
      const key = `conflict-${newId('req')}`;
      const first = await api.post('/api/v1/products', { ...BODY, sku: 'TAKEN-1' }, { headers: { 'idempotency-key': key } });
      assert.equal(first.status, 409);
      const again = await api.post('/api/v1/products', { ...BODY, sku: 'TAKEN-1' }, { headers: { 'idempotency-key': key } });
      assert.equal(again.status, 409);
      assert.equal(again.text, first.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.headers.get('original-request-id'), first.headers.get('x-request-id'));
      assert.notEqual(again.headers.get('x-request-id'), first.headers.get('x-request-id'));
    });

    it('treats the path with and without its trailing slash as the same request', async () => {
      const key = `slash-${newId('req')}`;
      const first = await api.post('/api/v1/products/', BODY, { headers: { 'idempotency-key': key } });
      const again = await api.post('/api/v1/products', BODY, { headers: { 'idempotency-key': key } });
      assert.equal(first.status, 201);
      assert.equal(again.status, 201);
      assert.equal(again.text, first.text);
      assert.equal((await ids(api)).length, 1);
    });

    it('replays the first answer byte for byte and creates one product with one event', async () => {
      const key = `key-${newId('req')}`;
      const first = await post(api, key);
      assert.equal(first.status, 201, first.text);
      const replay = await post(api, key);
      assert.equal(replay.status, 201);
      assert.equal(replay.text, first.text);
      for (const header of ['etag', 'location', 'content-type']) assert.equal(replay.headers.get(header), first.headers.get(header));
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.notEqual(replay.headers.get('x-request-id'), first.headers.get('x-request-id'));
      assert.deepEqual(await ids(api), [first.body.id]);
      const events = await api.events();
      assert.deepEqual(
        events.map((e) => e.topic),
        ['products.created'],
      );
      assert.deepEqual(events[0]!.data.object, first.body);
    });

    it('treats the same body with its keys in another order as the same request', async () => {
      const key = 'reordered-body';
      const first = await post(api, key, BODY);
      const reordered = Object.fromEntries(Object.entries(BODY).reverse());
      const replay = await post(api, key, reordered);
      assert.equal(replay.text, first.text);
      assert.equal((await ids(api)).length, 1);
    });

    it('answers 422 idempotency_key_reused to the same key with another body', async () => {
      const key = 'reused-key';
      const first = await post(api, key);
      const other = await post(api, key, { ...BODY, sku: 'IDEM-2' });
      assert.equal(other.status, 422, other.text);
      assert.equal(other.body.code, 'idempotency_key_reused');
      assert.deepEqual(await ids(api), [first.body.id]);
      assert.equal((await api.events()).length, 1);
    });

    it('answers 422 to a key of 256 characters, and accepts one of 255', async () => {
      const tooLong = await post(api, 'k'.repeat(256));
      assert.equal(tooLong.status, 422, tooLong.text);
      assert.equal(tooLong.body.code, 'validation_failed');
      assert.deepEqual(await ids(api), []);
      assert.deepEqual(await api.events(), []);
      assert.equal((await post(api, 'k'.repeat(255))).status, 201);
    });

    it("keeps one merchant's keys independent of another's", async () => {
      const other = await harness.merchant();
      const key = 'shared-key';
      const mine = await post(api, key);
      const theirs = await post(other, key, { ...BODY, title: 'Theirs' });
      assert.equal(theirs.status, 201, theirs.text);
      assert.equal(theirs.headers.get('idempotent-replayed'), null);
      assert.notEqual(theirs.body.id, mine.body.id);
      assert.equal(theirs.body.title, 'Theirs');
      assert.deepEqual(await ids(api), [mine.body.id]);
      assert.deepEqual(await ids(other), [theirs.body.id]);
      assert.equal((await api.events()).length, 1);
      assert.equal((await other.events()).length, 1);
    });

    it('creates exactly one product when two identical requests race', async () => {
      const key = 'racing-key';
      const answers = await Promise.all([post(api, key), post(api, key)]);
      const created = answers.filter((answer) => answer.status === 201);
      const others = answers.filter((answer) => answer.status !== 201);
      assert.ok(created.length >= 1, answers.map((a) => a.text).join('\n'));
      for (const other of others) {
        assert.equal(other.status, 409, other.text);
        assert.equal(other.body.code, 'idempotency_key_in_use');
      }
      if (created.length === 2) assert.equal(created[0]!.text, created[1]!.text);
      assert.deepEqual(await ids(api), [created[0]!.body.id]);
      assert.deepEqual(
        (await api.events()).map((e) => e.topic),
        ['products.created'],
      );
      const retry = await post(api, key);
      assert.equal(retry.text, created[0]!.text);
    });
  });
});
