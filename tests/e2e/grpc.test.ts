import assert from 'node:assert/strict';
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  BatchCreateProductsRequestSchema,
  ExportProductsRequestSchema,
  ExportProductsResponseSchema,
  IngestRecordsRequestSchema,
  IngestRecordsResponse_Status,
  ProductResult_Outcome,
  ProductStatus,
  RecordType,
  StreamEventsRequestSchema,
  UpsertProductsRequestSchema,
  type BatchCreateProductsResponse,
  type ExportProductsResponse,
  type IngestRecordsResponse,
  ProductInputSchema,
  type StreamEventsResponse,
  type UpsertProductsResponse,
} from '@merx/contracts/grpc';
import { grpc } from '@merx/kit';
import { WebhookReceiver } from '@merx/webhooks/testing';
import { service as healthService } from 'grpc-health-check';
import {
  bearer,
  bidiAll,
  call,
  createMerchant,
  eventually,
  grpcClients,
  issueToken,
  problemOf,
  rejectsWith,
  serverStreamAll,
  sharedStack,
  unary,
  type ApiResponse,
  type Stack,
  type TestMerchant,
} from '../src/harness/index.js';

type ProductInit = MessageInitShape<typeof ProductInputSchema>;
const productInput = (sku: string, extra: ProductInit = {}) =>
  create(ProductInputSchema, { sku, title: `Product ${sku}`, price: '10.00', currency: 'EUR', ...extra });
const upsertRequest = (sku: string, extra: ProductInit = {}) => create(UpsertProductsRequestSchema, { product: productInput(sku, extra) });

