import assert from 'node:assert/strict';
import Merx, { Page, PreconditionFailedError, type Product } from '@merx/sdk';
import { merxServer, type Merchant, type MerxServer } from './support/server.js';

describe('products: create, list across pages, update with ifMatch', function () {
  this.timeout(200_000);
  let server: MerxServer;
  let merchant: Merchant;
  let merx: Merx;

  before(async () => {
    server = await merxServer();
    merchant = await server.createMerchant();
    merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
  });

  it('creates a product with the four fields of the seed and gets it back typed', async () => {
    const product = await merx.products.create({ sku: 'TSHIRT-1', title: 'T-shirt', price: '19.99', currency: 'USD' });
    assert.match(product.id, /^prod_/);
    assert.equal(product.price, '19.99'); // money stays a decimal string
    assert.equal(product.lastResponse.status, 201);
    assert.ok(product.lastResponse.requestId);
    assert.equal(Object.keys(product).includes('lastResponse'), false, 'the metadata is not a field of the product');
    const again = await merx.products.retrieve(product.id);
    assert.deepEqual({ ...again }, { ...product });
  });

  it('iterates every product across pages with for await, fetching pages lazily', async () => {
    const own = await server.createMerchant();
    const client = new Merx({ apiKey: own.apiKey, baseUrl: server.baseUrl });
    const created = new Set<string>();
    for (let i = 0; i < 7; i += 1) created.add((await client.products.create({ sku: `PAGE-${i}`, title: `Item ${i}`, price: `${i}.00`, currency: 'EUR' })).id);

    const first = await client.products.list({ limit: 3 });
    assert.ok(first instanceof Page);
    assert.equal(first.data.length, 3);
    assert.equal(first.has_more, true);
    assert.equal(typeof first.next_cursor, 'string');

    const seen: Product[] = [];
    for await (const product of client.products.list({ limit: 3 })) seen.push(product);
    assert.equal(seen.length, 7);
    assert.deepEqual(new Set(seen.map((product) => product.id)), created);

    // Iterating a page already awaited walks from that page on.
    const fromFirst: string[] = [];
    for await (const product of first) fromFirst.push(product.id);
    assert.deepEqual(
      fromFirst,
      seen.map((product) => product.id),
    );

    const second = await first.getNextPage();
    assert.deepEqual(
      second.data.map((product) => product.id),
      seen.slice(3, 6).map((product) => product.id),
    );
  });

  it('updates with ifMatch, and a stale etag is a PreconditionFailedError', async () => {
    const product = await merx.products.create({ sku: 'ETAG-1', title: 'Before', price: '1.00', currency: 'USD' });
    const etag = product.lastResponse.etag;
    assert.ok(etag);
    const updated = await merx.products.update(product.id, { title: 'After' }, { ifMatch: etag });
    assert.equal(updated.title, 'After');
    assert.equal(updated.version, product.version + 1);
    await assert.rejects(merx.products.update(product.id, { title: 'Lost update' }, { ifMatch: etag }), (error: unknown) => {
      assert.ok(error instanceof PreconditionFailedError);
      assert.equal(error.status, 412);
      return true;
    });
    assert.equal((await merx.products.retrieve(product.id)).title, 'After');
  });

  it('reads MERX_API_KEY and MERX_BASE_URL when the options are omitted', async () => {
    const saved = { key: process.env.MERX_API_KEY, url: process.env.MERX_BASE_URL };
    process.env.MERX_API_KEY = merchant.apiKey;
    process.env.MERX_BASE_URL = server.baseUrl;
    try {
      const fromEnv = new Merx();
      const page = await fromEnv.products.list({ limit: 1 });
      assert.equal(page.data.length, 1);
    } finally {
      for (const [name, value] of [
        ['MERX_API_KEY', saved.key],
        ['MERX_BASE_URL', saved.url],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
