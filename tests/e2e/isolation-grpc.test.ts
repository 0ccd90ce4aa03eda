import assert from 'node:assert/strict';
import { create, type DescMethod } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  BatchCreateProductsRequestSchema,
  ExportProductsRequestSchema,
  grpcMethodScopes,
  grpcPathOf,
  grpcServices,
  IngestRecordsRequestSchema,
  IngestRecordsResponse_Status,
  ProductResult_Outcome,
  RecordType,
  StreamEventsRequestSchema,
  UpsertProductsRequestSchema,
  type BatchCreateProductsResponse,
  type ExportProductsResponse,
  type IngestRecordsResponse,
  type StreamEventsResponse,
  type UpsertProductsResponse,
} from '@merx/contracts/grpc';
import { scopeNames } from '@merx/contracts';
import { grpc } from '@merx/kit';
import {
  bearer,
  bidiAll,
  call,
  createMerchant,
  grpcClients,
  issueToken,
  serverStreamAll,
  sharedStack,
  unary,
  type Stack,
  type TestMerchant,
} from '../src/harness/index.js';

/**
 * Tenant isolation for every method of the gRPC contract, as isolation.test.ts proves it for every
 * REST operation: the suite walks the generated services, so a method added later fails here until
 * it has a fixture saying how merchant B could reach merchant A's data through it.
 */
interface Context {
  stack: Stack;
  clients: ReturnType<typeof grpcClients>;
  a: TestMerchant;
  b: TestMerchant;
  /** A's product (sku and id) and source, made before the fixtures run. */
  product: { id: string; sku: string };
  sourceId: string;
  startTime: Date;
}

type IsolationFixture = (context: Context) => Promise<string>;

/** What a call showed, as text to search for A's ids (timestamps carry bigint seconds). */
const shownText = (value: unknown) => JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));

const fixtures: Record<string, IsolationFixture> = {
  async '/merx.v1.ProductService/BatchCreateProducts'({ clients, b, product }) {
    const answer = await unary<BatchCreateProductsResponse>(
      clients.products,
      'BatchCreateProducts',
      create(BatchCreateProductsRequestSchema, { products: [{ sku: product.sku, title: 'B', price: '1.00', currency: 'EUR' }] }),
      bearer(b.token),
    );
    assert.equal(answer.results[0]!.outcome, ProductResult_Outcome.CREATED, "A's sku is free for B");
    return shownText(answer);
  },
  async '/merx.v1.ProductService/UpsertProducts'({ clients, b, product }) {
    const answers = await bidiAll<UpsertProductsResponse>(
      clients.products,
      'UpsertProducts',
      [create(UpsertProductsRequestSchema, { product: { sku: product.sku, title: 'B again', price: '2.00', currency: 'EUR' } })],
      bearer(b.token),
    );
    assert.notEqual(answers[0]!.result!.product!.id, product.id);
    return shownText(answers);
  },
  async '/merx.v1.ProductService/ExportProducts'({ clients, b }) {
    return shownText(
      await serverStreamAll<ExportProductsResponse>(clients.products, 'ExportProducts', create(ExportProductsRequestSchema, {}), bearer(b.token)),
    );
  },
  async '/merx.v1.RecordService/IngestRecords'({ clients, b, sourceId }) {
    const record = { type: RecordType.ORDER, externalId: 'iso-1', occurTime: timestampFromDate(new Date()), data: { total: 1 } };
    const [theirs, unknown] = await bidiAll<IngestRecordsResponse>(
      clients.records,
      'IngestRecords',
      [create(IngestRecordsRequestSchema, { sourceId, record }), create(IngestRecordsRequestSchema, { sourceId: 'src_00000000000000000000000000', record })],
      bearer(b.token),
    );
    assert.equal(theirs!.status, IngestRecordsResponse_Status.REJECTED);
    assert.equal(theirs!.problem!.code, 'not_found');
    assert.equal(
      theirs!.problem!.detail.replace(sourceId, '<id>'),
      unknown!.problem!.detail.replace('src_00000000000000000000000000', '<id>'),
      "A's source is answered exactly as an unknown one",
    );
    // The id B sent comes back in the detail, as in REST's 404; nothing else of A's does.
    return shownText(theirs).split(sourceId).join('<id>');
  },
  async '/merx.v1.EventService/StreamEvents'({ clients, b, startTime }) {
    // Everything B's stream shows from before A's changes until well after they settled.
    const seen = await new Promise<StreamEventsResponse[]>((resolve, reject) => {
      const stream: grpc.ClientReadableStream<StreamEventsResponse> = clients.events.StreamEvents(
        create(StreamEventsRequestSchema, { cursor: { case: 'startTime', value: timestampFromDate(startTime) } }),
        bearer(b.token),
      );
      const events: StreamEventsResponse[] = [];
      stream.on('data', (event: StreamEventsResponse) => events.push(event));
      stream.on('error', (error: grpc.ServiceError) => (error.code === grpc.status.CANCELLED ? resolve(events) : reject(error)));
      setTimeout(() => stream.cancel(), 2_500);
    });
    return shownText(seen);
  },
};

