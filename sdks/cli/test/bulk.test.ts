import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Merx from '@merx/sdk';
import { Cli } from './support/cli.js';
import { merxServer, type MerxServer } from './support/server.js';

const LINES = 10_000;
/** Line numbers (1-based) made bad on purpose, each in its own way. */
const BAD: Record<number, string> = {
  17: '{"sku":"BAD-PRICE","title":"Bad","price":"1.001","currency":"USD"}',
  2_500: '{"sku":"BAD-JSON","title":',
  5_001: '{"sku":"BAD-INVENTORY","title":"Bad","price":"1.00","currency":"USD","inventory_quantity":"lots"}',
  7_777: '{"sku":"BAD CURRENCY","title":"Bad","price":"1.00","currency":"usd"}',
  9_999: '{"sku":"BAD-TITLE","price":"1.00","currency":"USD"}',
};

function productsFile(dir: string, prefix: string): string {
  const lines: string[] = [];
  for (let line = 1; line <= LINES; line += 1) {
    lines.push(
      BAD[line] ??
        JSON.stringify({ sku: `${prefix}-${line}`, title: `Product ${line}`, price: `${(line % 500) + 1}.99`, currency: 'USD', inventory_quantity: line % 7 }),
    );
  }
  const file = path.join(dir, 'products.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('merx import products and merx export products over gRPC', function () {
  // A loaded machine imports 10,000 products in a few minutes; each step has room of its own.
  this.timeout(600_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('imports 10,000 JSON lines, reports each bad line with its problem code, exits 1, and a second run changes nothing', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const file = productsFile(cli.configDir, 'BULK');
    const first = await cli.run(['import', 'products', file], { timeoutMs: 540_000 });
    assert.equal(first.code, 1, `some lines failed, so exit 1:\n${first.stderr}`);
    const summary = JSON.parse(first.stdout);
    assert.equal(summary.lines, LINES);
    assert.equal(summary.created, LINES - 5);
    assert.equal(summary.failed, 5);
    assert.deepEqual(
      summary.failures.map((failure: { line: number; code: string }) => [failure.line, failure.code]),
      [
        [17, 'validation_failed'],
        [2_500, 'invalid_line'],
        [5_001, 'invalid_line'],
        [7_777, 'validation_failed'],
        [9_999, 'validation_failed'],
      ],
    );
    assert.equal(summary.failures[0].sku, 'BAD-PRICE');
    assert.equal(summary.failures[0].violations[0].field, 'price');
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    assert.equal((await merx.products.list({ sku: 'BULK-10000' })).data[0]?.price, `${(10_000 % 500) + 1}.99`);
    imported = { cli, file };
  });

  let imported: { cli: Cli; file: string } | undefined;

  it('the same 10,000 lines again change nothing, and an export gives each product once', async () => {
    assert.ok(imported, 'the import above ran');
    const { cli, file } = imported;
    const again = JSON.parse((await cli.run(['import', 'products', file], { timeoutMs: 540_000 })).stdout);
    assert.equal(again.unchanged, LINES - 5, 'importing is idempotent by sku');
    assert.equal(again.created + again.updated, 0);

    const exported = await cli.run(['export', 'products'], { timeoutMs: 120_000 });
    assert.equal(exported.code, 0, exported.stderr);
    const products = exported.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.equal(products.length, LINES - 5);
    assert.equal(new Set(products.map((product) => product.sku)).size, LINES - 5);
    assert.equal(products[0].object, 'product');
    assert.match(products[0].created_at, /Z$/);
    const ids = products.map((product) => product.id);
    assert.deepEqual(ids, [...ids].sort(), 'oldest first');
    // Pages (500 per message by default) frame the products, never change them: one per message,
    // and a size that divides nothing, write the very same lines.
    for (const pageSize of ['1', '7']) {
      const paged = await cli.run(['export', 'products', '--page-size', pageSize], { timeoutMs: 120_000 });
      assert.equal(paged.code, 0, paged.stderr);
      assert.equal(paged.stdout, exported.stdout, `--page-size ${pageSize}`);
    }
  });

  it('a CSV with attribute columns, --from-line to resume, and an export re-imported unchanged', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const csv = path.join(cli.configDir, 'catalogue.csv');
    writeFileSync(
      csv,
      [
        'sku,title,price,currency,status,inventory_quantity,attributes.colour,description',
        'CSV-1,"Shirt, red",19.99,USD,active,3,red,"A ""quoted"" description"',
        'CSV-2,Mug,9.00,USD,draft,,white,',
        'CSV-3,Poster,5.00,USD,sold,,,',
        'CSV-4,Cap,7.50,EUR,,1,,',
      ].join('\n'),
    );
    const resumed = JSON.parse((await cli.run(['import', 'products', csv, '--from-line', '4'])).stdout);
    assert.deepEqual([resumed.lines, resumed.created, resumed.failed], [2, 1, 1], 'lines 4 and 5 only');
    assert.equal(resumed.failures[0].line, 4);
    assert.match(resumed.failures[0].detail, /status/);
    const all = JSON.parse((await cli.run(['import', 'products', csv])).stdout);
    assert.deepEqual([all.created, all.unchanged, all.failed], [2, 1, 1]);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    const [shirt] = (await merx.products.list({ sku: 'CSV-1' })).data;
    assert.equal(shirt!.title, 'Shirt, red');
    assert.equal(shirt!.description, 'A "quoted" description');
    assert.deepEqual(shirt!.attributes, { colour: 'red' });
    assert.equal((await merx.products.list({ sku: 'CSV-2' })).data[0]!.status, 'draft');

    const out = path.join(cli.configDir, 'export.jsonl');
    assert.equal((await cli.run(['export', 'products', '--status', 'active', '-o', out])).code, 0);
    assert.deepEqual(
      readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).sku)
        .sort(),
      ['CSV-1', 'CSV-4'],
    );
    const reimported = JSON.parse((await cli.run(['import', 'products', out])).stdout);
    assert.equal(reimported.unchanged, 2, 'an export reads back as the same products');
    const csvExport = await cli.run(['export', 'products', '--format', 'csv', '--currency', 'EUR']);
    assert.deepEqual(csvExport.stdout.trim().split('\n').length, 2);
    assert.match(csvExport.stdout, /^id,sku,title/);
  });

  it('usage errors: an unknown format, an unreadable file, a bad --from-line or --page-size (exit 2); a page size the server refuses, an unreachable gRPC port (exit 1)', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    assert.equal((await cli.run(['import', 'products', path.join(cli.configDir, 'products.xml')])).code, 2);
    assert.equal((await cli.run(['import', 'products', path.join(cli.configDir, 'missing.csv')])).code, 2);
    assert.equal((await cli.run(['import', 'products', 'x.csv', '--from-line', 'zero'])).code, 2);
    assert.equal((await cli.run(['export', 'products', '--status', 'sold'])).code, 2);
    for (const pageSize of ['0', 'ten', '2.5'])
      assert.equal((await cli.run(['export', 'products', '--page-size', pageSize])).code, 2, `--page-size ${pageSize}`);
    const tooLarge = await cli.run(['export', 'products', '--page-size', '1001']);
    assert.equal(tooLarge.code, 1, 'the server refuses it');
    assert.match(tooLarge.stderr, /page_size/);
    const unreachable = await cli.run(['export', 'products', '--grpc-url', '127.0.0.1:9']);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /UNAVAILABLE/);
  });
});
