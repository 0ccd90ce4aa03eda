import assert from 'node:assert/strict';
import { create } from '@bufbuild/protobuf';
import { BatchCreateProductsRequestSchema, ProductResult_Outcome, type BatchCreateProductsResponse } from '@merx/contracts/grpc';
import { GATEWAY_CREDENTIAL_HEADER, grpc } from '@merx/kit';
import { bearer, call, createMerchant, grpcClients, sharedStack, unary, type Stack, type TestMerchant } from '../src/harness/index.js';

/**
 * A service's own ports answer only the gateway (issue 29), in both modes: a valid merchant token
 * sent straight to a service would otherwise skip every throttle class the gateway applies. The
 * gateway vouches for each call with the service credential; a client cannot forge it through
 * the gateway, since the gateway replaces whatever a client sends under that name.
 */
const API_OF: Record<'oauth' | 'catalog' | 'webhooks' | 'merchants', string> = {
  oauth: '/api/v1/api-keys',
  catalog: '/api/v1/products',
  webhooks: '/api/v1/webhooks/subscriptions',
  merchants: '/api/v1/merchant',
};

describe("neighbours: a service's own ports answer the gateway only", () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
    merchant = await createMerchant(stack);
  });

  const direct = (service: keyof typeof API_OF, headers: Record<string, string> = {}) =>
    fetch(`${stack.directUrl(service)}${API_OF[service]}`, { headers: { authorization: `Bearer ${merchant.token}`, ...headers } });

  it('refuses a valid token on every HTTP API without the gateway, and serves the same call through it', async () => {
    for (const service of Object.keys(API_OF) as Array<keyof typeof API_OF>) {
      const refused = await direct(service);
      const problem = (await refused.json()) as { code: string; detail: string };
      assert.equal(refused.status, 401, service);
      assert.equal(problem.code, 'unauthenticated', service);
      assert.match(problem.detail, /serves the gateway only/, service);

      const forged = await direct(service, { [GATEWAY_CREDENTIAL_HEADER]: 'a'.repeat(43) });
      assert.equal(forged.status, 401, `${service}: a credential that is not the service's`);
      await forged.arrayBuffer();

      const vouched = await direct(service, { [GATEWAY_CREDENTIAL_HEADER]: stack.gatewayCredential });
      assert.equal(vouched.status, 200, `${service} with the gateway's credential: ${await vouched.text()}`);
      const throughGateway = await call(stack, 'GET', API_OF[service], { token: merchant.token, headers: { [GATEWAY_CREDENTIAL_HEADER]: 'forged' } });
      assert.equal(throughGateway.status, 200, `${service} through the gateway, whatever the client sent as the credential`);
    }
  });

  it('leaves the health checks on a service port open', async () => {
    const ready = await fetch(`${stack.directUrl('catalog')}/readyz`);
    assert.equal(ready.status, 200);
    await ready.arrayBuffer();
  });

  it('refuses a gRPC call straight to a service with UNAUTHENTICATED, and forwards it from the edge', async () => {
    const batch = (sku: string) => create(BatchCreateProductsRequestSchema, { products: [{ sku, title: 'Direct', price: '1.00', currency: 'EUR' }] });
    const catalog = grpcClients(stack, stack.directGrpcAddress('catalog'));
    const edge = grpcClients(stack);
    try {
      await assert.rejects(
        unary(catalog.products, 'BatchCreateProducts', batch(`DIRECT-${Date.now()}`), bearer(merchant.token)),
        (error: grpc.ServiceError) => error.code === grpc.status.UNAUTHENTICATED && /serves the gateway only/.test(error.details),
      );
      const forged = bearer(merchant.token);
      forged.set(GATEWAY_CREDENTIAL_HEADER, 'forged');
      const viaEdge = await unary<BatchCreateProductsResponse>(edge.products, 'BatchCreateProducts', batch(`EDGE-${Date.now()}`), forged);
      assert.equal(viaEdge.results[0]!.outcome, ProductResult_Outcome.CREATED, 'the edge replaces what a client sends as the credential');
      const vouched = bearer(merchant.token);
      vouched.set(GATEWAY_CREDENTIAL_HEADER, stack.gatewayCredential);
      const direct = await unary<BatchCreateProductsResponse>(catalog.products, 'BatchCreateProducts', batch(`VOUCHED-${Date.now()}`), vouched);
      assert.equal(direct.results[0]!.outcome, ProductResult_Outcome.CREATED);
    } finally {
      catalog.close();
      edge.close();
    }
  });

  it('refuses the other services’ gRPC ports the same way', async () => {
    for (const service of ['merchants', 'webhooks'] as const) {
      const address = stack.directGrpcAddress(service);
      const client = new grpc.Client(address, grpc.credentials.createInsecure());
      try {
        const path = service === 'merchants' ? '/merx.v1.RecordService/IngestRecords' : '/merx.v1.EventService/StreamEvents';
        const status = await new Promise<grpc.StatusObject>((resolve) => {
          const stream =
            service === 'merchants'
              ? client.makeBidiStreamRequest(
                  path,
                  (bytes: Buffer) => bytes,
                  (bytes: Buffer) => bytes,
                  bearer(merchant.token),
                )
              : client.makeServerStreamRequest(
                  path,
                  (bytes: Buffer) => bytes,
                  (bytes: Buffer) => bytes,
                  Buffer.alloc(0),
                  bearer(merchant.token),
                );
          stream.on('error', () => undefined);
          stream.on('data', () => undefined);
          stream.on('status', resolve);
        });
        assert.equal(status.code, grpc.status.UNAUTHENTICATED, `${service}: ${status.details}`);
        assert.match(status.details, /serves the gateway only/);
      } finally {
        client.close();
      }
    }
  });
});
