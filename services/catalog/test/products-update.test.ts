import assert from 'node:assert/strict';
import { fieldsOf, useHarness, type ApiClient, type Harness } from './harness.js';

describe('catalog: changing and deleting products (PostgreSQL)', () => {
  let harness: Harness;
  let api: ApiClient;

  useHarness(
    (started) => (harness = started),
    (merchant) => (api = merchant),
  );

  const path = (product: { id: string }) => `/api/v1/products/${product.id}`;
  const topics = async () => (await api.events()).map((event) => event.topic);

  /** Asserts the product is exactly `expected` when read back. */
  async function assertStored(expected: Record<string, unknown>) {
    const response = await api.get(path(expected as { id: string }));
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, expected);
    assert.equal(response.headers.get('etag'), `"v${String(expected.version)}"`);
  }

  describe('PATCH /api/v1/products/{id}', () => {
    it('changes fields, bumps version and ETag, and emits products.updated with the old values', async () => {
      const created = await api.create({ title: 'Old title', price: '10.00', inventory_quantity: 3 });
      const response = await api.patch(path(created), { title: 'New title', price: '12.5', description: 'Now described' });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.headers.get('etag'), '"v2"');
      const updated = response.body;
      assert.deepEqual(
        { ...updated, updated_at: '-' },
        { ...created, title: 'New title', price: '12.50', description: 'Now described', version: 2, updated_at: '-' },
      );
      assert.ok(updated.updated_at >= created.updated_at);
      await assertStored(updated);
      const events = await api.events();
      assert.deepEqual(
        events.map((e) => e.topic),
        ['products.created', 'products.updated'],
      );
      assert.deepEqual(events[1]!.data, { object: updated, previous: { title: 'Old title', price: '10.00', description: null } });
    });

    it('answers 200 without a new version or event when nothing changes', async () => {
      const created = await api.create({ title: 'Same', price: '10.00', attributes: { size: 'M', color: 'black' } });
      const response = await api.patch(path(created), {
        title: 'Same',
        price: '10.0',
        currency: 'USD',
        status: 'active',
        description: null,
        attributes: { color: 'black', size: 'M' },
      });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, created);
      assert.equal(response.headers.get('etag'), '"v1"');
      await assertStored(created);
      assert.deepEqual(await topics(), ['products.created']);
    });

    it('applies with If-Match of the current version and refuses a stale one with 412', async () => {
      const created = await api.create({ title: 'v1 title' });
      const first = await api.patch(path(created), { title: 'v2 title' }, { headers: { 'if-match': '"v1"' } });
      assert.equal(first.status, 200, first.text);
      const stale = await api.patch(path(created), { title: 'lost update' }, { headers: { 'if-match': '"v1"' } });
      assert.equal(stale.status, 412, stale.text);
      assert.equal(stale.body.code, 'precondition_failed');
      const weak = await api.patch(path(created), { title: 'weak tag' }, { headers: { 'if-match': 'W/"v2"' } });
      assert.equal(weak.status, 412, 'weak tags never match (strong comparison)');
      await assertStored(first.body);
      assert.deepEqual(await topics(), ['products.created', 'products.updated']);
    });

    it('allows draft → active → archived → active', async () => {
      const created = await api.create({ status: 'draft' });
      let version = 1;
      for (const status of ['active', 'archived', 'active']) {
        const response = await api.patch(path(created), { status });
        assert.equal(response.status, 200, response.text);
        assert.equal(response.body.status, status);
        assert.equal(response.body.version, ++version);
      }
      const events = await api.events();
      assert.deepEqual(
        events.map((e) => e.data.previous?.status),
        [undefined, 'draft', 'active', 'archived'],
      );
      assert.deepEqual(
        events.map((e) => e.data.object.status),
        ['draft', 'active', 'archived', 'active'],
      );
    });

    for (const [from, to, setup] of [
      ['draft', 'archived', []],
      ['active', 'draft', []],
      ['archived', 'draft', ['archived']],
    ] as const) {
      it(`refuses ${from} → ${to} with 409`, async () => {
        const created = await api.create({ status: from === 'draft' ? 'draft' : 'active' });
        let current = created;
        for (const status of setup) current = (await api.patch(path(created), { status })).body;
        const response = await api.patch(path(created), { status: to });
        assert.equal(response.status, 409, response.text);
        assert.equal(response.body.code, 'conflict');
        await assertStored(current);
        assert.equal((await topics()).length, 1 + setup.length);
      });
    }

    it('refuses a currency change that makes the price inexact (USD 19.99 → JPY) with 422', async () => {
      const created = await api.create({ price: '19.99', currency: 'USD' });
      const response = await api.patch(path(created), { currency: 'JPY' });
      assert.equal(response.status, 422, response.text);
      assert.deepEqual(fieldsOf(response), ['price']);
      await assertStored(created);
      assert.deepEqual(await topics(), ['products.created']);
    });

    it('re-expresses an exact price in the new currency (USD 20.00 → JPY 20, KWD 20.000)', async () => {
      const created = await api.create({ price: '20.00', currency: 'USD' });
      const jpy = await api.patch(path(created), { currency: 'JPY' });
      assert.equal(jpy.status, 200, jpy.text);
      assert.deepEqual([jpy.body.price, jpy.body.currency], ['20', 'JPY']);
      const kwd = await api.patch(path(created), { currency: 'KWD' });
      assert.deepEqual([kwd.body.price, kwd.body.currency, kwd.body.version], ['20.000', 'KWD', 3]);
      await assertStored(kwd.body);
      const events = await api.events();
      assert.deepEqual(events[1]!.data.previous, { currency: 'USD', price: '20.00' });
      assert.deepEqual(events[2]!.data.previous, { currency: 'JPY', price: '20' });
    });

    it('accepts a currency change together with a new price', async () => {
      const created = await api.create({ price: '19.99', currency: 'USD' });
      const response = await api.patch(path(created), { currency: 'JPY', price: '2500' });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual([response.body.price, response.body.currency], ['2500', 'JPY']);
    });

    it('refuses a sku change to an existing sku with 409', async () => {
      await api.create({ sku: 'TAKEN' });
      const created = await api.create({ sku: 'FREE' });
      const response = await api.patch(path(created), { sku: 'TAKEN' });
      assert.equal(response.status, 409, response.text);
      assert.equal(response.body.code, 'conflict');
      await assertStored(created);
      assert.deepEqual(await topics(), ['products.created', 'products.created']);
    });

    const invalid: [string, Record<string, unknown>, string[]][] = [
      ['title null', { title: null }, ['title']],
      ['price null', { price: null }, ['price']],
      ['price "1.999"', { price: '1.999' }, ['price']],
      ['an unknown field', { version: 7 }, ['version']],
      ['inventory_quantity -1', { inventory_quantity: -1 }, ['inventory_quantity']],
    ];
    for (const [name, body, fields] of invalid) {
      it(`answers 422 to ${name} and changes nothing`, async () => {
        const created = await api.create();
        const response = await api.patch(path(created), body);
        assert.equal(response.status, 422, response.text);
        assert.deepEqual(fieldsOf(response), fields);
        await assertStored(created);
        assert.deepEqual(await topics(), ['products.created']);
      });
    }

    it('clears description and inventory_quantity with null', async () => {
      const created = await api.create({ description: 'text', inventory_quantity: 5 });
      const response = await api.patch(path(created), { description: null, inventory_quantity: null });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual([response.body.description, response.body.inventory_quantity], [null, null]);
      const events = await api.events();
      assert.deepEqual(events[1]!.data.previous, { description: 'text', inventory_quantity: 5 });
    });

    it("answers 404 to another merchant's product and leaves it alone", async () => {
      const other = await harness.merchant();
      const theirs = await other.create({ title: 'Theirs' });
      const response = await api.patch(path(theirs), { title: 'Mine now' });
      assert.equal(response.status, 404);
      assert.deepEqual((await other.get(path(theirs))).body, theirs);
      assert.deepEqual(await api.events(), []);
      assert.equal((await other.events()).length, 1);
    });

    it('lets exactly one of 20 concurrent PATCHes with the same If-Match win', async () => {
      const created = await api.create({ title: 'contended' });
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => api.patch(path(created), { title: `writer ${i}` }, { headers: { 'if-match': '"v1"' } })),
      );
      const statuses = answers.map((answer) => answer.status).sort();
      assert.deepEqual(statuses, [200, ...Array<number>(19).fill(412)]);
      const winner = answers.find((answer) => answer.status === 200)!;
      await assertStored(winner.body);
      assert.equal(winner.body.version, 2);
      const events = await api.events();
      assert.deepEqual(
        events.map((e) => e.topic),
        ['products.created', 'products.updated'],
      );
      assert.deepEqual(events[1]!.data.object, winner.body);
    });
  });

  describe('DELETE /api/v1/products/{id}', () => {
    it('answers 204, emits products.deleted with the last state, and the product is gone', async () => {
      const created = await api.create();
      const last = (await api.patch(path(created), { title: 'Last title' })).body;
      const response = await api.delete(path(created));
      assert.equal(response.status, 204);
      assert.equal(response.text, '');
      assert.equal((await api.get(path(created))).status, 404);
      assert.equal((await api.delete(path(created))).status, 404);
      const events = await api.events();
      assert.deepEqual(
        events.map((e) => e.topic),
        ['products.created', 'products.updated', 'products.deleted'],
      );
      assert.deepEqual(events[2]!.data, { object: last });
    });

    it('refuses a stale If-Match with 412 and deletes with the current one', async () => {
      const created = await api.create();
      const updated = (await api.patch(path(created), { title: 'v2' })).body;
      const stale = await api.delete(path(created), { headers: { 'if-match': '"v1"' } });
      assert.equal(stale.status, 412);
      await assertStored(updated);
      assert.deepEqual(await topics(), ['products.created', 'products.updated']);
      assert.equal((await api.delete(path(created), { headers: { 'if-match': '"v2"' } })).status, 204);
      assert.equal((await api.get(path(created))).status, 404);
    });

    it("answers 404 to another merchant's product, which still exists", async () => {
      const other = await harness.merchant();
      const theirs = await other.create();
      const response = await api.delete(path(theirs));
      assert.equal(response.status, 404);
      assert.equal(response.body.code, 'not_found');
      assert.deepEqual((await other.get(path(theirs))).body, theirs);
      assert.deepEqual(await api.events(), []);
      assert.deepEqual(
        (await other.events()).map((e) => e.topic),
        ['products.created'],
      );
    });

    it('frees the sku for a new product', async () => {
      const created = await api.create({ sku: 'REUSED' });
      assert.equal((await api.delete(path(created))).status, 204);
      const again = await api.create({ sku: 'REUSED' });
      assert.notEqual(again.id, created.id);
    });
  });
});
