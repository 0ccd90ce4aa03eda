import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, connect, type Server as TcpServer, type Socket } from 'node:net';
import { createContractValidator } from '@merx/contracts';
import { buildEvent, createLogger, createTokenVerifier, evaluateReadiness, MemoryBus, newId } from '@merx/kit';
import { startGateway, type RunningGateway } from '../src/index.js';
import { mergePlans, throttleSettingsFromEnv, type ThrottleSettings } from '../src/throttle/config.js';
import type { StoredThrottleOverride } from '../src/throttle/limiter.js';
import { purgeThrottleState } from '../src/throttle/redis-store.js';
import { testTokens } from './test-tokens.js';

const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const POLICY = /^"(burst|sustained|writes|sensitive)";q=\d+;w=\d+(, "(burst|sustained|writes|sensitive)";q=\d+;w=\d+)*$/;
const STATE = /^"(burst|sustained|writes|sensitive)";r=\d+;t=\d+(, "(burst|sustained|writes|sensitive)";r=\d+;t=\d+)*$/;
const validator = createContractValidator();

interface Upstream {
  url: string;
  server: Server;
  /** What the oauth service's `/internal/v1/throttle-overrides` answers (the operator's stored overrides). */
  storedOverrides: StoredThrottleOverride[];
}

const SERVICE_TOKEN = 'throttle-test-service-token-0123456789';
/** Answers everything with 200; the token endpoint echoes what reached it; oauth's internal overrides list is the test's. */
async function startUpstream(): Promise<Upstream> {
  const upstream = { storedOverrides: [] } as unknown as Upstream;
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.url?.startsWith('/internal/v1/throttle-overrides')) {
        // As the oauth service does: the overrides only for the service credential.
        if (req.headers.authorization !== `Bearer ${SERVICE_TOKEN}`) {
          res.statusCode = 401;
          return res.end('{}');
        }
        return res.end(JSON.stringify({ overrides: upstream.storedOverrides }));
      }
      res.end(
        JSON.stringify(
          req.url?.startsWith('/oauth/token')
            ? { received: Buffer.concat(chunks).toString('utf8') }
            : { object: 'list', data: [], has_more: false, next_cursor: null },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(upstream, { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server });
}

/** Redis through a link the test can cut and restore on the same port. */
class RedisLink {
  private server: TcpServer | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  async open(): Promise<void> {
    this.server = createTcpServer((client) => {
      const upstream = connect(6379, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }
  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

/** The gateway's checks as its admin listener reports them (the public /readyz says only ready or not). */
const readinessOf = (gateway: RunningGateway) => evaluateReadiness('gateway', gateway.readiness);

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('gateway throttle classes (component, real Redis)', function () {
  this.timeout(20_000);
  const prefix = `merx:test:${randomBytes(6).toString('hex')}:`;
  const logger = createLogger('gateway-throttle-test', 'silent');
  const gateways: RunningGateway[] = [];
  let upstream: Upstream;
  let sign: (claims: Record<string, unknown>) => Promise<string>;
  let verifier: ReturnType<typeof createTokenVerifier>;
  // Tiny budgets that refill only slowly, so counts are exact within a test.
  const settings: ThrottleSettings = {
    ...throttleSettingsFromEnv({ REDIS_URL }),
    keyPrefix: prefix,
    plans: mergePlans({
      standard: {
        burst: { capacity: 6, refill_per_second: 0.01 },
        writes: { capacity: 3, refill_per_second: 0.01 },
        sensitive: { limit: 2, window_seconds: 60 },
      },
    }),
    tokenEndpoint: { limit: 3, window_seconds: 60 },
  };

  const start = async (throttle: ThrottleSettings, bus?: MemoryBus) => {
    const gateway = await startGateway({
      logger,
      verifier,
      publicUrl: 'http://localhost:8080',
      upstreams: { oauth: upstream.url, catalog: upstream.url, audit: upstream.url, webhooks: upstream.url, merchants: upstream.url },
      serviceToken: SERVICE_TOKEN,
      port: 0,
      throttle: { settings: throttle, ...(bus ? { bus } : {}) },
    });
    gateways.push(gateway);
    return gateway;
  };
  const merchantToken = (merchantId = newId('mch'), plan = 'standard') =>
    sign({ merchant_id: merchantId, client_id: 'mx_test_AAAAAAAAAAAAAAAA', scope: 'products:read products:write', plan });
  const get = (gateway: RunningGateway, token: string, path = '/api/v1/products') =>
    fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

  before(async () => {
    upstream = await startUpstream();
    ({ sign, verifier } = await testTokens());
  });
  after(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await new Promise((resolve) => upstream.server.close(resolve));
    await purgeThrottleState(REDIS_URL, prefix);
  });

  it('sends well-formed RateLimit-Policy and RateLimit for the classes that applied', async () => {
    const gateway = await start(settings);
    const token = await merchantToken();
    const read = await get(gateway, token);
    assert.equal(read.status, 200);
    assert.equal(read.headers.get('ratelimit-policy'), '"burst";q=6;w=600, "sustained";q=20000;w=3600');
    assert.match(read.headers.get('ratelimit') ?? '', STATE);
    assert.match(read.headers.get('ratelimit') ?? '', /^"burst";r=5;t=\d+, "sustained";r=19999;t=\d+$/);
    const write = await fetch(`${gateway.url}/api/v1/products`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.match(write.headers.get('ratelimit-policy') ?? '', POLICY);
    assert.match(write.headers.get('ratelimit-policy') ?? '', /"writes";q=3;w=300$/);
  });

  it('refuses with a contract-valid 429 naming the class, Retry-After set; merchant B is unaffected', async () => {
    const gateway = gateways[0]!;
    const a = await merchantToken();
    const b = await merchantToken();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i += 1) statuses.push((await get(gateway, a)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429, 429]);
    const refused = await get(gateway, a);
    const body = (await refused.json()) as Record<string, unknown>;
    assert.equal(body.code, 'rate_limited');
    assert.equal(body.throttle_class, 'burst');
    assert.equal(String(body.retry_after), refused.headers.get('retry-after'));
    assert.match(refused.headers.get('ratelimit') ?? '', /^"burst";r=0;/);
    const problems = validator.validateResponse({
      method: 'GET',
      path: '/api/v1/products',
      status: 429,
      contentType: refused.headers.get('content-type') ?? '',
      body,
      headers: refused.headers,
    });
    assert.deepEqual(problems, []);
    assert.equal((await get(gateway, b)).status, 200, 'another merchant keeps its whole budget');
  });

  it('writes and sensitive: the first empty class refuses, reads keep going', async () => {
    const gateway = gateways[0]!;
    const token = await merchantToken();
    const post = (path: string) =>
      fetch(`${gateway.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
    assert.deepEqual([(await post('/api/v1/api-keys')).status, (await post('/api/v1/api-keys')).status], [200, 200]);
    const sensitive = await post('/api/v1/api-keys');
    assert.equal(sensitive.status, 429);
    assert.equal(((await sensitive.json()) as { throttle_class: string }).throttle_class, 'sensitive');
    assert.equal((await post('/api/v1/products')).status, 200, 'the refused sensitive request took no write token');
    const writes = await post('/api/v1/products');
    assert.equal(((await writes.json()) as { throttle_class: string }).throttle_class, 'writes');
    assert.equal((await get(gateway, token)).status, 200);
  });

  it('two gateways against one Redis share one budget', async () => {
    const second = await start(settings);
    const token = await merchantToken();
    let allowed = 0;
    for (let i = 0; i < 10; i += 1) if ((await get(i % 2 ? second : gateways[0]!, token)).status === 200) allowed += 1;
    assert.equal(allowed, 6);
  });

  it('throttles the token endpoint per client id (Basic or form) before forwarding, body intact', async () => {
    const gateway = gateways[0]!;
    const basic = (clientId: string) =>
      fetch(`${gateway.url}/oauth/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${clientId}:secret`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      });
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await basic('mx_test_brute')).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assert.equal((await basic('mx_test_other')).status, 200, 'another client id has its own budget');
    const form = 'grant_type=client_credentials&client_id=mx_test_form&client_secret=x';
    const viaForm = () => fetch(`${gateway.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    const first = await viaForm();
    assert.equal(first.headers.get('ratelimit-policy'), '"sensitive";q=3;w=60');
    assert.deepEqual(await first.json(), { received: form });
    await viaForm();
    await viaForm();
    const refused = await viaForm();
    assert.equal(refused.status, 429);
    assert.equal(((await refused.json()) as { throttle_class: string }).throttle_class, 'sensitive');
  });

  it('applies an operator override delivered as merchants.throttle_updated', async () => {
    const bus = new MemoryBus();
    const gateway = await start(settings, bus);
    const merchantId = newId('mch');
    await bus.publish([
      buildEvent('merchants.throttle_updated', merchantId, {
        object: {
          object: 'throttle_override',
          merchant_id: merchantId,
          plan: 'standard',
          overrides: { burst: { capacity: 2 } },
          version: 1,
          updated_at: new Date().toISOString(),
        },
      }),
    ]);
    const token = await merchantToken(merchantId);
    await until(async () => (await get(gateway, token)).status === 429, 2_000);
    assert.match((await get(gateway, token)).headers.get('ratelimit-policy') ?? '', /^"burst";q=2;/);
    await bus.close();
  });

  it('applies the overrides the oauth service stores when it starts, in memory and in Redis alike', async () => {
    const merchantId = newId('mch');
    upstream.storedOverrides = [{ merchant_id: merchantId, overrides: { burst: { capacity: 2 } }, version: 3 }];
    try {
      for (const throttle of [{ ...settings, redisUrl: undefined }, settings]) {
        const gateway = await start(throttle);
        const token = await merchantToken(merchantId);
        await until(async () => (await readinessOf(gateway)).checks.limiter === 'ok', 5_000);
        const first = await get(gateway, token);
        assert.match(first.headers.get('ratelimit-policy') ?? '', /^"burst";q=2;/, 'the stored override, not the plan');
      }
    } finally {
      upstream.storedOverrides = [];
    }
  });

  it('keeps serving on a bounded local limiter while Redis is unreachable, says so in its readiness details, and returns to Redis', async () => {
    const link = new RedisLink();
    await link.open();
    const gateway = await start({ ...settings, redisUrl: `redis://127.0.0.1:${link.port}`, expectedReplicas: 2 });
    const token = await merchantToken();
    await until(async () => (await get(gateway, token)).status === 200, 2_000);
    await link.cut();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) statuses.push((await get(gateway, token)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429], 'half of the burst capacity of 6 per replica, fresh local state');
    const readiness = await readinessOf(gateway);
    assert.equal(readiness.checks.limiter, 'degraded');
    assert.match(readiness.details.limiter ?? '', /redis unreachable/);
    await link.open();
    await until(async () => (await readinessOf(gateway)).checks.limiter === 'ok', 8_000);
    const other = await merchantToken();
    assert.equal((await get(gateway, other)).status, 200);
    await link.cut();
  });

  it('MERX_THROTTLE=off serves without limits or headers', async () => {
    const gateway = await start({ ...settings, enabled: false });
    const token = await merchantToken();
    for (let i = 0; i < 10; i += 1) assert.equal((await get(gateway, token)).status, 200);
    assert.equal((await get(gateway, token)).headers.get('ratelimit'), null);
  });
});
