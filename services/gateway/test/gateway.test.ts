import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { createLogger, newId, startAdminServer, type RunningServer } from '@merx/kit';
import { startGateway, type RunningGateway } from '../src/index.js';
import { testTokens } from './test-tokens.js';

/** A port nothing listens on: connections to it are refused, like a crashed service's. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe('gateway (component, upstreams down)', () => {
  let gateway: RunningGateway;
  let admin: RunningServer;
  let sign: (claims: Record<string, unknown>) => Promise<string>;

  before(async () => {
    const tokens = await testTokens();
    sign = tokens.sign;
    const verifier = tokens.verifier;
    const down = `http://127.0.0.1:${await closedPort()}`;
    gateway = await startGateway({
      logger: createLogger('gateway-test', 'silent'),
      verifier,
      publicUrl: 'http://localhost:8080',
      upstreams: { oauth: down, catalog: down, audit: down, webhooks: down, merchants: down },
      serviceToken: 'gateway-test-service-token',
      port: 0,
    });
    admin = await startAdminServer({
      port: 0,
      host: '127.0.0.1',
      logger: createLogger('gateway-test', 'silent'),
      sources: [{ service: 'gateway', readiness: gateway.readiness }],
    });
  });
  after(async () => {
    await admin.close();
    await gateway.stop();
  });

  const token = () => sign({ merchant_id: newId('mch'), client_id: 'mx_test_AAAAAAAAAAAAAAAA', scope: 'products:read' });

  it('answers 503 unavailable as problem+json when a service cannot be reached', async () => {
    const response = await fetch(`${gateway.url}/api/v1/products`, { headers: { authorization: `Bearer ${await token()}` } });
    assert.equal(response.status, 503);
    assert.match(response.headers.get('content-type') ?? '', /application\/problem\+json/);
    const body = (await response.json()) as Record<string, string>;
    assert.equal(body.code, 'unavailable');
    assert.equal(body.request_id, response.headers.get('x-request-id'));
    assert.ok(!JSON.stringify(body).includes('ECONNREFUSED'), 'no internals leak');
  });

  it('checks the token at the edge: 401 without reaching the service', async () => {
    const response = await fetch(`${gateway.url}/api/v1/products`, { headers: { authorization: 'Bearer x.y.z' } });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /invalid_token/);
  });

  it('refuses a body declared over 1 MiB with 413 before proxying it', async () => {
    const response = await fetch(`${gateway.url}/api/v1/products`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ description: 'x'.repeat(1_100_000) }),
    });
    assert.equal(response.status, 413);
    assert.equal(((await response.json()) as { code: string }).code, 'payload_too_large');
  });

  it('stays ready with every upstream down, saying only that on the public port', async () => {
    const ready = await fetch(`${gateway.url}/readyz`);
    assert.equal(ready.status, 200, 'one failing service must not take the whole API out of the load balancer');
    const text = await ready.text();
    assert.deepEqual(JSON.parse(text), { status: 'ready' });
    assert.doesNotMatch(text, /unreachable|ECONNREFUSED|127\.0\.0\.1/, 'no upstream address or error leaves through the public port');
    assert.equal((await fetch(`${gateway.url}/healthz`)).status, 200);
    const metrics = await fetch(`${gateway.url}/metrics`);
    assert.equal(metrics.status, 404);
    assert.match(metrics.headers.get('content-type') ?? '', /application\/problem\+json/);
    assert.equal(((await metrics.json()) as { code: string }).code, 'not_found');
  });

  it('reports each upstream as degraded on the admin port, in /readyz and /metrics', async () => {
    const ready = await fetch(`${admin.url}/readyz`);
    assert.equal(ready.status, 200);
    const body = (await ready.json()) as { status: string; checks: Record<string, string>; details: Record<string, string>; degraded: string[] };
    assert.equal(body.status, 'ready');
    const upstreams = ['oauth', 'catalog', 'audit', 'webhooks', 'merchants'];
    for (const upstream of upstreams) assert.equal(body.checks[`gateway.${upstream}`], 'degraded', upstream);
    assert.deepEqual(body.degraded, upstreams.map((upstream) => `gateway.${upstream}`).sort());
    assert.match(body.details['gateway.catalog'] ?? '', /catalog is unreachable.*its routes answer 503/);
    const metrics = await (await fetch(`${admin.url}/metrics`)).text();
    assert.match(metrics, /merx_readiness_check\{service="gateway",check="catalog"\} 0\.5/);
  });

  it('serves its OpenAPI document with this deployment as the server', async () => {
    const document = (await (await fetch(`${gateway.url}/api/v1/openapi.json`)).json()) as { servers: Array<{ url: string }> };
    assert.equal(document.servers[0]!.url, 'http://localhost:8080');
  });
});
