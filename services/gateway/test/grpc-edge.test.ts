import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import {
  BatchCreateProductsRequestSchema,
  BatchCreateProductsResponseSchema,
  ErrorInfoSchema,
  MAX_BULK_PAGE_ITEMS,
  ProductResultSchema,
  ProductService,
  RetryInfoSchema,
  UpsertProductsRequestSchema,
  UpsertProductsResponseSchema,
  type BatchCreateProductsRequest,
  type BatchCreateProductsResponse,
  type UpsertProductsRequest,
  type UpsertProductsResponse,
} from '@merx/contracts/grpc';
import {
  createLogger,
  createTokenVerifier,
  decodeGrpcStatusDetails,
  grpc,
  grpcServiceDefinitionOf,
  newId,
  startGrpcServer,
  type RunningGrpcServer,
} from '@merx/kit';
import { throttleSettingsFromEnv } from '../src/throttle/config.js';
import { createThrottle, type Throttle } from '../src/throttle/limiter.js';
import { purgeThrottleState } from '../src/throttle/redis-store.js';
import { startGrpcEdge, type RunningGrpcEdge } from '../src/grpc/edge.js';
import { testTokens } from './test-tokens.js';

const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The edge in front of a stand-in catalog that answers every upserted item at once and records
 * the metadata it was called with: what the edge adds, paces and refuses is all that is tested.
 */
