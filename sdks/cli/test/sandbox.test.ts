import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import Merx from '@merx/sdk';
import { Cli } from './support/cli.js';
import { merxServer, type MerxServer } from './support/server.js';

describe('merx sandbox reset and merx fixtures apply', function () {
  this.timeout(180_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('reset --seed --yes wipes the sandbox, waits for every service and leaves the seeded set', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    await merx.products.create({ sku: 'GONE-1', title: 'Gone', price: '1.00', currency: 'USD' });
    const reset = await cli.json(['sandbox', 'reset', '--seed', '--yes']);
    assert.equal(reset.status, 'completed');
    assert.equal(reset.seed, true);
    assert.ok(reset.services.every((service: { status: string }) => service.status === 'completed'));
    const skus = (await merx.products.list({ limit: 100 })).data.map((product) => product.sku);
    assert.ok(!skus.includes('GONE-1'), 'the product made before the reset is gone');
    assert.equal(skus.length, 3, 'the seed made three products');
    assert.equal((await merx.sources.list()).data.length, 1);
  });

  it('reset without --yes off a terminal is a usage error and changes nothing; a live key is refused', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    await merx.products.create({ sku: 'KEPT-1', title: 'Kept', price: '1.00', currency: 'USD' });
    const refused = await cli.run(['sandbox', 'reset']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--yes/);
    assert.deepEqual(
      (await merx.products.list()).data.map((product) => product.sku),
      ['KEPT-1'],
    );
    const live = await cli.run(['sandbox', 'reset', '--yes', '--api-key', merchant.apiKey.replace('mx_test_', 'mx_live_')]);
    assert.equal(live.code, 2);
    assert.match(live.stderr, /live/);
  });

  it('fixtures apply creates every kind in order, resolving ${ref} and ${ref.field} to objects made earlier', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const file = path.join(cli.configDir, 'fixtures.json');
    writeFileSync(
      file,
      JSON.stringify({
        products: [
          { ref: 'shirt', sku: 'FIX-SHIRT', title: 'Shirt', price: '19.99', currency: 'USD' },
          { sku: 'FIX-MUG', title: 'Mug', price: '9.00', currency: 'USD', status: 'draft' },
        ],
        sources: [{ ref: 'shop', name: 'Shop', kind: 'storefront', settings: { featured: '${shirt.sku}' } }],
        destinations: [{ ref: 'erp', name: 'ERP', url: 'https://erp.example/merx', status: 'paused' }],
        rules: [{ ref: 'big', name: 'Big orders', action: 'forward', condition: 'data.total >= 100.0' }],
        connections: [{ source_id: '${shop}', destination_id: '${erp}', rule_ids: ['${big}'] }],
      }),
    );
    const created = await cli.json(['fixtures', 'apply', file]);
    assert.deepEqual(
      created.map((item: { kind: string }) => item.kind),
      ['products', 'products', 'sources', 'destinations', 'rules', 'connections'],
    );
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    const [connection] = (await merx.connections.list()).data;
    const byRef = Object.fromEntries(
      created.filter((item: { ref: string | null }) => item.ref).map((item: { ref: string; id: string }) => [item.ref, item.id]),
    );
    assert.equal(connection!.source_id, byRef.shop);
    assert.equal(connection!.destination_id, byRef.erp);
    assert.deepEqual(connection!.rule_ids, [byRef.big]);
    assert.deepEqual((await merx.sources.retrieve(byRef.shop)).settings, { featured: 'FIX-SHIRT' });

    const broken = path.join(cli.configDir, 'broken.json');
    writeFileSync(broken, JSON.stringify({ connections: [{ source_id: '${nowhere}', destination_id: '${erp}' }] }));
    const unresolved = await cli.run(['fixtures', 'apply', broken]);
    assert.equal(unresolved.code, 2);
    assert.match(unresolved.stderr, /\$\{nowhere\}/);
    writeFileSync(broken, JSON.stringify({ widgets: [] }));
    assert.equal((await cli.run(['fixtures', 'apply', broken])).code, 2);
    assert.equal((await cli.run(['fixtures', 'apply', path.join(cli.configDir, 'missing.json')])).code, 2);
    writeFileSync(broken, JSON.stringify({ products: [{ sku: 'FIX-SHIRT', title: 'Again', price: '1.00', currency: 'USD' }] }));
    const duplicate = await cli.run(['fixtures', 'apply', broken]);
    assert.equal(duplicate.code, 1, 'an object the API refuses is an API error');
    assert.match(duplicate.stderr, /409/);
  });
});