describe('gRPC sub-APIs through the public gRPC port', function () {
  this.timeout(180_000);
  let stack: Stack;
  let merchant: TestMerchant;
  let clients: ReturnType<typeof grpcClients>;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
    clients = grpcClients(stack);
  });
  after(() => clients?.close());
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  /** Every product of the merchant through REST, page by page. */
  async function productsThroughRest(token = merchant.token): Promise<Array<Record<string, any>>> {
    const all: Array<Record<string, any>> = [];
    let cursor: string | null = null;
    do {
      const page: ApiResponse = await call(stack, 'GET', `/api/v1/products?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token });
      assert.equal(page.status, 200, page.text);
      all.push(...page.body.data);
      cursor = page.body.next_cursor;
    } while (cursor);
    return all;
  }

  it('answers standard health checks and lists its services by reflection', async () => {
    const Health = grpc.makeGenericClientConstructor(healthService, 'Health');
    const health = new Health(stack.grpcAddress, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
    const answer = await new Promise<{ status: string | number }>((resolve, reject) =>
      health.Check({ service: 'merx.v1.ProductService' }, (error: Error | null, response: { status: string | number }) =>
        error ? reject(error) : resolve(response),
      ),
    );
    assert.ok(answer.status === 'SERVING' || answer.status === 1, JSON.stringify(answer));
    health.close();

    // grpc.reflection.v1.ServerReflection/ServerReflectionInfo with list_services (field 7), decoded loosely: the service names are in the answer.
    const reflection = new grpc.Client(stack.grpcAddress, grpc.credentials.createInsecure());
    const listed = await new Promise<string>((resolve, reject) => {
      const stream = reflection.makeBidiStreamRequest(
        '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
        (b: Buffer) => b,
        (b: Buffer) => b,
      );
      stream.on('data', (bytes: Buffer) => {
        resolve(bytes.toString('latin1'));
        stream.end();
      });
      stream.on('error', reject);
      stream.write(Buffer.from([0x3a, 0x01, 0x2a]));
    });
    reflection.close();
    for (const name of ['merx.v1.ProductService', 'merx.v1.RecordService', 'merx.v1.EventService'])
      assert.ok(listed.includes(name), `${name} is not listed: ${listed}`);
  });

  it('upserts 10,000 products in one stream, each readable through REST with its event', async function () {
    this.timeout(300_000);
    const count = 10_000;
    const requests = Array.from({ length: count }, (_, index) =>
      upsertRequest(`BULK-${String(index).padStart(5, '0')}`, { attributes: { batch: 'one' }, inventoryQuantity: index }),
    );
    const answers = await bidiAll<UpsertProductsResponse>(clients.products, 'UpsertProducts', requests, bearer(merchant.token));
    assert.equal(answers.length, count);
    answers.forEach((answer, index) => {
      assert.equal(answer.result!.index, index);
      assert.equal(answer.result!.outcome, ProductResult_Outcome.CREATED, JSON.stringify(answer.result!.problem));
      assert.match(answer.result!.product!.id, /^prod_[0-9a-z]{26}$/);
    });
    const stored = await productsThroughRest();
    assert.equal(stored.length, count);
    const bySku = new Map(stored.map((product) => [product.sku, product]));
    assert.equal(bySku.size, count);
    const sample = bySku.get('BULK-04242')!;
    assert.deepEqual(
      { price: sample.price, currency: sample.currency, status: sample.status, inventory_quantity: sample.inventory_quantity, attributes: sample.attributes },
      { price: '10.00', currency: 'EUR', status: 'active', inventory_quantity: 4242, attributes: { batch: 'one' } },
    );
    assert.equal(sample.id, answers[4242]!.result!.product!.id);
    // Webhooks and audit see bulk work like any other: one products.created per product.
    await eventually(
      async () => stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'products.created').length,
      (seen) => seen === count,
      'every products.created',
      120_000,
    );
  });

  it('resumes a stream cut halfway with the same items without creating duplicates', async () => {
    const requests = Array.from({ length: 1_200 }, (_, index) => upsertRequest(`CUT-${index}`));
    // Cut the first stream as soon as some results have come back.
    await new Promise<void>((resolve) => {
      const stream: grpc.ClientDuplexStream<unknown, UpsertProductsResponse> = clients.products.UpsertProducts(bearer(merchant.token));
      let answered = 0;
      stream.on('data', () => {
        answered += 1;
        if (answered === 100) stream.cancel();
      });
      stream.on('error', (error: grpc.ServiceError) => {
        assert.equal(error.code, grpc.status.CANCELLED);
        resolve();
      });
      stream.on('end', () => resolve());
      for (const request of requests) stream.write(request);
    });
    const answers = await bidiAll<UpsertProductsResponse>(clients.products, 'UpsertProducts', requests, bearer(merchant.token));
    assert.equal(answers.length, requests.length);
    const outcomes = answers.map((answer) => answer.result!.outcome);
    assert.ok(outcomes.every((outcome) => outcome === ProductResult_Outcome.CREATED || outcome === ProductResult_Outcome.UNCHANGED));
    assert.ok(outcomes.filter((outcome) => outcome === ProductResult_Outcome.UNCHANGED).length >= 100, 'what the first stream reported done was kept');
    const stored = await productsThroughRest();
    assert.equal(stored.length, requests.length);
    await eventually(
      async () => stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'products.created').length,
      (seen) => seen >= requests.length,
      'every products.created',
    );
    const created = stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'products.created');
    assert.equal(new Set(created.map((event) => event.data.object.sku)).size, created.length, 'no product was announced twice');
    assert.equal(created.length, requests.length);
  });

  it('upserts pages of products: one answer per message, items numbered across the stream, each failing alone', async () => {
    const page = (skus: string[], extra: ProductInit = {}) => create(UpsertProductsRequestSchema, { products: skus.map((sku) => productInput(sku, extra)) });
    const big = Array.from({ length: 1_000 }, (_, index) => `PAGE-BIG-${index}`);
    const requests = [
      upsertRequest('PAGE-A'),
      create(UpsertProductsRequestSchema, { products: [productInput('PAGE-B'), productInput('PAGE-C', { price: '1.234' }), productInput('PAGE-D')] }),
      upsertRequest('PAGE-E'),
      page(big),
      // The same sku again in a later page: applied in stream order, so it updates.
      page(['PAGE-B'], { price: '11.00' }),
    ];
    const answers = await bidiAll<UpsertProductsResponse>(clients.products, 'UpsertProducts', requests, bearer(merchant.token));
    assert.equal(answers.length, requests.length, 'one answer per message');
    assert.equal(answers[0]!.result!.index, 0);
    assert.deepEqual(answers[0]!.results, []);
    assert.equal(answers[1]!.result, undefined);
    assert.deepEqual(
      answers[1]!.results.map((result) => [result.index, result.sku, result.outcome, result.problem?.violations.map((violation) => violation.field)]),
      [
        [1, 'PAGE-B', ProductResult_Outcome.CREATED, undefined],
        [2, 'PAGE-C', ProductResult_Outcome.FAILED, ['price']],
        [3, 'PAGE-D', ProductResult_Outcome.CREATED, undefined],
      ],
    );
    assert.equal(answers[2]!.result!.index, 4);
    assert.deepEqual(
      answers[3]!.results.map((result) => result.index),
      big.map((_, offset) => 5 + offset),
    );
    assert.ok(answers[3]!.results.every((result, offset) => result.outcome === ProductResult_Outcome.CREATED && result.sku === big[offset]));
    assert.deepEqual(
      answers[4]!.results.map((result) => [result.index, result.outcome, result.product?.price]),
      [[1_005, ProductResult_Outcome.UPDATED, '11.00']],
    );
    const stored = await productsThroughRest();
    // A, B, D and E, and the big page; C failed alone.
    assert.equal(stored.length, 4 + big.length);
    assert.equal(stored.find((product) => product.sku === 'PAGE-B')!.price, '11.00');
    await eventually(
      async () => stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'products.created').length,
      (seen) => seen === 4 + big.length,
      'a products.created per product of the pages',
    );
  });

  it('refuses a message carrying both one product and a page, or a page above 1,000, with INVALID_ARGUMENT naming the field', async () => {
    const refusedUpsert = (message: MessageInitShape<typeof UpsertProductsRequestSchema>) =>
      rejectsWith(
        bidiAll(clients.products, 'UpsertProducts', [create(UpsertProductsRequestSchema, message)], bearer(merchant.token)),
        grpc.status.INVALID_ARGUMENT,
      );
    const both = await refusedUpsert({ product: productInput('BOTH-1'), products: [productInput('BOTH-2')] });
    assert.deepEqual(problemOf(both), { reason: 'validation_failed', fields: ['product'], retryDelayMs: undefined });
    const tooLong = await refusedUpsert({ products: Array.from({ length: 1_001 }, (_, index) => productInput(`LONG-${index}`)) });
    assert.deepEqual(problemOf(tooLong), { reason: 'validation_failed', fields: ['products'], retryDelayMs: undefined });
    const records = await rejectsWith(
      bidiAll(
        clients.records,
        'IngestRecords',
        [create(IngestRecordsRequestSchema, { sourceId: 'src_00000000000000000000000000', record: { externalId: 'a' }, records: [{ externalId: 'b' }] })],
        bearer(merchant.token),
      ),
      grpc.status.INVALID_ARGUMENT,
    );
    assert.deepEqual(problemOf(records).fields, ['record']);
    assert.equal((await productsThroughRest()).length, 0, 'nothing of a refused message was written');
  });

  it('updates by sku with the REST rules, and says unchanged for an item that changes nothing', async () => {
    const first = await bidiAll<UpsertProductsResponse>(
      clients.products,
      'UpsertProducts',
      [upsertRequest('UP-1', { status: ProductStatus.DRAFT })],
      bearer(merchant.token),
    );
    assert.equal(first[0]!.result!.outcome, ProductResult_Outcome.CREATED);
    const answers = await bidiAll<UpsertProductsResponse>(
      clients.products,
      'UpsertProducts',
      [
        upsertRequest('UP-1', { status: ProductStatus.DRAFT, price: '12.5' }),
        upsertRequest('UP-1', { status: ProductStatus.DRAFT, price: '12.50' }),
        upsertRequest('UP-1', { status: ProductStatus.ARCHIVED }),
      ],
      bearer(merchant.token),
    );
    assert.deepEqual(
      answers.map((answer) => answer.result!.outcome),
      [ProductResult_Outcome.UPDATED, ProductResult_Outcome.UNCHANGED, ProductResult_Outcome.FAILED],
    );
    assert.equal(answers[0]!.result!.product!.price, '12.50');
    assert.equal(answers[0]!.result!.product!.version, 2);
    assert.equal(answers[2]!.result!.problem!.code, 'conflict', 'a draft cannot be archived, as in REST');
    const updated = await stack.events.waitFor((event) => event.topic === 'products.updated' && event.data.object.id === first[0]!.result!.product!.id);
    assert.deepEqual(updated.data.previous, { price: '10.00' });
    // The audit log learns who did it, as for REST: the key's client and the edge's request id.
    assert.deepEqual(updated.context?.actor, { type: 'api_key', id: merchant.clientId });
    assert.match(updated.context?.request_id ?? '', /^req_[0-9a-z]{26}$/);
  });

  it('creates a batch in one call and exports every product once, in a stable order, to a slow reader', async () => {
    const batch = await unary<BatchCreateProductsResponse>(
      clients.products,
      'BatchCreateProducts',
      create(BatchCreateProductsRequestSchema, {
        products: Array.from({ length: 1_000 }, (_, index) => productInput(`EXP-${index}`, index % 2 ? { status: ProductStatus.DRAFT } : {})),
      }),
      bearer(merchant.token),
    );
    assert.equal(batch.results.length, 1_000);
    assert.ok(batch.results.every((result) => result.outcome === ProductResult_Outcome.CREATED));
    const again = await unary<BatchCreateProductsResponse>(
      clients.products,
      'BatchCreateProducts',
      create(BatchCreateProductsRequestSchema, { products: [productInput('EXP-1')] }),
      bearer(merchant.token),
    );
    assert.equal(again.results[0]!.problem!.code, 'conflict');

    const exported = await new Promise<string[]>((resolve, reject) => {
      const stream: grpc.ClientReadableStream<ExportProductsResponse> = clients.products.ExportProducts(
        create(ExportProductsRequestSchema, {}),
        bearer(merchant.token),
      );
      const ids: string[] = [];
      stream.on('data', (message: ExportProductsResponse) => {
        ids.push(message.product!.id);
        // A slow reader: the server waits for it rather than buffering the whole export.
        if (ids.length % 250 === 0) {
          stream.pause();
          setTimeout(() => stream.resume(), 100);
        }
      });
      stream.on('error', reject);
      stream.on('end', () => resolve(ids));
    });
    assert.equal(exported.length, 1_000);
    assert.equal(new Set(exported).size, 1_000);
    assert.deepEqual(exported, [...exported].sort());
    const drafts = await serverStreamAll<ExportProductsResponse>(
      clients.products,
      'ExportProducts',
      create(ExportProductsRequestSchema, { status: ProductStatus.DRAFT }),
      bearer(merchant.token),
    );
    assert.equal(drafts.length, 500);
    assert.ok(drafts.every((message) => message.product!.status === ProductStatus.DRAFT));
  });

  it('exports in pages the same products, once each and in the same order, as one per message and as REST', async () => {
    // More than one database page (1,000 rows), so pages of messages straddle the database's pages.
    const total = 2_347;
    for (let start = 0; start < total; start += 1_000) {
      const batch = await unary<BatchCreateProductsResponse>(
        clients.products,
        'BatchCreateProducts',
        create(BatchCreateProductsRequestSchema, {
          products: Array.from({ length: Math.min(1_000, total - start) }, (_, offset) => productInput(`PAGE-${start + offset}`)),
        }),
        bearer(merchant.token),
      );
      assert.ok(batch.results.every((result) => result.outcome === ProductResult_Outcome.CREATED));
    }
    const oneByOne = (
      await serverStreamAll<ExportProductsResponse>(clients.products, 'ExportProducts', create(ExportProductsRequestSchema, {}), bearer(merchant.token))
    ).map((message) => {
      assert.equal(message.products.length, 0, 'without page_size, products stays empty');
      return message.product!.id;
    });
    assert.equal(oneByOne.length, total);
    // REST lists newest first; an export goes oldest first.
    const throughRest = (await productsThroughRest()).reverse();
    assert.deepEqual(
      oneByOne,
      throughRest.map((product) => product.id),
    );

    // None of these divides 2,347: the last message of each carries the rest.
    for (const pageSize of [1, 7, 333, 500, 1_000]) {
      const messages = await serverStreamAll<ExportProductsResponse>(
        clients.products,
        'ExportProducts',
        create(ExportProductsRequestSchema, { pageSize }),
        bearer(merchant.token),
      );
      assert.equal(messages.length, Math.ceil(total / pageSize), `page_size ${pageSize}`);
      assert.ok(
        messages.every(
          (message, index) => message.product === undefined && message.products.length === (index < messages.length - 1 ? pageSize : total - pageSize * index),
        ),
        `page_size ${pageSize}: every message but the last is full`,
      );
      assert.deepEqual(
        messages.flatMap((message) => message.products.map((product) => [product.id, product.sku, product.price, product.version])),
        throughRest.map((product) => [product.id, product.sku, product.price, product.version]),
        `page_size ${pageSize}`,
      );
    }
    // Pages frame the filtered export too; an export of nothing is no message, not an empty page.
    const drafts = await serverStreamAll<ExportProductsResponse>(
      clients.products,
      'ExportProducts',
      create(ExportProductsRequestSchema, { status: ProductStatus.DRAFT, pageSize: 500 }),
      bearer(merchant.token),
    );
    assert.deepEqual(drafts, []);
    const one = await serverStreamAll<ExportProductsResponse>(
      clients.products,
      'ExportProducts',
      create(ExportProductsRequestSchema, { sku: 'PAGE-42', pageSize: 500 }),
      bearer(merchant.token),
    );
    assert.deepEqual(
      one.map((message) => message.products.map((product) => product.sku)),
      [['PAGE-42']],
    );

    // A slow reader of pages: the server waits for it rather than buffering the whole export.
    const slow = await new Promise<string[]>((resolve, reject) => {
      const stream: grpc.ClientReadableStream<ExportProductsResponse> = clients.products.ExportProducts(
        create(ExportProductsRequestSchema, { pageSize: 100 }),
        bearer(merchant.token),
      );
      const ids: string[] = [];
      stream.on('data', (message: ExportProductsResponse) => {
        ids.push(...message.products.map((product) => product.id));
        if (ids.length % 500 === 0) {
          stream.pause();
          setTimeout(() => stream.resume(), 100);
        }
      });
      stream.on('error', reject);
      stream.on('end', () => resolve(ids));
    });
    assert.deepEqual(slow, oneByOne);
  });

  it('closes a page of large products early, so no message nears the 4 MiB a gRPC message may weigh', async () => {
    // About 140 kB each (the longest description and attributes REST allows, in 4-byte characters):
    // 40 of them, asked for in one page, would weigh 5.6 MB.
    const large = (sku: string) =>
      productInput(sku, {
        description: '😀'.repeat(10_000),
        attributes: Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`key-${index}`, '😀'.repeat(500)])),
      });
    for (const start of [0, 20]) {
      const batch = await unary<BatchCreateProductsResponse>(
        clients.products,
        'BatchCreateProducts',
        create(BatchCreateProductsRequestSchema, { products: Array.from({ length: 20 }, (_, offset) => large(`LARGE-${start + offset}`)) }),
        bearer(merchant.token),
      );
      assert.ok(
        batch.results.every((result) => result.outcome === ProductResult_Outcome.CREATED),
        JSON.stringify(batch.results.find((result) => result.problem)?.problem),
      );
    }
    const messages = await serverStreamAll<ExportProductsResponse>(
      clients.products,
      'ExportProducts',
      create(ExportProductsRequestSchema, { pageSize: 1_000 }),
      bearer(merchant.token),
    );
    assert.ok(messages.length > 1, `${messages.length} message(s)`);
    for (const message of messages) assert.ok(toBinary(ExportProductsResponseSchema, message).length <= 1024 * 1024);
    const exported = messages.flatMap((message) => message.products);
    assert.deepEqual(
      exported.map((product) => product.sku),
      (await productsThroughRest()).reverse().map((product) => product.sku),
    );
    assert.equal(exported.length, 40);
    assert.equal(exported[0]!.description, '😀'.repeat(10_000));
  });

  it('ingests records with one ack each, once per external_id, routed like REST ingestion', async () => {
    const source = await call(stack, 'POST', '/api/v1/sources', { token: merchant.token, body: { name: 'Shop', kind: 'storefront' } });
    assert.equal(source.status, 201, source.text);
    const record = (externalId: string, type: RecordType, data: Record<string, unknown>) =>
      create(IngestRecordsRequestSchema, {
        sourceId: source.body.id,
        record: { type, externalId, occurTime: timestampFromDate(new Date('2026-11-22T10:04:05.123Z')), data: data as never },
      });
    const requests = [
      record('ord-1', RecordType.ORDER, { total: 129.9, currency: 'EUR' }),
      record('rev-1', RecordType.REVIEW, { rating: 4, body: 'Good' }),
      record('ord-bad', RecordType.ORDER, { total: 'lots' }),
      create(IngestRecordsRequestSchema, {
        sourceId: 'src_00000000000000000000000000',
        record: { type: RecordType.ORDER, externalId: 'x', occurTime: timestampFromDate(new Date()), data: {} },
      }),
    ];
    const acks = await bidiAll<IngestRecordsResponse>(clients.records, 'IngestRecords', requests, bearer(merchant.token));
    assert.deepEqual(
      acks.map((ack) => ack.status),
      [
        IngestRecordsResponse_Status.ACCEPTED,
        IngestRecordsResponse_Status.ACCEPTED,
        IngestRecordsResponse_Status.REJECTED,
        IngestRecordsResponse_Status.REJECTED,
      ],
    );
    assert.deepEqual(
      acks.map((ack) => ack.index),
      [0, 1, 2, 3],
    );
    assert.equal(acks[2]!.problem!.violations[0]!.field, 'data.total');
    assert.equal(acks[3]!.problem!.code, 'not_found');
    const again = await bidiAll<IngestRecordsResponse>(clients.records, 'IngestRecords', requests.slice(0, 2), bearer(merchant.token));
    assert.deepEqual(
      again.map((ack) => ack.status),
      [IngestRecordsResponse_Status.DUPLICATE, IngestRecordsResponse_Status.DUPLICATE],
    );
    assert.deepEqual(
      again.map((ack) => ack.recordId),
      acks.slice(0, 2).map((ack) => ack.recordId),
    );
    const listed = await call(stack, 'GET', `/api/v1/sources/${source.body.id}/records`, { token: merchant.token });
    assert.equal(listed.body.data.length, 2);
    await stack.events.waitFor((event) => event.topic === 'orders.created' && event.id === acks[0]!.eventId);
    await stack.events.waitFor((event) => event.topic === 'reviews.submitted' && event.id === acks[1]!.eventId);
  });

  it('ingests pages of records with one message of acks per page, numbered across the stream', async () => {
    const source = await call(stack, 'POST', '/api/v1/sources', { token: merchant.token, body: { name: 'Shop', kind: 'storefront' } });
    assert.equal(source.status, 201, source.text);
    const order = (externalId: string, total: unknown) => ({
      type: RecordType.ORDER,
      externalId,
      occurTime: timestampFromDate(new Date('2026-11-22T10:04:05.123Z')),
      data: { total, currency: 'EUR' } as never,
    });
    const requests = [
      create(IngestRecordsRequestSchema, { sourceId: source.body.id, record: order('single-1', 10) }),
      create(IngestRecordsRequestSchema, { sourceId: source.body.id, records: [order('page-1', 20), order('page-bad', 'lots'), order('single-1', 10)] }),
      create(IngestRecordsRequestSchema, { sourceId: source.body.id, records: Array.from({ length: 250 }, (_, index) => order(`bulk-${index}`, index + 1)) }),
    ];
    const answers = await bidiAll<IngestRecordsResponse>(clients.records, 'IngestRecords', requests, bearer(merchant.token));
    assert.equal(answers.length, 3, 'one answer per message');
    assert.deepEqual([answers[0]!.index, answers[0]!.status, answers[0]!.acks.length], [0, IngestRecordsResponse_Status.ACCEPTED, 0]);
    assert.deepEqual(
      answers[1]!.acks.map((ack) => [ack.index, ack.externalId, ack.status]),
      [
        [1, 'page-1', IngestRecordsResponse_Status.ACCEPTED],
        [2, 'page-bad', IngestRecordsResponse_Status.REJECTED],
        [3, 'single-1', IngestRecordsResponse_Status.DUPLICATE],
      ],
    );
    assert.equal(answers[1]!.acks[2]!.recordId, answers[0]!.recordId, 'the duplicate names the first record');
    assert.equal(answers[1]!.status, IngestRecordsResponse_Status.UNSPECIFIED, 'a page answer carries its acks only');
    assert.deepEqual(
      answers[2]!.acks.map((ack) => ack.index),
      Array.from({ length: 250 }, (_, offset) => 4 + offset),
    );
    assert.ok(answers[2]!.acks.every((ack) => ack.status === IngestRecordsResponse_Status.ACCEPTED));
    await eventually(
      async () => stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'orders.created').length,
      (seen) => seen === 252,
      'an orders.created per accepted record',
    );
  });

  it('answers a record repeated within one chunk as a duplicate of the first, which alone is stored and announced', async () => {
    const source = await call(stack, 'POST', '/api/v1/sources', { token: merchant.token, body: { name: 'Shop', kind: 'storefront' } });
    assert.equal(source.status, 201, source.text);
    const order = (externalId: string, total: number) =>
      create(IngestRecordsRequestSchema, {
        sourceId: source.body.id,
        record: { type: RecordType.ORDER, externalId, occurTime: timestampFromDate(new Date('2026-11-22T10:04:05.123Z')), data: { total, currency: 'EUR' } },
      });
    // Sent together, the four share a chunk as a rule: the repeats meet their first in the same batch.
    const acks = await bidiAll<IngestRecordsResponse>(
      clients.records,
      'IngestRecords',
      [order('ord-a', 1), order('ord-a', 2), order('ord-b', 3), order('ord-a', 4)],
      bearer(merchant.token),
    );
    assert.deepEqual(
      acks.map((ack) => ack.status),
      [
        IngestRecordsResponse_Status.ACCEPTED,
        IngestRecordsResponse_Status.DUPLICATE,
        IngestRecordsResponse_Status.ACCEPTED,
        IngestRecordsResponse_Status.DUPLICATE,
      ],
    );
    const [first, , second] = acks;
    for (const repeat of [acks[1]!, acks[3]!])
      assert.deepEqual([repeat.recordId, repeat.eventId], [first!.recordId, first!.eventId], 'a duplicate names the first');
    const listed = await call(stack, 'GET', `/api/v1/sources/${source.body.id}/records`, { token: merchant.token });
    assert.deepEqual(listed.body.data.map((record: { external_id: string; data: { total: number } }) => [record.external_id, record.data.total]).sort(), [
      ['ord-a', 1],
      ['ord-b', 3],
    ]);
    // Both events commit together: once ord-b's has arrived, ord-a's has too, and no second one will.
    await stack.events.waitFor((event) => event.id === second!.eventId);
    const announced = stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'orders.created');
    assert.deepEqual(announced.map((event) => event.id).sort(), [first!.eventId, second!.eventId].sort());
  });

  it('routes streamed orders and reviews by a rule to a loopback destination, as REST ingestion is', async () => {
    const erp = await WebhookReceiver.start();
    try {
      const created = async (path: string, body: unknown) => {
        const response = await call(stack, 'POST', path, { token: merchant.token, body });
        assert.equal(response.status, 201, response.text);
        return response.body;
      };
      const source = await created('/api/v1/sources', { name: 'Storefront', kind: 'storefront' });
      const destination = await created('/api/v1/destinations', { name: 'ERP', url: erp.url('/erp') });
      const rule = await created('/api/v1/rules', {
        name: 'Large orders and low ratings',
        event_types: ['orders.created', 'reviews.submitted'],
        condition: '(has(data.total) && data.total >= 100.0) || (has(data.rating) && data.rating <= 2.0)',
        action: 'forward',
      });
      await created('/api/v1/connections', { source_id: source.id, destination_id: destination.id, rule_ids: [rule.id] });
      const record = (externalId: string, type: RecordType, data: Record<string, unknown>) =>
        create(IngestRecordsRequestSchema, {
          sourceId: source.id,
          record: { type, externalId, occurTime: timestampFromDate(new Date()), data: data as never },
        });
      const acks = await bidiAll<IngestRecordsResponse>(
        clients.records,
        'IngestRecords',
        [
          record('big', RecordType.ORDER, { total: 250, currency: 'EUR' }),
          record('small', RecordType.ORDER, { total: 5, currency: 'EUR' }),
          record('bad-review', RecordType.REVIEW, { rating: 1 }),
          record('good-review', RecordType.REVIEW, { rating: 5 }),
        ],
        bearer(merchant.token),
      );
      assert.ok(
        acks.every((ack) => ack.status === IngestRecordsResponse_Status.ACCEPTED),
        JSON.stringify(acks.map((ack) => ack.problem)),
      );
      const arrived = await erp.waitUntil((received) => (received.length >= 2 ? received : undefined), 20_000, 'the two routed records');
      const routed = arrived.map((request) => JSON.parse(request.body) as { topic: string; data: { object: { external_id: string } } });
      assert.deepEqual(routed.map((payload) => payload.data.object.external_id).sort(), ['bad-review', 'big']);
    } finally {
      await erp.close();
    }
  });

  it('streams events from a cursor, then live, and a resumed stream misses nothing and repeats nothing', async () => {
    const startTime = new Date(Date.now() - 1_000);
    const createProducts = (prefix: string, count: number) =>
      unary<BatchCreateProductsResponse>(
        clients.products,
        'BatchCreateProducts',
        create(BatchCreateProductsRequestSchema, { products: Array.from({ length: count }, (_, index) => productInput(`${prefix}-${index}`)) }),
        bearer(merchant.token),
      );
    await createProducts('EV-A', 5);
    const expected = async () =>
      stack.events
        .forMerchant(merchant.merchantId)
        .filter((event) => event.topic.startsWith('products.'))
        .map((event) => event.id);
    await eventually(expected, (ids) => ids.length === 5, 'the first products.created events');

    /** Reads `count` events from a stream, then disconnects. */
    const readEvents = (request: Parameters<typeof create<typeof StreamEventsRequestSchema>>[1], count: number, whileOpen?: () => Promise<unknown>) =>
      new Promise<string[]>((resolve, reject) => {
        const stream: grpc.ClientReadableStream<StreamEventsResponse> = clients.events.StreamEvents(
          create(StreamEventsRequestSchema, request),
          bearer(merchant.token),
        );
        const ids: string[] = [];
        stream.on('data', (message: StreamEventsResponse) => {
          ids.push(message.event!.id);
          assert.ok(message.event!.type.startsWith('products.'));
          if (ids.length === count) {
            stream.cancel();
            resolve(ids);
          }
        });
        stream.on('error', (error: grpc.ServiceError) => (error.code === grpc.status.CANCELLED ? undefined : reject(error)));
        void whileOpen?.();
      });

    const first = await readEvents({ cursor: { case: 'startTime', value: timestampFromDate(startTime) }, topics: ['products'] }, 3);
    // While nobody listens, more happens; then the stream resumes after the last id it got, and follows live.
    await createProducts('EV-B', 4);
    const rest = await readEvents({ cursor: { case: 'afterEventId', value: first.at(-1)! }, topics: ['products'] }, 9, () => createProducts('EV-C', 3));
    const all = [...first, ...rest];
    assert.equal(new Set(all).size, all.length, 'no event twice');
    const published = await eventually(expected, (ids) => ids.length === 12, 'every products.created');
    assert.deepEqual([...all].sort(), [...published].sort());
  });

  it('keeps tenants apart and asks for the scope of the REST operation', async () => {
    await bidiAll(clients.products, 'UpsertProducts', [upsertRequest('MINE-1')], bearer(merchant.token));
    const other = await createMerchant(stack);
    const theirs = await serverStreamAll<ExportProductsResponse>(
      clients.products,
      'ExportProducts',
      create(ExportProductsRequestSchema, {}),
      bearer(other.token),
    );
    assert.deepEqual(theirs, []);
    // The same sku is another product for another merchant.
    const [created] = await bidiAll<UpsertProductsResponse>(
      clients.products,
      'UpsertProducts',
      [upsertRequest('MINE-1', { title: 'Theirs' })],
      bearer(other.token),
    );
    assert.equal(created!.result!.outcome, ProductResult_Outcome.CREATED);
    const ours = await productsThroughRest();
    assert.equal(ours[0]!.title, 'Product MINE-1');

    const missing = await rejectsWith(
      serverStreamAll(clients.products, 'ExportProducts', create(ExportProductsRequestSchema, {}), bearer(undefined)),
      grpc.status.UNAUTHENTICATED,
    );
    assert.equal(problemOf(missing).reason, 'unauthenticated');
    await rejectsWith(
      serverStreamAll(clients.products, 'ExportProducts', create(ExportProductsRequestSchema, {}), bearer('not.a.jwt')),
      grpc.status.UNAUTHENTICATED,
    );
    const readOnly = await issueToken(stack, merchant.apiKey, 'products:read');
    const denied = await rejectsWith(bidiAll(clients.products, 'UpsertProducts', [upsertRequest('RO-1')], bearer(readOnly)), grpc.status.PERMISSION_DENIED);
    assert.equal(problemOf(denied).reason, 'insufficient_scope');
    await rejectsWith(bidiAll(clients.records, 'IngestRecords', [], bearer(readOnly)), grpc.status.PERMISSION_DENIED);
    await rejectsWith(serverStreamAll(clients.events, 'StreamEvents', create(StreamEventsRequestSchema, {}), bearer(readOnly)), grpc.status.PERMISSION_DENIED);
    await rejectsWith(
      unary(clients.products, 'BatchCreateProducts', create(BatchCreateProductsRequestSchema, { products: [productInput('RO-2')] }), bearer(readOnly)),
      grpc.status.PERMISSION_DENIED,
    );
    assert.equal((await productsThroughRest()).length, 1, 'nothing was written without the scope');
  });

  it('answers bad input with a clear status or a failed item, and keeps serving', async () => {
    const empty = await rejectsWith(
      unary(clients.products, 'BatchCreateProducts', create(BatchCreateProductsRequestSchema, {}), bearer(merchant.token)),
      grpc.status.INVALID_ARGUMENT,
    );
    assert.deepEqual(problemOf(empty), { reason: 'validation_failed', fields: ['products'], retryDelayMs: undefined });

    const items = await unary<BatchCreateProductsResponse>(
      clients.products,
      'BatchCreateProducts',
      create(BatchCreateProductsRequestSchema, {
        products: [
          { title: 'No sku', price: '1.00', currency: 'EUR' },
          productInput('ENUM-1', { status: 9 as ProductStatus }),
          productInput('MONEY-1', { price: '1.234' }),
        ],
      }),
      bearer(merchant.token),
    );
    assert.deepEqual(
      items.results.map((result) => [result.outcome, result.problem?.code, result.problem?.violations.map((violation) => violation.field)]),
      [
        [ProductResult_Outcome.FAILED, 'validation_failed', ['sku']],
        [ProductResult_Outcome.FAILED, 'validation_failed', ['status']],
        [ProductResult_Outcome.FAILED, 'validation_failed', ['price']],
      ],
    );

    await rejectsWith(
      unary(
        clients.products,
        'BatchCreateProducts',
        create(BatchCreateProductsRequestSchema, { products: [productInput('HUGE-1', { description: 'x'.repeat(5 * 1024 * 1024) })] }),
        bearer(merchant.token),
      ),
      grpc.status.RESOURCE_EXHAUSTED,
    );
    for (const pageSize of [1_001, 4_294_967_295]) {
      const tooLarge = await rejectsWith(
        serverStreamAll(clients.products, 'ExportProducts', create(ExportProductsRequestSchema, { pageSize }), bearer(merchant.token)),
        grpc.status.INVALID_ARGUMENT,
      );
      assert.deepEqual(problemOf(tooLarge), { reason: 'validation_failed', fields: ['page_size'], retryDelayMs: undefined });
    }
    const badTopic = await rejectsWith(
      serverStreamAll(clients.events, 'StreamEvents', create(StreamEventsRequestSchema, { topics: ['nonsense'] }), bearer(merchant.token)),
      grpc.status.INVALID_ARGUMENT,
    );
    assert.deepEqual(problemOf(badTopic).fields, ['topics[0]']);

    // Bytes that are no protobuf message at all.
    const raw = new grpc.Client(stack.grpcAddress, grpc.credentials.createInsecure());
    const garbage = await new Promise<grpc.ServiceError | null>((resolve) =>
      raw.makeUnaryRequest(
        '/merx.v1.ProductService/BatchCreateProducts',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
        bearer(merchant.token),
        (error) => resolve(error),
      ),
    );
    assert.equal(garbage?.code, grpc.status.INVALID_ARGUMENT, `garbage answered ${garbage?.code}: ${garbage?.details}`);
    assert.equal(problemOf(garbage!).reason, 'malformed_request');
    // A field of the wrong wire type (sku, a string, sent as a number) in a stream.
    const wrongType = await new Promise<grpc.ServiceError | undefined>((resolve) => {
      const stream = raw.makeBidiStreamRequest(
        '/merx.v1.ProductService/UpsertProducts',
        (b: Buffer) => b,
        (b: Buffer) => b,
        bearer(merchant.token),
      );
      stream.on('data', () => undefined);
      stream.on('error', resolve);
      stream.on('end', () => resolve(undefined));
      // UpsertProductsRequest.product (field 1, length 2) holding ProductInput.sku (field 1) as a varint.
      stream.write(Buffer.from([0x0a, 0x02, 0x08, 0x07]));
      stream.end();
    });
    raw.close();
    assert.equal(wrongType?.code, grpc.status.INVALID_ARGUMENT, `a wrong wire type answered ${wrongType?.code}: ${wrongType?.details}`);

    const [still] = await bidiAll<UpsertProductsResponse>(clients.products, 'UpsertProducts', [upsertRequest('AFTER-1')], bearer(merchant.token));
    assert.equal(still!.result!.outcome, ProductResult_Outcome.CREATED, 'the services still serve');
  });
});
