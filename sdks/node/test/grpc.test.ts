import assert from 'node:assert/strict';
import Merx, {
  AuthenticationError,
  ConnectionError,
  MerxError,
  PermissionDeniedError,
  UnprocessableEntityError,
  type BulkProductInput,
  type Product,
  type ProductCreate,
  type ProductResult,
  type StoredToken,
  type StreamedEvent,
} from '@merx/sdk';
import { TcpProxy } from './support/tcp-proxy.js';
import { eventually, merxServer, type Merchant, type MerxServer } from './support/server.js';

const product = (sku: string, extra: Partial<ProductCreate> = {}) =>
  ({ sku, title: `Product ${sku}`, price: '10.00', currency: 'EUR', ...extra }) satisfies BulkProductInput & ProductCreate;

/** Every product of the client's merchant through REST, across pages. */
async function listedThroughRest(merx: Merx): Promise<Product[]> {
  const all: Product[] = [];
  for await (const item of merx.products.list({ limit: 100 })) all.push(item);
  return all;
}

/** The next `count` events of a stream, then stops reading it. */
async function take(stream: AsyncIterable<StreamedEvent>, count: number): Promise<StreamedEvent[]> {
  const events: StreamedEvent[] = [];
  if (count === 0) return events;
  for await (const event of stream) {
    events.push(event);
    if (events.length === count) break;
  }
  return events;
}

