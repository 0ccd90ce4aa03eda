import assert from 'node:assert/strict';
import { Outbox, trustedMerchantId, type Db, type Queryable } from '@merx/kit';
import { CATALOG_SCHEMA } from '../src/index.js';
import { bulkProductUseCases, type BulkItem } from '../src/usecases/bulk-products.js';
import { useHarness, type ApiClient, type Harness } from './harness.js';

const items = (bodies: Array<Record<string, unknown>>): BulkItem[] => bodies.map((body, index) => ({ index, body }));
const product = (sku: string, fields: Record<string, unknown> = {}) => ({ sku, title: `Product ${sku}`, price: '10.00', currency: 'USD', ...fields });

describe('catalog: bulk upsert chunks (PostgreSQL)', () => {
  let harness: Harness;
  let api: ApiClient;

  useHarness(
    (started) => (harness = started),
    (merchant) => (api = merchant),
  );

  const useCases = (db: Db = harness.db) => bulkProductUseCases({ db, outbox: new Outbox(db, CATALOG_SCHEMA) });

  it('writes a chunk of creations and updates of different fields in one go, each with its event, in item order', async () => {
    const merchantId = trustedMerchantId(api.merchantId);
    const bulk = useCases();
    await bulk.upsertProducts(merchantId, items([product('A'), product('B'), product('C', { inventory_quantity: 3 })]));

    const outcomes = await bulk.upsertProducts(
      merchantId,
      items([
        product('A', { title: 'New title' }),
        product('N'),
        product('B', { price: '12.5', attributes: { colour: 'red' } }),
        product('C', { inventory_quantity: 3 }),
        product('D', { price: 'ten' }),
      ]),
    );
    assert.deepEqual(
      outcomes.map((outcome) => [outcome.sku, outcome.outcome]),
      [
        ['A', 'updated'],
        ['N', 'created'],
        ['B', 'updated'],
        ['C', 'unchanged'],
        ['D', 'failed'],
      ],
    );
    const a = (await api.get(`/api/v1/products?sku=A`)).body.data[0];
    const b = (await api.get(`/api/v1/products?sku=B`)).body.data[0];
    assert.deepEqual([a.title, a.price, a.version], ['New title', '10.00', 2]);
    assert.deepEqual([b.title, b.price, b.attributes, b.version], ['Product B', '12.50', { colour: 'red' }, 2]);
    const updatedB = outcomes[2]!;
    assert.ok(updatedB.outcome === 'updated' && updatedB.product.price === '12.50' && updatedB.product.version === 2);

    const events = (await api.events()).slice(3);
    assert.deepEqual(
      events.map((event) => [event.topic, (event.data.object as { sku: string }).sku]),
      [
        ['products.updated', 'A'],
        ['products.created', 'N'],
        ['products.updated', 'B'],
      ],
    );
    assert.deepEqual(events[2]!.data.previous, { price: '10.00', attributes: {} });
    assert.equal((events[2]!.data.object as { version: number }).version, 2);
  });

  it('announces each created product with the times it was stored with', async () => {
    const merchantId = trustedMerchantId(api.merchantId);
    // A clock that moves on every reading: a chunk that read it twice would announce another time than it stored.
    let tick = Date.parse('2026-11-22T10:00:00.000Z');
    const bulk = bulkProductUseCases({ db: harness.db, outbox: new Outbox(harness.db, CATALOG_SCHEMA), now: () => new Date((tick += 1000)) });
    const outcome = (await bulk.upsertProducts(merchantId, items([product('T1'), product('T2')])))[0]!;
    const stored = (await api.get('/api/v1/products?sku=T1')).body.data[0];
    const announced = (await api.events()).map((event) => event.data.object as { created_at: string; updated_at: string });
    assert.deepEqual(
      announced.map((object) => [object.created_at, object.updated_at]),
      [
        [stored.created_at, stored.updated_at],
        [stored.created_at, stored.updated_at],
      ],
    );
    assert.equal(outcome.outcome === 'created' && outcome.product.createdAt.toISOString(), stored.created_at);
  });

  it('rolls back only the chunk that fails when two are written at once', async () => {
    const merchantId = trustedMerchantId(api.merchantId);
    // The database refuses the outbox insert of any chunk that announces sku BOOM, after its products were written.
    const refusing = (tx: Queryable): Queryable => ({
      query: (sql, params) =>
        sql.includes('.outbox') && JSON.stringify(params).includes('"sku\\":\\"BOOM\\"') ? Promise.reject(new Error('refused')) : tx.query(sql, params),
      exec: (sql) => tx.exec(sql),
    });
    const db = new Proxy(harness.db, {
      get(target, property) {
        if (property === 'transaction') return (work: (tx: Queryable) => Promise<unknown>) => target.transaction((tx) => work(refusing(tx)));
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const bulk = useCases(db);
    const [kept, refused] = await Promise.allSettled([
      bulk.upsertProducts(merchantId, items([product('K1'), product('K2')])),
      bulk.upsertProducts(merchantId, items([product('R1'), product('BOOM')])),
    ]);
    assert.equal(kept.status, 'fulfilled');
    assert.equal(refused.status, 'rejected');
    const skus = (await api.get('/api/v1/products?limit=100')).body.data.map((p: { sku: string }) => p.sku).sort();
    assert.deepEqual(skus, ['K1', 'K2']);
    assert.deepEqual((await api.events()).map((event) => (event.data.object as { sku: string }).sku).sort(), ['K1', 'K2']);
  });
});
