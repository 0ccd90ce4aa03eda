import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { request } from 'undici';
import {
  adminListenerSettings,
  ConfigError,
  ensureAdminPortFree,
  loadConfig,
  startAdminServer,
  z,
  type ReadinessCheck,
  type RunningServer,
} from '../src/index.js';
import { silentLogger } from './support.js';

interface Answer {
  status: number;
  contentType: string;
  text: string;
  json: Record<string, unknown>;
}

async function get(url: string, method = 'GET'): Promise<Answer> {
  const response = await request(url, { method: method as 'GET' });
  const text = await response.body.text();
  const contentType = String(response.headers['content-type'] ?? '');
  return { status: response.statusCode, contentType, text, json: contentType.includes('json') ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

describe('admin listener', () => {
  let admin: RunningServer;
  let databaseFails = false;
  let brokerAway = false;
  const catalogChecks: ReadinessCheck[] = [
    { name: 'database', check: () => (databaseFails ? Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:5432')) : undefined) },
    { name: 'bus', check: () => (brokerAway ? 'broker not connected: events wait in the outbox' : undefined) },
  ];
  const gatewayChecks: ReadinessCheck[] = [{ name: 'catalog', check: () => undefined }];

  before(async () => {
    admin = await startAdminServer({
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger,
      sources: [
        { service: 'gateway', readiness: gatewayChecks },
        { service: 'catalog', readiness: catalogChecks },
      ],
    });
  });
  after(() => admin.close());
  afterEach(() => {
    databaseFails = false;
    brokerAway = false;
  });

  it('serves liveness', async () => {
    const health = await get(`${admin.url}/healthz`);
    assert.deepEqual([health.status, health.json], [200, { status: 'ok' }]);
  });

  it('names every check by service, with no degradation while all is well', async () => {
    const ready = await get(`${admin.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.json, {
      status: 'ready',
      checks: { 'gateway.catalog': 'ok', 'catalog.database': 'ok', 'catalog.bus': 'ok' },
      details: {},
      degraded: [],
    });
  });

  it('lists a degraded dependency with its detail and stays ready', async () => {
    brokerAway = true;
    const ready = await get(`${admin.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(ready.json.status, 'ready');
    assert.deepEqual(ready.json.degraded, ['catalog.bus']);
    assert.deepEqual(ready.json.details, { 'catalog.bus': 'broker not connected: events wait in the outbox' });
  });

  it('answers 503 with the failing check and its error when a process cannot serve', async () => {
    databaseFails = true;
    const notReady = await get(`${admin.url}/readyz`);
    assert.equal(notReady.status, 503);
    assert.equal(notReady.json.status, 'not_ready');
    assert.equal((notReady.json.checks as Record<string, string>)['catalog.database'], 'failed');
    assert.equal((notReady.json.details as Record<string, string>)['catalog.database'], 'connect ECONNREFUSED 10.0.0.7:5432');
  });

  it('serves the Prometheus metrics with the readiness states of the scrape itself', async () => {
    brokerAway = true;
    const metrics = await get(`${admin.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.contentType, /^text\/plain/);
    assert.match(metrics.text, /merx_readiness_check\{service="catalog",check="bus"\} 0\.5/);
    assert.match(metrics.text, /merx_readiness_check\{service="gateway",check="catalog"\} 1/);
  });

  it('answers anything else with problem+json', async () => {
    const unknown = await get(`${admin.url}/api/v1/products`);
    assert.equal(unknown.status, 404);
    assert.match(unknown.contentType, /^application\/problem\+json/);
    assert.equal(unknown.json.code, 'not_found');
    const post = await get(`${admin.url}/metrics`, 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.json.code, 'method_not_allowed');
  });
});

describe('admin listener settings', () => {
  const schema = z.object(adminListenerSettings(9002, '0.0.0.0'));

  it('defaults to the service own admin port on every interface', () => {
    assert.deepEqual(loadConfig('catalog', schema, {}), { ADMIN_PORT: 9002, ADMIN_HOST: '0.0.0.0' });
  });

  it('refuses a port that is not one before anything opens', () => {
    assert.throws(
      () => loadConfig('catalog', schema, { ADMIN_PORT: 'metrics' }),
      (error: unknown) => error instanceof ConfigError && /ADMIN_PORT must be a port number/.test(error.message),
    );
    assert.throws(() => loadConfig('catalog', schema, { ADMIN_PORT: '70000' }), ConfigError);
  });

  it('names ADMIN_PORT when the admin port is taken', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    try {
      await assert.rejects(
        ensureAdminPortFree({ ADMIN_PORT: port, ADMIN_HOST: '127.0.0.1' }),
        /port \d+ on 127\.0\.0\.1 is in use by another process; stop it or choose another ADMIN_PORT/,
      );
    } finally {
      holder.close();
    }
  });
});
