/** Unit tests of the CLI's pure pieces: no server, no subprocess. */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { webhooks, OPERATIONS } from '@merx/sdk';
import { maskKey } from '../../src/config.js';
import { envelopeOf, newSessionSecret } from '../../src/forwarding.js';
import { parseFixtures } from '../../src/fixtures.js';
import { productLineOf, formatOf } from '../../src/product-lines.js';
import { parseSince } from '../../src/commands/events.js';
import { commandPathOf, kebab } from '../../src/commands/resources.js';
import { Session } from '../../src/session.js';
import { UsageError } from '../../src/errors.js';
import { ProductStatus } from '../../src/gen/merx/v1/products_pb.js';

describe('CLI pieces', () => {
  it('masks a key to its client id and last four characters, and never shows a short secret', () => {
    assert.equal(maskKey('mx_test_4fQ8kLm2Zp_abcdefghijklmnopXy9a'), 'mx_test_4fQ8kLm2Zp_…Xy9a');
    assert.equal(maskKey('mx_live_abc_short'), 'mx_live_abc_…');
    assert.equal(maskKey('nonsense'), '(not an API key)');
  });

  it('names commands from operation ids in kebab case', () => {
    assert.equal(kebab('deadLetters'), 'dead-letters');
    assert.equal(kebab('replay_all'), 'replay-all');
    const replayAll = OPERATIONS.find((entry) => entry.operationId === 'webhooks.dead_letters.replay_all')!;
    assert.deepEqual(commandPathOf(replayAll), ['webhooks', 'dead-letters', 'replay-all']);
  });

  it('a forwarded envelope carries a body hmac and headers the SDK verifies with the session secret', () => {
    const secret = newSessionSecret();
    const body = envelopeOf(
      { id: 'evt_1', topic: 'products.created', created_at: '2026-11-23T00:00:00.000Z', data: { object: { id: 'prod_1' } } },
      'mch_1',
      secret,
    );
    const event = webhooks.verifyBodyHmac(body, secret);
    assert.equal(event.id, 'evt_1');
    assert.equal((event as { merchant_id: string }).merchant_id, 'mch_1');
    assert.throws(() => webhooks.verifyBodyHmac(body, newSessionSecret()));
  });

  it('turns product lines into gRPC inputs, or into failures of their own', () => {
    const good = productLineOf(2, {
      sku: 'A',
      title: 'A',
      price: '1.00',
      currency: 'USD',
      status: 'draft',
      inventory_quantity: '3',
      'attributes.colour': 'red',
    });
    assert.ok('input' in good);
    assert.equal(good.input.status, ProductStatus.DRAFT);
    assert.equal(good.input.inventoryQuantity, 3);
    assert.deepEqual(good.input.attributes, { colour: 'red' });
    const numericPrice = productLineOf(3, { sku: 'B', title: 'B', price: 2.5, currency: 'USD' });
    assert.ok('input' in numericPrice && numericPrice.input.price === '2.5');
    for (const [record, detail] of [
      [{ sku: 'C', status: 'sold' }, /status/],
      [{ sku: 'C', inventory_quantity: '1.5' }, /inventory_quantity/],
      [{ sku: 'C', attributes: '[1]' }, /attributes/],
      [{ sku: 'C', attributes: { size: 3 } }, /attribute size/],
      [{ sku: 7 }, /sku must be a string/],
    ] as const) {
      const line = productLineOf(9, record as Record<string, unknown>);
      assert.ok('failure' in line, JSON.stringify(record));
      assert.equal(line.failure.code, 'invalid_line');
      assert.match(line.failure.detail, detail);
    }
    assert.equal(formatOf('a.CSV'), 'csv');
    assert.equal(formatOf('a.ndjson'), 'jsonl');
    assert.throws(() => formatOf('a.xml'), UsageError);
  });

  it('reads --since as a duration or a time', () => {
    const tenMinutesAgo = Date.now() - 600_000;
    assert.ok(Math.abs(parseSince('10m').getTime() - tenMinutesAgo) < 1_000);
    assert.equal(parseSince('2026-11-23T10:00:00Z').toISOString(), '2026-11-23T10:00:00.000Z');
    assert.throws(() => parseSince('soon'), UsageError);
  });

  it('checks a fixtures file before creating anything', () => {
    assert.throws(() => parseFixtures('{', 'f.json'), /not JSON/);
    assert.throws(() => parseFixtures('[]', 'f.json'), /JSON object/);
    assert.throws(() => parseFixtures('{"widgets":[]}', 'f.json'), /unknown section widgets/);
    assert.throws(() => parseFixtures('{"products":{}}', 'f.json'), /array of objects/);
    assert.deepEqual(parseFixtures('{"products":[{"sku":"A"}]}', 'f.json'), { products: [{ sku: 'A' }] });
  });

  it('settles the URLs and key: flag, then environment, then profile, then defaults', () => {
    const env = { MERX_CONFIG_DIR: mkdtempSync(path.join(tmpdir(), 'merx-cli-unit-')) };
    {
      const defaults = new Session({}, env);
      assert.equal(defaults.baseUrl(), 'http://localhost:8080');
      assert.equal(defaults.grpcTarget(), 'localhost:50051');
      assert.throws(() => defaults.apiKey(), /merx login/);
      const fromEnv = new Session({}, { ...env, MERX_BASE_URL: 'https://merx.example/', MERX_GRPC_URL: 'grpc://merx.example:443' });
      assert.equal(fromEnv.baseUrl(), 'https://merx.example');
      assert.equal(fromEnv.grpcTarget(), 'merx.example:443');
      const flags = new Session(
        { baseUrl: 'http://127.0.0.1:1', grpcUrl: '127.0.0.1:2', apiKey: 'mx_test_abc_def' },
        { ...env, MERX_API_KEY: 'mx_test_xyz_uvw' },
      );
      assert.equal(flags.grpcTarget(), '127.0.0.1:2');
      assert.equal(flags.apiKey(), 'mx_test_abc_def');
      assert.throws(() => new Session({ grpcUrl: 'http://x' }, env).grpcTarget(), UsageError);
    }
  });
});
