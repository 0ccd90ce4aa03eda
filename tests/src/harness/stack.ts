import { randomBytes } from 'node:crypto';
import { AmqpBus, createLogger, type Logger } from '@merx/kit';
import { startEmbedded } from '@merx/embedded';
import { purgeThrottleState, throttleSettingsFromEnv } from '@merx/gateway';
import { merchantsSettingsFromEnv } from '@merx/merchants';
import { webhookSettingsFromEnv } from '@merx/webhooks';
import { AMQP_URL, createTestDatabase, deleteQueues, REDIS_URL, freePort, startServiceProcess, type ServiceProcess } from './distributed.js';
import { EventObserver } from './events.js';
import { TcpProxy } from './tcp-proxy.js';

export type StackMode = 'embedded' | 'distributed';

export interface Stack {
  mode: StackMode;
  baseUrl: string;
  operatorToken: string;
  events: EventObserver;
  /** Distributed mode only: the service processes, for tests that kill or restart one. */
  processes: Record<string, ServiceProcess>;
  /** Distributed mode only: each service reaches RabbitMQ through its own proxy, so a test can cut its link. */
  brokerLinks: Record<string, TcpProxy>;
  /** A service's own origin, bypassing the gateway (both modes): proves each service checks tokens itself. */
  directUrl(service: 'oauth' | 'catalog' | 'webhooks' | 'merchants'): string;
  restart(service: string): Promise<void>;
  /** Distributed mode only: SIGKILL, no shutdown of any kind, as a crash would. */
  kill(service: string): Promise<void>;
  start(service: string): Promise<void>;
  /**
   * Distributed mode only: one more replica of a service on its own port, sharing the stack's
   * database and durable queue (two delivery workers racing for the same work). It reaches
   * RabbitMQ directly, not through the service's broker link; the stack stops it on stop().
   */
  startExtra(service: 'webhooks'): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

export function stackMode(): StackMode {
  const mode = process.env.MERX_E2E_MODE ?? 'embedded';
  if (mode !== 'embedded' && mode !== 'distributed') throw new Error(`MERX_E2E_MODE must be embedded or distributed, not ${mode}`);
  return mode;
}

/**
 * Throttle settings of every e2e stack: sandbox buckets roomy enough for tests that write in
 * bursts (resilience), a sensitive window roomy enough for one merchant to make a key per scope
 * and call every sensitive operation (isolation), a token endpoint window of 2 s so its test
 * recovers quickly. Tests that need small budgets set them per merchant through the operator API.
 */
export const E2E_THROTTLE_ENV = {
  MERX_THROTTLE_PLANS:
    '{"sandbox":{"burst":{"capacity":1000,"refill_per_second":500},"writes":{"capacity":1000,"refill_per_second":500},"sensitive":{"limit":100,"window_seconds":60}}}',
  MERX_THROTTLE_TOKEN_ENDPOINT: '{"limit":10,"window_seconds":2}',
};

/**
 * Delivery engine settings of every e2e stack (both modes): retries within seconds so retry and
 * dead-letter tests finish quickly, a short stale-worker timeout for the crash test. Receivers
 * listen on 127.0.0.1 and only that private address is allowed, so `localhost` and the other
 * private ranges stay refused for the SSRF tests.
 */
export const E2E_WEBHOOK_ENV = {
  MERX_WEBHOOK_ALLOW_PRIVATE: 'false',
  MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
  MERX_WEBHOOK_RETRY_SCHEDULE: '500ms,500ms,1s',
  MERX_WEBHOOK_RETRY_WINDOW: '3s',
  MERX_WEBHOOK_WORKER_STALE_AFTER: '2s',
  MERX_WEBHOOK_TIMEOUT: '3s',
  MERX_WEBHOOK_CONNECT_TIMEOUT: '1s',
  MERX_WEBHOOK_SECRET_OVERLAP: '24h',
};

const quietLogger = (): Logger => createLogger('e2e', process.env.LOG_LEVEL ?? 'silent');

async function startEmbeddedStack(): Promise<Stack> {
  const merx = await startEmbedded({
    dataDir: undefined,
    port: 0,
    logger: quietLogger(),
    throttle: throttleSettingsFromEnv(E2E_THROTTLE_ENV),
    webhooks: webhookSettingsFromEnv(E2E_WEBHOOK_ENV),
    merchants: merchantsSettingsFromEnv(E2E_WEBHOOK_ENV),
  });
  const events = await EventObserver.attach(merx.bus, `e2e-observer-${randomBytes(4).toString('hex')}`);
  return {
    mode: 'embedded',
    baseUrl: merx.baseUrl,
    operatorToken: merx.credentials.operator_token,
    events,
    processes: {},
    brokerLinks: {},
    directUrl: (service) => merx[service].url,
    async restart() {
      throw new Error('restart needs the distributed mode');
    },
    async kill() {
      throw new Error('kill needs the distributed mode');
    },
    async start() {
      throw new Error('start needs the distributed mode');
    },
    async startExtra() {
      throw new Error('startExtra needs the distributed mode');
    },
    async stop() {
      await events.close();
      await merx.stop();
    },
  };
}

/** Every service its own process against PostgreSQL and RabbitMQ, as in production. */
async function startDistributedStack(): Promise<Stack> {
  const database = await createTestDatabase('merx_e2e');
  const [gatewayPort, oauthPort, catalogPort, auditPort, webhooksPort, merchantsPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  // Durable queues are per stack: several stacks (CI, other runs) share one RabbitMQ.
  const auditQueue = `audit.events.${database.name}`;
  const webhooksQueue = `webhooks.events.${database.name}`;
  const merchantsQueue = `merchants.events.${database.name}`;
  const catalogQueue = `catalog.events.${database.name}`;
  const oauthQueue = `oauth.merchants.${database.name}`;
  const throttleQueue = `gateway.throttle_overrides.${database.name}`;
  const throttlePrefix = `merx:e2e:${database.name}:`;
  const baseUrl = `http://localhost:${gatewayPort}`;
  const operatorToken = randomBytes(32).toString('base64url');
  const amqp = new URL(AMQP_URL);
  const brokerLinks: Record<string, TcpProxy> = {
    oauth: await TcpProxy.start(amqp.hostname, Number(amqp.port || 5672)),
    catalog: await TcpProxy.start(amqp.hostname, Number(amqp.port || 5672)),
    webhooks: await TcpProxy.start(amqp.hostname, Number(amqp.port || 5672)),
    merchants: await TcpProxy.start(amqp.hostname, Number(amqp.port || 5672)),
  };
  const viaProxy = (service: string) => {
    const url = new URL(AMQP_URL);
    url.port = String(brokerLinks[service]!.port);
    return url.toString();
  };
  const common = {
    DATABASE_URL: database.url,
    MERX_PUBLIC_URL: baseUrl,
    MERX_JWKS_URL: `http://127.0.0.1:${oauthPort}/oauth/jwks`,
    MERX_DB_POOL_SIZE: '5',
    // Where every token verifier loads the revocation list from at start.
    MERX_OAUTH_URL: `http://127.0.0.1:${oauthPort}`,
  };
  const env: Record<string, Record<string, string>> = {
    oauth: { ...common, AMQP_URL: viaProxy('oauth'), MERX_OPERATOR_TOKEN: operatorToken, MERX_COOKIE_SECRET: randomBytes(32).toString('base64url'), MERX_OAUTH_QUEUE: oauthQueue },
    catalog: { ...common, AMQP_URL: viaProxy('catalog'), MERX_CATALOG_QUEUE: catalogQueue },
    merchants: { ...common, AMQP_URL: viaProxy('merchants'), MERX_MERCHANTS_QUEUE: merchantsQueue, ...E2E_WEBHOOK_ENV },
    audit: { ...common, AMQP_URL, MERX_OAUTH_URL: `http://127.0.0.1:${oauthPort}`, MERX_AUDIT_QUEUE: auditQueue },
    webhooks: { ...common, AMQP_URL: viaProxy('webhooks'), MERX_WEBHOOKS_QUEUE: webhooksQueue, ...E2E_WEBHOOK_ENV },
    gateway: {
      AMQP_URL,
      MERX_PUBLIC_URL: baseUrl,
      MERX_JWKS_URL: common.MERX_JWKS_URL,
      MERX_OAUTH_URL: `http://127.0.0.1:${oauthPort}`,
      MERX_CATALOG_URL: `http://127.0.0.1:${catalogPort}`,
      MERX_AUDIT_URL: `http://127.0.0.1:${auditPort}`,
      MERX_WEBHOOKS_URL: `http://127.0.0.1:${webhooksPort}`,
      MERX_MERCHANTS_URL: `http://127.0.0.1:${merchantsPort}`,
      ...E2E_THROTTLE_ENV,
      REDIS_URL,
      MERX_THROTTLE_KEY_PREFIX: throttlePrefix,
      MERX_THROTTLE_QUEUE: throttleQueue,
    },
  };
  const ports: Record<string, number> = { oauth: oauthPort, catalog: catalogPort, audit: auditPort, webhooks: webhooksPort, merchants: merchantsPort, gateway: gatewayPort };
  const processes: Record<string, ServiceProcess> = {};
  const extras: ServiceProcess[] = [];
  const bus = await AmqpBus.connect({ url: AMQP_URL, service: 'e2e-observer', logger: quietLogger() });
  const events = await EventObserver.attach(bus, 'e2e-observer');
  // Everything this stack made, undone in reverse: used when a start fails and by stop().
  const tearDown = async () => {
    await Promise.all([...Object.values(processes), ...extras].map((service) => service.stop()));
    await Promise.all(Object.values(brokerLinks).map((link) => link.close()));
    await events.close();
    await bus.close();
    const queues = [auditQueue, webhooksQueue, merchantsQueue, catalogQueue, oauthQueue, throttleQueue];
    await deleteQueues(queues.flatMap((queue) => [queue, `${queue}.poison`]));
    await purgeThrottleState(REDIS_URL, throttlePrefix);
    await database.drop();
  };
  try {
    for (const name of ['oauth', 'catalog', 'audit', 'webhooks', 'merchants', 'gateway']) processes[name] = await startServiceProcess(name, env[name]!, ports[name]!);
  } catch (error) {
    await tearDown();
    throw error;
  }
  return {
    mode: 'distributed',
    baseUrl,
    operatorToken,
    events,
    processes,
    brokerLinks,
    directUrl: (service) => processes[service]!.url,
    async restart(name: string) {
      await processes[name]!.stop();
      processes[name] = await startServiceProcess(name, env[name]!, ports[name]!);
    },
    async kill(name: string) {
      processes[name]!.child.kill('SIGKILL');
      await processes[name]!.exited;
    },
    async start(name: string) {
      processes[name] = await startServiceProcess(name, env[name]!, ports[name]!);
    },
    async startExtra(name) {
      const extra = await startServiceProcess(name, { ...env[name]!, AMQP_URL }, await freePort());
      extras.push(extra);
      return extra;
    },
    stop: tearDown,
  };
}

export function startStack(mode: StackMode = stackMode()): Promise<Stack> {
  return mode === 'embedded' ? startEmbeddedStack() : startDistributedStack();
}