describe('gRPC edge (component, real Redis)', function () {
  this.timeout(30_000);
  const prefix = `merx:test:${randomBytes(6).toString('hex')}:`;
  const logger = createLogger('grpc-edge-test', 'silent');
  let upstream: RunningGrpcServer;
  let seenMetadata: grpc.Metadata[] = [];
  let batchesSeen = 0;
  let sign: (claims: Record<string, unknown>) => Promise<string>;
  let verifier: ReturnType<typeof createTokenVerifier>;
  const running: Array<{ edge: RunningGrpcEdge; throttle: Throttle; client: grpc.Client & Record<string, any> }> = [];

  const startEdge = async (env: Record<string, string>) => {
    const throttle = await createThrottle({ settings: { ...throttleSettingsFromEnv({ REDIS_URL, ...env }), keyPrefix: prefix }, logger });
    const address = upstream.address;
    const edge = await startGrpcEdge({ logger, verifier, throttle, upstreams: { catalog: address, merchants: address, webhooks: address }, port: 0 });
    const Client = grpc.makeGenericClientConstructor(grpcServiceDefinitionOf(ProductService), 'ProductService');
    const client = new Client(edge.address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
    running.push({ edge, throttle, client });
    return client;
  };
  const tokenFor = (scope = 'products:write', plan = 'sandbox') => sign({ merchant_id: newId('mch'), client_id: 'mx_test_AAAAAAAAAAAAAAAA', scope, plan });
  const metadataWith = (token: string) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    return metadata;
  };
  /** One BatchCreateProducts call of `count` products; `deadlineMs` from now, if given. */
  const batchCreate = (client: Record<string, any>, metadata: grpc.Metadata, count: number, deadlineMs?: number) =>
    new Promise<{ response?: BatchCreateProductsResponse; error?: grpc.ServiceError; elapsedMs: number }>((resolve) => {
      const started = Date.now();
      const products = Array.from({ length: count }, (_, index) => ({ sku: `SKU-${index}` }));
      const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
      client.BatchCreateProducts(
        create(BatchCreateProductsRequestSchema, { products }),
        metadata,
        options,
        (error: grpc.ServiceError | null, response: BatchCreateProductsResponse) =>
          resolve({ ...(error ? { error } : { response }), elapsedMs: Date.now() - started }),
      );
    });
  /** `count` products in one stream: one per message, or in pages of `pageSize`. */
  const upsertAll = (client: Record<string, any>, metadata: grpc.Metadata, count: number, pageSize = 0) =>
    new Promise<{ answers: UpsertProductsResponse[]; error?: grpc.ServiceError }>((resolve) => {
      const call: grpc.ClientDuplexStream<UpsertProductsRequest, UpsertProductsResponse> = client.UpsertProducts(metadata);
      const answers: UpsertProductsResponse[] = [];
      call.on('data', (answer: UpsertProductsResponse) => answers.push(answer));
      call.on('error', (error: grpc.ServiceError) => resolve({ answers, error }));
      call.on('end', () => resolve({ answers }));
      if (pageSize === 0) for (let index = 0; index < count; index++) call.write(create(UpsertProductsRequestSchema, { product: { sku: `SKU-${index}` } }));
      else
        for (let first = 0; first < count; first += pageSize) {
          const products = Array.from({ length: Math.min(pageSize, count - first) }, (_, offset) => ({ sku: `SKU-${first + offset}` }));
          call.write(create(UpsertProductsRequestSchema, { products }));
        }
      call.end();
    });

  before(async () => {
    ({ sign, verifier } = await testTokens());
    const upsertProducts = (call: grpc.ServerDuplexStream<UpsertProductsRequest, UpsertProductsResponse>) => {
      seenMetadata.push(call.metadata);
      let index = 0;
      call.on('data', (request: UpsertProductsRequest) =>
        call.write(create(UpsertProductsResponseSchema, { result: create(ProductResultSchema, { index: index++, sku: request.product?.sku ?? '' }) })),
      );
      call.on('end', () => call.end());
    };
    const batchCreateProducts = (
      call: grpc.ServerUnaryCall<BatchCreateProductsRequest, BatchCreateProductsResponse>,
      callback: grpc.sendUnaryData<BatchCreateProductsResponse>,
    ) => {
      batchesSeen += 1;
      const results = call.request.products.map((product, index) => create(ProductResultSchema, { index, sku: product.sku }));
      callback(null, create(BatchCreateProductsResponseSchema, { results }));
    };
    upstream = await startGrpcServer({
      port: 0,
      services: [
        {
          definition: grpcServiceDefinitionOf(ProductService),
          implementation: { UpsertProducts: upsertProducts, BatchCreateProducts: batchCreateProducts } as grpc.UntypedServiceImplementation,
        },
      ],
    });
  });
  beforeEach(() => {
    seenMetadata = [];
    batchesSeen = 0;
  });
  after(async () => {
    for (const { edge, throttle, client } of running) {
      client.close();
      await edge.stop();
      await throttle.stop();
    }
    await upstream.stop();
    await purgeThrottleState(REDIS_URL, prefix);
  });

  it('forwards a stream as it is, with the token and a request id of its own', async () => {
    const client = await startEdge({});
    const token = await tokenFor();
    const { answers, error } = await upsertAll(client, metadataWith(token), 300);
    assert.equal(error, undefined);
    assert.deepEqual(
      answers.map((answer) => answer.result!.sku),
      Array.from({ length: 300 }, (_, index) => `SKU-${index}`),
    );
    assert.equal(seenMetadata.length, 1);
    assert.equal(seenMetadata[0]!.get('authorization')[0], `Bearer ${token}`);
    assert.match(String(seenMetadata[0]!.get('x-request-id')[0]), /^req_[0-9a-z]{26}$/);
  });

  it('refuses a missing token and a missing scope at the edge, without calling the service', async () => {
    const client = await startEdge({});
    const unauthenticated = await upsertAll(client, new grpc.Metadata(), 1);
    assert.equal(unauthenticated.error?.code, grpc.status.UNAUTHENTICATED);
    const denied = await upsertAll(client, metadataWith(await tokenFor('products:read')), 1);
    assert.equal(denied.error?.code, grpc.status.PERMISSION_DENIED);
    const reasons = decodeGrpcStatusDetails(denied.error!.metadata)!
      .details.map((detail) => anyUnpack(detail, ErrorInfoSchema)?.reason)
      .filter(Boolean);
    assert.deepEqual(reasons, ['insufficient_scope']);
    assert.equal(seenMetadata.length, 0);
  });

  it('paces items to the bulk class instead of refusing them while the wait is short', async () => {
    // 200 items/s: 600 items take about two seconds beyond the first second's worth.
    const client = await startEdge({ MERX_THROTTLE_BULK: '{"sandbox":200}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '5000' });
    const started = Date.now();
    const { answers, error } = await upsertAll(client, metadataWith(await tokenFor()), 600);
    const elapsed = Date.now() - started;
    assert.equal(error, undefined, error?.details);
    assert.equal(answers.length, 600);
    assert.ok(elapsed >= 1_500, `600 items at 200/s went through in ${elapsed} ms`);
  });

  it('counts a page as the items it carries, not as one message', async () => {
    // The same 600 items at 200/s as above, in three messages: paced alike.
    const client = await startEdge({ MERX_THROTTLE_BULK: '{"sandbox":200}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '5000' });
    const started = Date.now();
    const { answers, error } = await upsertAll(client, metadataWith(await tokenFor()), 600, 200);
    const elapsed = Date.now() - started;
    assert.equal(error, undefined, error?.details);
    assert.equal(answers.length, 3, 'one answer per message');
    assert.ok(elapsed >= 1_500, `600 items in pages of 200 at 200/s went through in ${elapsed} ms`);
  });

  it('lets a page longer than any service takes through to be refused as bad input, not paced as its items', async () => {
    // At 20 items/s a page of 1,001 would wait 50 s for the bulk class; the stand-in answers it at once.
    const client = await startEdge({ MERX_THROTTLE_BULK: '{"sandbox":20}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '50' });
    const { answers, error } = await upsertAll(client, metadataWith(await tokenFor()), MAX_BULK_PAGE_ITEMS + 1, MAX_BULK_PAGE_ITEMS + 1);
    assert.equal(error, undefined, `got ${error?.code}: ${error?.details}`);
    assert.equal(answers.length, 1, 'the page reached the service');
  });

  it('refuses with RESOURCE_EXHAUSTED and RetryInfo once the wait would be too long', async () => {
    // A lot comes every 100 ms at 20 items/s: longer than the 50 ms a stream may wait.
    const client = await startEdge({ MERX_THROTTLE_BULK: '{"sandbox":20}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '50' });
    const { answers, error } = await upsertAll(client, metadataWith(await tokenFor()), 200);
    assert.equal(error?.code, grpc.status.RESOURCE_EXHAUSTED, `got ${error?.code}: ${error?.details}`);
    assert.ok(answers.length < 200);
    const details = decodeGrpcStatusDetails(error!.metadata)!.details;
    assert.equal(details.map((detail) => anyUnpack(detail, ErrorInfoSchema)?.reason).find(Boolean), 'rate_limited');
    assert.ok(
      details.some((detail) => anyUnpack(detail, RetryInfoSchema)?.retryDelay),
      'RetryInfo says when to come back',
    );
  });
  describe('BatchCreateProducts: charged to the bulk class per item', () => {
    // Writes and burst roomy enough that only the bulk class can hold a batch back.
    const roomy = '{"sandbox":{"burst":{"capacity":1000,"refill_per_second":1000},"writes":{"capacity":1000,"refill_per_second":1000}}}';

    it('lets a batch within the budget through at once, and makes the next one wait for its items', async () => {
      // 200 items/s, a second's worth in the bucket: 200 items go at once, the next 200 about a second later.
      const client = await startEdge({ MERX_THROTTLE_PLANS: roomy, MERX_THROTTLE_BULK: '{"sandbox":200}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '5000' });
      const metadata = metadataWith(await tokenFor());
      const first = await batchCreate(client, metadata, 200);
      assert.equal(first.error, undefined, first.error?.details);
      assert.equal(first.response!.results.length, 200);
      assert.ok(first.elapsedMs < 700, `the first batch waited ${first.elapsedMs} ms`);
      const second = await batchCreate(client, metadata, 200);
      assert.equal(second.error, undefined, second.error?.details);
      assert.ok(second.elapsedMs >= 700, `the second 200 items went through after ${second.elapsedMs} ms, not paced at 200/s`);
      assert.equal(batchesSeen, 2);
    });

    it('charges a small batch its items, not a whole lot: 150 batches of one item fit in 200 items/s', async () => {
      const client = await startEdge({ MERX_THROTTLE_PLANS: roomy, MERX_THROTTLE_BULK: '{"sandbox":200}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '50' });
      const metadata = metadataWith(await tokenFor());
      for (let index = 0; index < 150; index++) {
        const { error } = await batchCreate(client, metadata, 1);
        assert.equal(error, undefined, `batch ${index}: ${error?.code} ${error?.details}`);
      }
    });

    it('refuses a batch the class cannot admit within the longest wait: RESOURCE_EXHAUSTED, RetryInfo, nothing forwarded', async () => {
      // 20 items/s: a batch of 500 would wait about 24 s; the longest wait is 200 ms.
      const client = await startEdge({ MERX_THROTTLE_PLANS: roomy, MERX_THROTTLE_BULK: '{"sandbox":20}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '200' });
      const { error, elapsedMs } = await batchCreate(client, metadataWith(await tokenFor()), 500);
      assert.equal(error?.code, grpc.status.RESOURCE_EXHAUSTED, `got ${error?.code}: ${error?.details}`);
      assert.ok(elapsedMs < 2_000, `refused after ${elapsedMs} ms`);
      const details = decodeGrpcStatusDetails(error!.metadata)!.details;
      assert.equal(details.map((detail) => anyUnpack(detail, ErrorInfoSchema)?.reason).find(Boolean), 'rate_limited');
      const delay = details.map((detail) => anyUnpack(detail, RetryInfoSchema)?.retryDelay).find(Boolean);
      assert.ok(delay && Number(delay.seconds) >= 20, `RetryInfo says when all 500 items could go, not the next lot: ${delay?.seconds}s`);
      assert.equal(batchesSeen, 0, 'the service never saw the batch');
    });

    it("waits no longer than the call's deadline allows: RESOURCE_EXHAUSTED rather than DEADLINE_EXCEEDED", async () => {
      const client = await startEdge({ MERX_THROTTLE_PLANS: roomy, MERX_THROTTLE_BULK: '{"sandbox":200}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '10000' });
      const metadata = metadataWith(await tokenFor());
      assert.equal((await batchCreate(client, metadata, 200)).error, undefined);
      // The next 200 need about a second; the call has 600 ms.
      const { error, elapsedMs } = await batchCreate(client, metadata, 200, 600);
      assert.equal(error?.code, grpc.status.RESOURCE_EXHAUSTED, `got ${error?.code}: ${error?.details}`);
      assert.ok(elapsedMs < 600, `answered after ${elapsedMs} ms`);
    });

    it("leaves another merchant's batches alone", async () => {
      const client = await startEdge({ MERX_THROTTLE_PLANS: roomy, MERX_THROTTLE_BULK: '{"sandbox":200}', MERX_THROTTLE_BULK_MAX_WAIT_MS: '5000' });
      const busy = metadataWith(await tokenFor());
      assert.equal((await batchCreate(client, busy, 200)).error, undefined);
      const other = await batchCreate(client, metadataWith(await tokenFor()), 200);
      assert.equal(other.error, undefined);
      assert.ok(other.elapsedMs < 700, `another merchant waited ${other.elapsedMs} ms`);
    });
  });
});