/** Calls a method as bytes, so the edge's checks are tested before any message is read. */
function invokeEmpty(stack: Stack, method: DescMethod, metadata: grpc.Metadata): Promise<grpc.ServiceError | undefined> {
  const client = new grpc.Client(stack.grpcAddress, grpc.credentials.createInsecure());
  const identity = (bytes: Buffer) => bytes;
  const path = grpcPathOf(method);
  return new Promise<grpc.ServiceError | undefined>((resolve) => {
    const settle = (error: grpc.ServiceError | null | undefined) => resolve(error ?? undefined);
    if (method.methodKind === 'unary') client.makeUnaryRequest(path, identity, identity, Buffer.alloc(0), metadata, settle);
    else if (method.methodKind === 'server_streaming') {
      const stream = client.makeServerStreamRequest(path, identity, identity, Buffer.alloc(0), metadata);
      stream.on('data', () => stream.cancel());
      stream.on('error', settle);
      stream.on('end', () => settle(undefined));
    } else {
      const stream = client.makeBidiStreamRequest(path, identity, identity, metadata);
      stream.on('data', () => undefined);
      stream.on('error', settle);
      stream.on('end', () => settle(undefined));
      stream.end();
    }
  }).finally(() => client.close());
}

describe('tenant isolation, for every method of the gRPC contract', function () {
  this.timeout(120_000);
  const methods = Object.values(grpcServices).flatMap((service) => service.methods);
  let context: Context;

  before(async function () {
    this.timeout(120_000);
    const stack = await sharedStack();
    const startTime = new Date();
    const [a, b] = await Promise.all([createMerchant(stack), createMerchant(stack)]);
    const clients = grpcClients(stack);
    const created = await unary<BatchCreateProductsResponse>(
      clients.products,
      'BatchCreateProducts',
      create(BatchCreateProductsRequestSchema, { products: [{ sku: 'A-ONLY', title: 'A', price: '1.00', currency: 'EUR' }] }),
      bearer(a.token),
    );
    const source = await call(stack, 'POST', '/api/v1/sources', { token: a.token, body: { name: 'A shop', kind: 'storefront' } });
    assert.equal(source.status, 201, source.text);
    context = { stack, clients, a, b, product: { id: created.results[0]!.product!.id, sku: 'A-ONLY' }, sourceId: source.body.id, startTime };
  });
  after(() => context?.clients.close());

  it('has a fixture for every method', () => {
    const missing = methods.map(grpcPathOf).filter((path) => !fixtures[path]);
    assert.deepEqual(missing, [], 'add an isolation fixture to tests/e2e/isolation-grpc.test.ts for each method listed');
  });

  for (const method of methods) {
    const path = grpcPathOf(method);
    describe(path, () => {
      it('answers UNAUTHENTICATED without a token', async () => {
        assert.equal((await invokeEmpty(context.stack, method, new grpc.Metadata()))?.code, grpc.status.UNAUTHENTICATED);
      });

      it('answers PERMISSION_DENIED to a token of the same merchant without its scope', async () => {
        const scope = grpcMethodScopes[path]!;
        const key = await call(context.stack, 'POST', '/api/v1/api-keys', {
          token: context.a.token,
          body: { name: `All but ${scope}`, scopes: scopeNames.filter((s) => s !== scope) },
        });
        assert.equal(key.status, 201, key.text);
        const token = await issueToken(context.stack, key.body.secret);
        assert.equal((await invokeEmpty(context.stack, method, bearer(token)))?.code, grpc.status.PERMISSION_DENIED);
      });

      it("never shows merchant B anything of merchant A's", async () => {
        const fixture = fixtures[path];
        assert.ok(fixture, `${path} has no isolation fixture`);
        const shown = await fixture(context);
        for (const id of [context.a.merchantId, context.product.id, context.sourceId])
          assert.ok(!shown.includes(id), `${path} showed B ${id}, which is A's:\n${shown.slice(0, 500)}`);
        const ours = await call(context.stack, 'GET', `/api/v1/products/${context.product.id}`, { token: context.a.token });
        assert.equal(ours.body.title, 'A', "A's product is untouched");
      });
    });
  }
});
