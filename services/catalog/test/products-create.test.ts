import assert from 'node:assert/strict';
import { fieldsOf, useHarness, type ApiClient, type Harness } from './harness.js';

const SEED = { sku: 'TSHIRT-BLK-M', title: 'Black T-shirt, size M', price: '19.99', currency: 'USD' };
const PRODUCT_ID = /^prod_[0-9a-hjkmnp-tv-z]{26}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('catalog: creating products (PostgreSQL)', () => {
  let harness: Harness;
  let api: ApiClient;

  useHarness(
    (started) => (harness = started),
    (merchant) => (api = merchant),
  );

  async function assertCreated(path: string) {
    const response = await api.post(path, SEED);
    assert.equal(response.status, 201, response.text);
    const product = response.body;
    assert.match(product.id, PRODUCT_ID);
    assert.deepEqual(
      { ...product, id: '-', created_at: '-', updated_at: '-' },
      {
        ...SEED,
        id: '-',
        object: 'product',
        description: null,
        status: 'active',
        inventory_quantity: null,
        attributes: {},
        version: 1,
        created_at: '-',
        updated_at: '-',
      },
    );
    assert.match(product.created_at, ISO_MS);
    assert.equal(product.updated_at, product.created_at);
    assert.equal(response.headers.get('etag'), '"v1"');
    assert.equal(response.headers.get('location'), `/api/v1/products/${product.id}`);

    const fetched = await api.get(response.headers.get('location')!);
    assert.equal(fetched.status, 200);
    assert.deepEqual(fetched.body, product);
    assert.equal(fetched.headers.get('etag'), '"v1"');

    const events = await api.events();
    assert.equal(events.length, 1);
    const [event] = events;
    assert.equal(event!.topic, 'products.created');
    assert.equal(event!.merchant_id, api.merchantId);
    assert.deepEqual(event!.data, { object: product });
    assert.equal(event!.context?.request_id, response.headers.get('x-request-id'));
    assert.equal(event!.context?.actor?.type, 'api_key');
  }

  it('creates the seed example at POST /api/v1/products/ (trailing slash)', () => assertCreated('/api/v1/products/'));
  it('creates the seed example at POST /api/v1/products', () => assertCreated('/api/v1/products'));

  describe('validation: 422 with field errors, nothing written, no event', () => {
    const longKeys = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
    const cases: [string, Record<string, unknown>, string[]][] = [
      ['sku missing', { sku: undefined }, ['sku']],
      ['title missing', { title: undefined }, ['title']],
      ['price missing', { price: undefined }, ['price']],
      ['currency missing', { currency: undefined }, ['currency']],
      ['price as a float', { price: 19.99 }, ['price']],
      ['price "19.999" USD', { price: '19.999' }, ['price']],
      ['price "1.5" JPY', { price: '1.5', currency: 'JPY' }, ['price']],
      ['price "-1"', { price: '-1' }, ['price']],
      ['price "abc"', { price: 'abc' }, ['price']],
      ['currency "usd"', { currency: 'usd' }, ['currency']],
      ['currency "XYZ"', { currency: 'XYZ' }, ['currency']],
      ['sku with spaces', { sku: 'BLACK T SHIRT' }, ['sku']],
      ['sku of 65 characters', { sku: 'S'.repeat(65) }, ['sku']],
      ['title empty', { title: '' }, ['title']],
      ['title of 256 characters', { title: 't'.repeat(256) }, ['title']],
      ['description of 10,001 characters', { description: 'd'.repeat(10_001) }, ['description']],
      ['inventory_quantity -1', { inventory_quantity: -1 }, ['inventory_quantity']],
      ['inventory_quantity 1.5', { inventory_quantity: 1.5 }, ['inventory_quantity']],
      ['attributes with 51 keys', { attributes: longKeys }, ['attributes']],
      ['an attribute that is not a string', { attributes: { size: 42 } }, ['attributes.size']],
      ['an unknown field', { colour: 'black' }, ['colour']],
      ['status archived on create', { status: 'archived' }, ['status']],
    ];
    for (const [name, change, fields] of cases) {
      it(name, async () => {
        const response = await api.post('/api/v1/products', { ...SEED, ...change });
        assert.equal(response.status, 422, response.text);
        assert.equal(response.body.code, 'validation_failed');
        assert.deepEqual(fieldsOf(response), fields);
        await assertNothingWritten();
      });
    }

    it('a body that is an array', async () => {
      const response = await api.post('/api/v1/products', [SEED]);
      assert.equal(response.status, 422, response.text);
      assert.deepEqual(fieldsOf(response), ['(body)']);
      await assertNothingWritten();
    });

    it('reports every invalid field at once', async () => {
      const response = await api.post('/api/v1/products', { sku: 'a b', title: '', price: 'x', currency: 'USD' });
      assert.equal(response.status, 422);
      assert.deepEqual(fieldsOf(response), ['price', 'sku', 'title']);
    });
  });

  describe('prices in their currency', () => {
    const cases: [string, string, string][] = [
      ['"19.9" USD is normalised to "19.90"', '19.9', 'USD'],
      ['"1.234" KWD is exact', '1.234', 'KWD'],
      ['"1500" JPY is exact', '1500', 'JPY'],
      ['"0" USD is free', '0', 'USD'],
    ];
    const expected: Record<string, string> = { '19.9': '19.90', '1.234': '1.234', '1500': '1500', '0': '0.00' };
    for (const [name, price, currency] of cases) {
      it(name, async () => {
        const product = await api.create({ price, currency });
        assert.equal(product.price, expected[price]);
        assert.equal(product.currency, currency);
        assert.equal((await api.get(`/api/v1/products/${product.id}`)).body.price, expected[price]);
        const [event] = await api.events();
        assert.equal(event!.data.object.price, expected[price]);
      });
    }

    it('keeps every optional field as given', async () => {
      const fields = { status: 'draft', description: 'Soft cotton', inventory_quantity: 12, attributes: { color: 'black', size: 'M' } };
      const product = await api.create(fields);
      assert.deepEqual({ ...product, ...fields }, product);
      assert.deepEqual((await api.get(`/api/v1/products/${product.id}`)).body, product);
    });
  });

  describe('media types and sizes', () => {
    it('answers 415 to a text/plain body', async () => {
      const response = await api.request('POST', '/api/v1/products', { raw: JSON.stringify(SEED), contentType: 'text/plain' });
      assert.equal(response.status, 415);
      assert.equal(response.body.code, 'unsupported_media_type');
      await assertNothingWritten();
    });

    it('answers 400 to malformed JSON', async () => {
      const response = await api.request('POST', '/api/v1/products', { raw: '{"sku": "A", ', contentType: 'application/json' });
      assert.equal(response.status, 400);
      assert.equal(response.body.code, 'malformed_request');
      await assertNothingWritten();
    });

    it('answers 413 to a body over 1 MiB', async () => {
      const response = await api.post('/api/v1/products', { ...SEED, description: 'x'.repeat(1024 * 1024) });
      assert.equal(response.status, 413);
      assert.equal(response.body.code, 'payload_too_large');
      await assertNothingWritten();
    });
  });

  describe('sku uniqueness', () => {
    it('refuses a second product with the same sku for the same merchant', async () => {
      const first = await api.create({ sku: 'DUP-1' });
      const second = await api.post('/api/v1/products', { ...SEED, sku: 'DUP-1', title: 'Another' });
      assert.equal(second.status, 409, second.text);
      assert.equal(second.body.code, 'conflict');
      const list = await api.get('/api/v1/products');
      assert.deepEqual(
        list.body.data.map((p: { id: string }) => p.id),
        [first.id],
      );
      assert.deepEqual(
        (await api.events()).map((e) => e.topic),
        ['products.created'],
      );
    });

    it('lets another merchant use the same sku', async () => {
      const mine = await api.create({ sku: 'SHARED-SKU' });
      const other = await harness.merchant();
      const theirs = await other.create({ sku: 'SHARED-SKU' });
      assert.notEqual(theirs.id, mine.id);
      assert.equal((await other.get(`/api/v1/products/${theirs.id}`)).body.sku, 'SHARED-SKU');
      assert.equal((await api.events()).length, 1);
      assert.equal((await other.events()).length, 1);
    });
  });

  async function assertNothingWritten() {
    const list = await api.get('/api/v1/products');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data, []);
    assert.deepEqual(await api.events(), []);
  }
});
