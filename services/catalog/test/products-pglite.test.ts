import assert from 'node:assert/strict';
import { startHarness, type ApiClient, type Harness } from './harness.js';

/** The embedded mode runs the same SQL on PGlite; one pass over the main path proves it. */
describe('catalog: main path on embedded PGlite', () => {
  let harness: Harness;
  let api: ApiClient;

  before(async () => {
    harness = await startHarness({ embedded: true });
    api = await harness.merchant();
  });
  after(async () => {
    await harness?.stop();
  });
  afterEach(() => {
    assert.deepEqual(harness.events.takeProblems(), []);
  });

  it('creates, reads, lists, changes and deletes a product with the same answers and events', async () => {
    const created = await api.post('/api/v1/products/', {
      sku: 'TSHIRT-BLK-M',
      title: 'Black T-shirt',
      price: '19.9',
      currency: 'USD',
      attributes: { size: 'M', color: 'black' },
    });
    assert.equal(created.status, 201, created.text);
    const product = created.body;
    assert.equal(product.price, '19.90');
    assert.equal(product.status, 'active');
    assert.equal(created.headers.get('etag'), '"v1"');
    const path = `/api/v1/products/${product.id}`;
    assert.equal(created.headers.get('location'), path);
    assert.deepEqual((await api.get(path)).body, product);

    const second = await api.create({ sku: 'MUG-1', price: '1500', currency: 'JPY', status: 'draft' });
    const page = await api.get('/api/v1/products?limit=1');
    assert.deepEqual(
      page.body.data.map((p: { id: string }) => p.id),
      [second.id],
    );
    const next = await api.get(`/api/v1/products?limit=1&cursor=${page.body.next_cursor}`);
    assert.deepEqual(
      next.body.data.map((p: { id: string }) => p.id),
      [product.id],
    );
    assert.equal(next.body.has_more, false);
    assert.deepEqual(
      (await api.get('/api/v1/products?currency=JPY')).body.data.map((p: { id: string }) => p.id),
      [second.id],
    );

    assert.equal((await api.post('/api/v1/products', { sku: 'MUG-1', title: 'Dup', price: '1', currency: 'JPY' })).status, 409);
    assert.equal((await api.patch(path, { sku: 'MUG-1' })).status, 409);
    const unchanged = await api.patch(path, { attributes: { color: 'black', size: 'M' } });
    assert.equal(unchanged.body.version, 1);

    const updated = await api.patch(path, { title: 'Black T-shirt (M)', status: 'archived' }, { headers: { 'if-match': '"v1"' } });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.headers.get('etag'), '"v2"');
    assert.equal((await api.patch(path, { title: 'stale' }, { headers: { 'if-match': '"v1"' } })).status, 412);

    const replayKey = { headers: { 'idempotency-key': 'pglite-key' } };
    const firstCreate = await api.post('/api/v1/products', { sku: 'IDEM', title: 'Idem', price: '1.000', currency: 'KWD' }, replayKey);
    const replay = await api.post('/api/v1/products', { sku: 'IDEM', title: 'Idem', price: '1.000', currency: 'KWD' }, replayKey);
    assert.equal(replay.text, firstCreate.text);

    assert.equal((await api.delete(path)).status, 204);
    assert.equal((await api.get(path)).status, 404);

    const events = await api.events();
    assert.deepEqual(
      events.map((e) => e.topic),
      ['products.created', 'products.created', 'products.updated', 'products.created', 'products.deleted'],
    );
    assert.deepEqual(events[0]!.data, { object: product });
    assert.deepEqual(events[2]!.data, { object: updated.body, previous: { title: 'Black T-shirt', status: 'active' } });
    assert.deepEqual(events[4]!.data, { object: updated.body });
  });
});
