import assert from 'node:assert/strict';
import { newId } from '@merx/kit';
import { fieldsOf, problemShape, useHarness, type ApiClient, type Harness } from './harness.js';

describe('catalog: reading products and tenancy (PostgreSQL)', () => {
  let harness: Harness;
  let api: ApiClient;

  useHarness(
    (started) => (harness = started),
    (merchant) => (api = merchant),
  );

  describe('GET /api/v1/products/{id}', () => {
    it('returns the product with its ETag', async () => {
      const created = await api.create({ sku: 'READ-1' });
      const response = await api.get(`/api/v1/products/${created.id}`);
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, created);
      assert.equal(response.headers.get('etag'), '"v1"');
      assert.deepEqual(
        (await api.events()).map((e) => e.topic),
        ['products.created'],
      );
    });

    it('answers 404 for an unknown id', async () => {
      const id = newId('prod');
      const response = await api.get(`/api/v1/products/${id}`);
      assert.equal(response.status, 404);
      assert.equal(response.body.code, 'not_found');
      assert.equal(response.headers.get('etag'), null);
    });

    it("answers another merchant's product id exactly like an unknown id", async () => {
      const other = await harness.merchant();
      const foreign = await other.create({ sku: 'SECRET-SKU', title: 'Secret title', description: 'Secret description' });
      const unknownId = newId('prod');
      const unknown = await api.get(`/api/v1/products/${unknownId}`);
      const stolen = await api.get(`/api/v1/products/${foreign.id}`);
      assert.equal(stolen.status, 404);
      assert.deepEqual(problemShape(stolen.body, foreign.id), problemShape(unknown.body, unknownId));
      assert.deepEqual(Object.keys(stolen.body).sort(), Object.keys(unknown.body).sort());
      for (const secret of ['SECRET-SKU', 'Secret title', 'Secret description', other.merchantId]) assert.ok(!stolen.text.includes(secret));
      assert.equal(stolen.headers.get('etag'), null);
      assert.deepEqual(await api.events(), []);
      assert.equal((await other.get(`/api/v1/products/${foreign.id}`)).status, 200);
    });

    it("never lists another merchant's products", async () => {
      const other = await harness.merchant();
      await other.create({ sku: 'THEIRS-1' });
      await other.create({ sku: 'THEIRS-2' });
      const mine = await api.create({ sku: 'MINE-1' });
      const list = await api.get('/api/v1/products?limit=100');
      assert.deepEqual(
        list.body.data.map((p: { id: string }) => p.id),
        [mine.id],
      );
      assert.equal((await api.get('/api/v1/products?sku=THEIRS-1')).body.data.length, 0);
      assert.equal((await other.get('/api/v1/products')).body.data.length, 2);
    });
  });

  describe('GET /api/v1/products', () => {
    it('answers an empty list for a new merchant', async () => {
      const response = await api.get('/api/v1/products');
      assert.deepEqual(response.body, { object: 'list', data: [], has_more: false, next_cursor: null });
    });

    it('pages newest first across 3 pages with no duplicates or gaps', async () => {
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push((await api.create({ sku: `PAGE-${i}` })).id);
      const newestFirst = [...created].reverse();
      const seen: string[] = [];
      const pages: { count: number; hasMore: boolean }[] = [];
      let path = '/api/v1/products?limit=3';
      for (;;) {
        const page = await api.get(path);
        assert.equal(page.status, 200);
        seen.push(...page.body.data.map((p: { id: string }) => p.id));
        pages.push({ count: page.body.data.length, hasMore: page.body.has_more });
        if (!page.body.has_more) {
          assert.equal(page.body.next_cursor, null);
          break;
        }
        assert.equal(typeof page.body.next_cursor, 'string');
        path = `/api/v1/products?limit=3&cursor=${encodeURIComponent(page.body.next_cursor)}`;
      }
      assert.deepEqual(pages, [
        { count: 3, hasMore: true },
        { count: 3, hasMore: true },
        { count: 1, hasMore: false },
      ]);
      assert.deepEqual(seen, newestFirst);
      const whole = await api.get('/api/v1/products');
      assert.deepEqual(
        whole.body.data.map((p: { id: string }) => p.id),
        newestFirst,
      );
      assert.equal(whole.body.has_more, false);
    });

    it('has_more is false when the last page is exactly full', async () => {
      for (let i = 0; i < 2; i++) await api.create();
      const page = await api.get('/api/v1/products?limit=2');
      assert.equal(page.body.data.length, 2);
      assert.equal(page.body.has_more, false);
      assert.equal(page.body.next_cursor, null);
    });

    it('filters by status, sku and currency (combined with AND)', async () => {
      const draftUsd = await api.create({ sku: 'F-DRAFT-USD', status: 'draft' });
      const activeUsd = await api.create({ sku: 'F-ACTIVE-USD' });
      const activeJpy = await api.create({ sku: 'F-ACTIVE-JPY', price: '1500', currency: 'JPY' });
      const archived = await api.create({ sku: 'F-ARCHIVED-EUR', currency: 'EUR' });
      assert.equal((await api.patch(`/api/v1/products/${archived.id}`, { status: 'archived' })).status, 200);
      const ids = async (query: string) => (await api.get(`/api/v1/products?${query}`)).body.data.map((p: { id: string }) => p.id);
      assert.deepEqual(await ids('status=draft'), [draftUsd.id]);
      assert.deepEqual(await ids('status=active'), [activeJpy.id, activeUsd.id]);
      assert.deepEqual(await ids('status=archived'), [archived.id]);
      assert.deepEqual(await ids('sku=F-ACTIVE-USD'), [activeUsd.id]);
      assert.deepEqual(await ids('sku=NOPE'), []);
      assert.deepEqual(await ids('currency=USD'), [activeUsd.id, draftUsd.id]);
      assert.deepEqual(await ids('currency=JPY&status=active'), [activeJpy.id]);
      assert.deepEqual(await ids('currency=JPY&status=draft'), []);
      assert.deepEqual(await ids('currency=USD&limit=1'), [activeUsd.id]);
    });

    const invalid: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=-1', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      [`cursor=${Buffer.from(JSON.stringify({ after: 'DROP TABLE' })).toString('base64url')}`, 'cursor'],
      ['status=deleted', 'status'],
      ['currency=usd', 'currency'],
      ['sku=A&sku=B', 'sku'],
    ];
    for (const [query, field] of invalid) {
      it(`answers 422 to ${query.slice(0, 30)}`, async () => {
        await api.create();
        const response = await api.get(`/api/v1/products?${query}`);
        assert.equal(response.status, 422, response.text);
        assert.equal(response.body.code, 'validation_failed');
        assert.deepEqual(fieldsOf(response), [field]);
      });
    }

    it('accepts limit 1 and 100', async () => {
      await api.create();
      assert.equal((await api.get('/api/v1/products?limit=1')).body.data.length, 1);
      assert.equal((await api.get('/api/v1/products?limit=100')).body.data.length, 1);
    });
  });
});