describe('gRPC helpers against the real gRPC port, over the REST token', function () {
  this.timeout(240_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  describe('bulk: upsert, export and batch create products', () => {
    let merchant: Merchant;
    let merx: Merx;
    before(async () => {
      merchant = await server.createMerchant();
      merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
    });
    after(() => merx.close());

    it('upserts 1,000 products from a generator with a bounded window, one result per item in order, each readable through REST', async () => {
      const count = 1_000;
      const window = 50;
      let produced = 0;
      let received = 0;
      let mostAhead = 0;
      async function* catalogue() {
        for (let index = 0; index < count; index += 1) {
          mostAhead = Math.max(mostAhead, produced - received);
          produced += 1;
          yield product(`BULK-${String(index).padStart(4, '0')}`, {
            inventory_quantity: index,
            attributes: { batch: 'one' },
            ...(index % 10 === 0 ? { status: 'draft' as const } : {}),
          });
        }
      }
      const results: ProductResult[] = [];
      for await (const result of merx.bulk.upsertProducts(catalogue(), { window })) {
        received += 1;
        results.push(result);
      }
      assert.equal(results.length, count);
      results.forEach((result, index) => {
        assert.equal(result.index, index);
        assert.equal(result.sku, `BULK-${String(index).padStart(4, '0')}`);
        assert.equal(result.outcome, 'created', JSON.stringify(result.problem));
        assert.match(result.product!.id, /^prod_[0-9a-z]{26}$/);
      });
      assert.ok(mostAhead <= window, `the generator ran ${mostAhead} items ahead of the results, beyond the window of ${window}`);

      const stored = await listedThroughRest(merx);
      assert.equal(stored.length, count);
      const bySku = new Map(stored.map((item) => [item.sku, item]));
      for (const result of results) assert.deepEqual(bySku.get(result.sku), result.product, 'the result is the product REST shows');
      const sample = bySku.get('BULK-0420')!;
      assert.deepEqual(
        { price: sample.price, currency: sample.currency, status: sample.status, inventory_quantity: sample.inventory_quantity, attributes: sample.attributes },
        { price: '10.00', currency: 'EUR', status: 'draft', inventory_quantity: 420, attributes: { batch: 'one' } },
      );
    });

    it('says updated, unchanged or failed with the REST problem per item, and the stream goes on', async () => {
      const results: ProductResult[] = [];
      const items = [
        product('BULK-0001', { price: '12.50' }),
        product('BULK-0002', { inventory_quantity: 2, attributes: { batch: 'one' } }),
        product('bad sku!', { price: 'ten' }),
        product('BULK-NEW'),
      ];
      for await (const result of merx.bulk.upsertProducts(items)) results.push(result);
      assert.deepEqual(
        results.map((result) => result.outcome),
        ['updated', 'unchanged', 'failed', 'created'],
      );
      assert.equal(results[0]!.product!.price, '12.50');
      assert.equal(results[0]!.product!.version, 2);
      const failed = results[2]!;
      assert.equal(failed.problem?.code, 'validation_failed');
      assert.deepEqual(failed.problem!.errors.map((error) => error.field).sort(), ['price', 'sku']);
      assert.equal((await merx.products.retrieve(results[0]!.product!.id)).price, '12.50');
    });

    it('sends what the iterable has ready in pages of pageSize, answering one result per item in order, and refuses a page size out of range', async () => {
      // A merchant of its own: the exports below count the shared one's products.
      const paged = new Merx({ apiKey: (await server.createMerchant()).apiKey, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
      after(() => paged.close());
      const items = Array.from({ length: 1_203 }, (_, index) => product(`PAGED-${index}`));
      const results: ProductResult[] = [];
      for await (const result of paged.bulk.upsertProducts(items, { pageSize: 250, window: 1_000 })) results.push(result);
      assert.deepEqual(
        results.map((result) => [result.index, result.sku, result.outcome]),
        items.map((item, index) => [index, item.sku, 'created']),
      );
      for (const pageSize of [0, 1_001, 2.5]) {
        await assert.rejects(
          (async () => {
            for await (const result of paged.bulk.upsertProducts(items, { pageSize })) void result;
          })(),
          (error: unknown) => error instanceof MerxError && /pageSize must be a whole number of items from 1 to 1000/.test(error.message),
        );
      }
    });

    it('exports every product once, oldest first, as REST products, with the filters of list', async () => {
      const exported: Product[] = [];
      for await (const item of merx.bulk.exportProducts()) exported.push(item);
      assert.equal(exported.length, 1_001);
      const ids = exported.map((item) => item.id);
      assert.equal(new Set(ids).size, ids.length);
      assert.deepEqual(ids, [...ids].sort());
      const viaRest = await merx.products.retrieve(exported[0]!.id);
      assert.deepEqual(exported[0], { ...viaRest });

      const drafts: Product[] = [];
      for await (const item of merx.bulk.exportProducts({ status: 'draft' })) drafts.push(item);
      assert.equal(drafts.length, 100);
      assert.ok(drafts.every((item) => item.status === 'draft'));
      const one: Product[] = [];
      for await (const item of merx.bulk.exportProducts({ sku: 'BULK-0007' })) one.push(item);
      assert.deepEqual(
        one.map((item) => item.sku),
        ['BULK-0007'],
      );
    });

    it('yields the same products in the same order whatever the page size, and refuses a page size out of range', async () => {
      const ids = async (pageSize?: number) => {
        const seen: string[] = [];
        for await (const item of merx.bulk.exportProducts({ pageSize })) seen.push(item.id);
        return seen;
      };
      const byDefault = await ids();
      assert.equal(byDefault.length, 1_001);
      // 1,001 products: none of these divides it, so every export ends on a part-filled page.
      for (const pageSize of [1, 7, 1_000]) assert.deepEqual(await ids(pageSize), byDefault, `pageSize ${pageSize}`);

      const tooLarge = await ids(1_001).catch((error: unknown) => error);
      assert.ok(tooLarge instanceof UnprocessableEntityError, String(tooLarge));
      assert.deepEqual(
        tooLarge.errors.map((error) => error.field),
        ['page_size'],
      );
      for (const pageSize of [0, 2.5]) await assert.rejects(ids(pageSize), /pageSize must be a whole number of products, 1 or more/);
    });

    it('stops the export when the loop breaks, and a new export starts afresh', async () => {
      let seen = 0;
      for await (const item of merx.bulk.exportProducts()) {
        assert.ok(item.id);
        if ((seen += 1) === 10) break;
      }
      assert.equal(seen, 10);
      let again = 0;
      for await (const item of merx.bulk.exportProducts({ currency: 'EUR' })) again += item.currency === 'EUR' ? 1 : 0;
      assert.equal(again, 1_001);
    });

    it('throws ConnectionError when the connection drops midway; sending the same items again creates nothing twice', async () => {
      const proxy = await TcpProxy.start(server.grpcUrl);
      const client = new Merx({ apiKey: (await server.createMerchant()).apiKey, baseUrl: server.baseUrl, grpcUrl: proxy.address });
      try {
        const items = Array.from({ length: 300 }, (_, index) => product(`CUT-${String(index).padStart(3, '0')}`));
        const first: ProductResult[] = [];
        await assert.rejects(async () => {
          for await (const result of client.bulk.upsertProducts(items, { window: 100 })) {
            first.push(result);
            if (first.length === 50) proxy.cut();
          }
        }, ConnectionError);
        assert.ok(first.length >= 50);
        const again: ProductResult[] = [];
        for await (const result of client.bulk.upsertProducts(items)) again.push(result);
        assert.deepEqual(
          again.map((result) => result.sku),
          items.map((item) => item.sku),
        );
        assert.ok(again.every((result) => result.outcome === 'created' || result.outcome === 'unchanged'));
        assert.ok(
          again.slice(0, 50).every((result) => result.outcome === 'unchanged'),
          'what the first call answered was durable',
        );
        const stored = await listedThroughRest(client);
        assert.equal(stored.length, 300);
      } finally {
        await client.close();
        await proxy.close();
      }
    });

    it('creates a batch in one call, an existing sku being a conflict result rather than a failed call', async () => {
      const results = await merx.bulk.batchCreateProducts([product('BATCH-1'), product('BULK-0003'), product('BATCH-2', { status: 'draft' })]);
      assert.deepEqual(
        results.map((result) => [result.index, result.sku, result.outcome]),
        [
          [0, 'BATCH-1', 'created'],
          [1, 'BULK-0003', 'failed'],
          [2, 'BATCH-2', 'created'],
        ],
      );
      assert.equal(results[1]!.problem!.code, 'conflict');
      assert.equal(results[2]!.product!.status, 'draft');
    });
  });

  describe('events.stream: from a cursor, then live, resumable', () => {
    let merx: Merx;
    before(async () => {
      const merchant = await server.createMerchant();
      merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
    });
    after(() => merx.close());

    /** The id of the products.created event of `sku`, through REST. */
    const eventOf = (sku: string) =>
      eventually(async () => {
        for await (const event of merx.events.list({ topic: 'products.created', limit: 100 }))
          if ((event.data.object as { sku?: string }).sku === sku) return event.id;
        return undefined;
      }, `the event of ${sku}`);

    it('gives the events after a cursor, then live ones; a new stream after the last id seen misses and repeats nothing', async () => {
      await merx.products.create(product('EV-0'));
      const cursor = await eventOf('EV-0');
      await merx.products.create(product('EV-1'));
      await merx.products.create(product('EV-2'));

      const controller = new AbortController();
      const stream = merx.events.stream({ after: cursor, topics: ['products.created'], signal: controller.signal });
      const seen: StreamedEvent[] = [];
      const reading = (async () => {
        for await (const event of stream) {
          seen.push(event);
          if (seen.length === 2) await merx.products.create(product('EV-3')); // live, while the stream is open
        }
      })();
      await eventually(() => seen.length >= 3, 'three events');
      controller.abort(); // ends the loop quietly
      await reading;
      assert.deepEqual(
        seen.map((event) => (event.data.object as { sku: string }).sku),
        ['EV-1', 'EV-2', 'EV-3'],
      );
      assert.ok(
        seen.every(
          (event) => event.topic === 'products.created' && event.object === 'event' && /^evt_/.test(event.id) && !Number.isNaN(Date.parse(event.created_at)),
        ),
      );
      const viaRest = await merx.events.retrieve(seen[0]!.id);
      assert.deepEqual(seen[0]!.data, viaRest.data);

      // Resume after the last id seen, with more happening meanwhile.
      await merx.products.create(product('EV-4'));
      await merx.products.update((await merx.products.create(product('EV-5'))).id, { title: 'Renamed' });
      const resumed = await take(merx.events.stream({ after: seen.at(-1)!.id, topics: ['products'] }), 3);
      assert.deepEqual(
        resumed.map((event) => [event.topic, (event.data.object as { sku: string }).sku]),
        [
          ['products.created', 'EV-4'],
          ['products.created', 'EV-5'],
          ['products.updated', 'EV-5'],
        ],
      );
    });

    it('resumes by itself after the connection drops, without a gap or a duplicate', async () => {
      const proxy = await TcpProxy.start(server.grpcUrl);
      const client = new Merx({ apiKey: (await server.createMerchant()).apiKey, baseUrl: server.baseUrl, grpcUrl: proxy.address });
      try {
        await client.products.create(product('DROP-0'));
        const cursor = await eventually(async () => {
          for await (const event of client.events.list({ topic: 'products.created' })) return event.id;
          return undefined;
        }, 'the first event');
        const skus: string[] = [];
        const controller = new AbortController();
        const reading = (async () => {
          for await (const event of client.events.stream({ after: cursor, topics: ['products.created'], signal: controller.signal })) {
            skus.push((event.data.object as { sku: string }).sku);
          }
        })();
        for (let round = 1; round <= 3; round += 1) {
          await client.products.create(product(`DROP-${round}`));
          await eventually(() => skus.length >= round, `event ${round}`);
          proxy.cut(); // the stream fails with UNAVAILABLE and is opened again after the last id
        }
        await client.products.create(product('DROP-4'));
        await eventually(() => skus.length >= 4, 'the event after the last drop');
        controller.abort();
        await reading;
        assert.deepEqual(skus, ['DROP-1', 'DROP-2', 'DROP-3', 'DROP-4']);
        assert.ok(proxy.connections >= 4, `${proxy.connections} connections: the stream was opened again after each drop`);
      } finally {
        await client.close();
        await proxy.close();
      }
    });
  });

  describe('records: streaming ingestion into a source', () => {
    it('acknowledges each record in order: accepted, duplicate with the first id, rejected with the problem', async () => {
      const merx = new Merx({ apiKey: (await server.createMerchant()).apiKey, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
      try {
        const source = await merx.sources.create({ name: 'Shop', kind: 'storefront' });
        const occurred_at = new Date().toISOString();
        const acks = [];
        // Ready at once, the three go as one page; pageSize 2 makes them a page and a lone record.
        for await (const ack of merx.sources.records.ingest(
          source.id,
          [
            { type: 'order', external_id: 'ord-1', occurred_at, data: { total: 129.9, currency: 'EUR' } },
            { type: 'order', external_id: 'ord-1', occurred_at, data: { total: 129.9, currency: 'EUR' } },
            { type: 'order', external_id: 'ord-2', occurred_at, data: { total: 'lots' as unknown as number } }, // what a sloppy source sends
          ],
          { pageSize: 2 },
        )) {
          acks.push(ack);
        }
        assert.deepEqual(
          acks.map((ack) => [ack.index, ack.external_id, ack.status]),
          [
            [0, 'ord-1', 'accepted'],
            [1, 'ord-1', 'duplicate'],
            [2, 'ord-2', 'rejected'],
          ],
        );
        assert.match(acks[0]!.record_id!, /^rec_/);
        assert.equal(acks[1]!.record_id, acks[0]!.record_id);
        assert.ok(acks[2]!.problem!.code);
        const stored = [];
        for await (const record of merx.sources.records.list(source.id)) stored.push(record.id);
        assert.deepEqual(stored, [acks[0]!.record_id]);
      } finally {
        await merx.close();
      }
    });
  });

  describe('tokens and errors', () => {
    it('opens a call again with a fresh token when the gRPC port refuses the one it had', async () => {
      const merchant = await server.createMerchant();
      let saved: StoredToken | undefined;
      const stale: StoredToken = { accessToken: 'not-a-token', expiresAt: Date.now() + 600_000, refreshAt: Date.now() + 600_000 };
      const merx = new Merx({
        apiKey: merchant.apiKey,
        baseUrl: server.baseUrl,
        grpcUrl: server.grpcUrl,
        tokenStore: { load: () => stale, save: (token) => void (saved = token) },
      });
      try {
        const results: ProductResult[] = [];
        for await (const result of merx.bulk.upsertProducts([product('TOKEN-1'), product('TOKEN-2')])) results.push(result);
        assert.deepEqual(
          results.map((result) => result.outcome),
          ['created', 'created'],
        );
        assert.ok(saved && saved.accessToken !== stale.accessToken, 'a new token was exchanged and stored');
      } finally {
        await merx.close();
      }
    });

    it('maps a whole-call refusal to the typed error of REST, carrying the ErrorInfo reason', async () => {
      const owner = new Merx({ apiKey: (await server.createMerchant()).apiKey, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
      const readOnly = await owner.apiKeys.create({ name: 'read only', scopes: ['products:read'] });
      const merx = new Merx({ apiKey: readOnly.secret!, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
      try {
        await assert.rejects(
          async () => {
            for await (const result of merx.bulk.upsertProducts([product('NOPE-1')])) assert.fail(`no result expected, got ${JSON.stringify(result)}`);
          },
          (error: unknown) => {
            assert.ok(error instanceof PermissionDeniedError, String(error));
            assert.equal(error.status, 403);
            assert.equal(error.code, 'insufficient_scope');
            assert.equal(error.problem.grpc_status, 'PERMISSION_DENIED');
            return true;
          },
        );
        await assert.rejects(owner.bulk.batchCreateProducts([]), (error: unknown) => {
          assert.ok(error instanceof UnprocessableEntityError, String(error));
          assert.equal(error.code, 'validation_failed');
          assert.deepEqual(
            error.errors.map((field) => [field.field, field.code]),
            [['products', 'too_short']],
            'BadRequest field violations as the REST errors',
          );
          return true;
        });
        // Nothing was written by the refused call.
        assert.equal((await owner.products.list()).data.length, 0);
      } finally {
        await Promise.all([merx.close(), owner.close()]);
      }
    });

    it('a revoked key fails the stream with AuthenticationError, not a retry loop', async () => {
      const owner = new Merx({ apiKey: (await server.createMerchant()).apiKey, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
      const key = await owner.apiKeys.create({ name: 'soon revoked', scopes: ['webhooks:read'] });
      const merx = new Merx({
        apiKey: key.secret!,
        baseUrl: server.baseUrl,
        grpcUrl: server.grpcUrl,
        tokenStore: { load: () => ({ accessToken: 'not-a-token', expiresAt: Date.now() + 600_000, refreshAt: Date.now() + 600_000 }), save: () => undefined },
      });
      await owner.apiKeys.revoke(key.id);
      try {
        await assert.rejects(take(merx.events.stream(), 1), AuthenticationError);
      } finally {
        await Promise.all([merx.close(), owner.close()]);
      }
    });

    it('refuses a malformed grpcUrl when the client is made, and a batch too big is the REST 422', async () => {
      assert.throws(() => new Merx({ apiKey: 'mx_test_a_b', grpcUrl: 'ftp://example.test' }), /grpcUrl must be/);
      const merx = new Merx({ apiKey: (await server.createMerchant()).apiKey, baseUrl: server.baseUrl, grpcUrl: server.grpcUrl });
      try {
        await assert.rejects(
          merx.bulk.batchCreateProducts(Array.from({ length: 1_001 }, (_, index) => product(`TOO-MANY-${index}`))),
          UnprocessableEntityError,
        );
      } finally {
        await merx.close();
      }
    });
  });
});
