import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AmqpBus, busRetryPolicyFromEnv, createLogger, newSecretKeyEntry, type Logger, type MerxEvent } from '@merx/kit';
import { removeDeploymentFromBroker, startEmbedded, startLocalCluster, type ClusterService, type LocalCluster, type ServiceProcess } from '@merx/embedded';
import { grpcConnectionSettingsFromEnv, purgeThrottleState, throttleSettingsFromEnv } from '@merx/gateway';
import { merchantsSettingsFromEnv } from '@merx/merchants';
import { signInThrottleFromEnv } from '@merx/oauth';
import { webhookSettingsFromEnv } from '@merx/webhooks';
import { AMQP_URL, createTestDatabase, REDIS_URL } from './distributed.js';
import { EventObserver } from './events.js';
import { TcpProxy } from './tcp-proxy.js';

export type StackMode = 'embedded' | 'distributed';
export type AdminService = 'gateway' | 'oauth' | 'catalog' | 'audit' | 'webhooks' | 'merchants' | 'console';

/** What an admin listener's /readyz says: every check by `<service>.<check>`, with details and the degraded ones. */
export interface DetailedReadiness {
  status: 'ready' | 'not_ready';
  checks: Record<string, string>;
  details: Record<string, string>;
  degraded: string[];
}

/** The detailed readiness of the admin listener that reports `service`, with the HTTP status. */
export async function adminReadiness(stack: Stack, service: AdminService): Promise<{ status: number; body: DetailedReadiness }> {
  const response = await fetch(`${stack.adminUrl(service)}/readyz`);
  return { status: response.status, body: (await response.json()) as DetailedReadiness };
}

export interface Stack {
  mode: StackMode;
  baseUrl: string;
  /** The gateway's public gRPC port, `127.0.0.1:<port>`. */
  grpcAddress: string;
  operatorToken: string;
  events: EventObserver;
  /** Puts events straight onto the stack's bus, as a publisher that skipped every check would. */
  publish(events: MerxEvent[]): Promise<void>;
  /** Distributed mode only: the service processes, for tests that kill or restart one. */
  processes: Partial<Record<string, ServiceProcess>>;
  /** Distributed mode only: the stack's own database (tests that look at what each service stored). */
  databaseUrl?: string;
  /** Distributed mode only: MERX_DEPLOYMENT, the stack's names on the broker and in Redis. */
  deployment?: string;
  /** Distributed mode only: each service reaches RabbitMQ through its own proxy, so a test can cut its link. */
  brokerLinks: Record<string, TcpProxy>;
  /**
   * A service's own origin, bypassing the gateway (both modes): proves each service checks tokens
   * itself. Its API answers only with the gateway's credential (`gatewayCredential`).
   */
  directUrl(service: 'oauth' | 'catalog' | 'webhooks' | 'merchants'): string;
  /** A service's own gRPC port (catalog, merchants, webhooks), bypassing the edge. */
  directGrpcAddress(service: 'catalog' | 'merchants' | 'webhooks'): string;
  /** The credential the gateway vouches with on the services' own ports (header and metadata `x-merx-gateway-credential`). */
  gatewayCredential: string;
  /**
   * The admin listener that reports a service (/metrics, the detailed /readyz): its own process's
   * in the distributed mode, the one of the whole process in the embedded mode. Check names are
   * `<service>.<check>` in both.
   */
  adminUrl(service: AdminService): string;
  restart(service: string): Promise<void>;
  /** Distributed mode only: SIGKILL, no shutdown of any kind, as a crash would. */
  kill(service: string): Promise<void>;
  /** `env`: settings for this start only (a failpoint). */
  start(service: string, env?: Record<string, string>): Promise<void>;
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
/** Sign-in locks long enough to observe on a busy machine: the lockout test waits them out. */
export const E2E_SIGNIN_ENV = { MERX_SIGNIN_THROTTLE: '{"account":{"first_lock_seconds":3}}' };

export const E2E_THROTTLE_ENV = {
  MERX_THROTTLE_PLANS:
    '{"sandbox":{"burst":{"capacity":1000,"refill_per_second":500},"writes":{"capacity":1000,"refill_per_second":500},"sensitive":{"limit":100,"window_seconds":60}}}',
  MERX_THROTTLE_TOKEN_ENDPOINT: '{"limit":10,"window_seconds":2}',
  // Roomy enough that loading 10,000 products is not paced; the pacing test lowers it per run.
  // Standard merchants get a small bulk class: the neighbours test's merchant on a small budget.
  MERX_THROTTLE_BULK: '{"sandbox":100000,"standard":200}',
};

/**
 * The public gRPC port of every e2e stack (both modes): a connection that authenticates nothing
 * is closed after 3 s rather than 10, so the neighbours test sees its attack end quickly.
 */
export const E2E_GRPC_ENV = { MERX_GRPC_AUTH_DEADLINE_MS: '3000' };

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
  // A rule's time limit per record: above the default 100 ms, which a rule worker's first run
  // can miss on a machine whose cores the suite shares, and still far below what the slow-rule
  // test's nine million pairs need.
  MERX_RULE_TIMEOUT_MS: '500',
  // Few record events per merchant in memory, so the neighbours test's flood is mostly parked in
  // the routing backlog and routed from there (the default, 128, takes the whole flood in memory).
  MERX_ROUTING_MAX_PENDING_PER_MERCHANT: '8',
};

/**
 * Bus retries of every e2e stack (both modes): redeliveries within a second and poison after the
 * third failure, so the poison tests finish quickly.
 */
export const E2E_BUS_ENV = {
  MERX_BUS_RETRY_SCHEDULE: '200ms,500ms',
  MERX_BUS_DELIVERY_LIMIT: '3',
};

const quietLogger = (): Logger => createLogger('e2e', process.env.LOG_LEVEL ?? 'silent');

async function startEmbeddedStack(): Promise<Stack> {
  const merx = await startEmbedded({
    dataDir: undefined,
    port: 0,
    logger: quietLogger(),
    throttle: throttleSettingsFromEnv(E2E_THROTTLE_ENV),
    grpcConnections: grpcConnectionSettingsFromEnv(E2E_GRPC_ENV),
    signInThrottle: signInThrottleFromEnv(E2E_SIGNIN_ENV),
    webhooks: webhookSettingsFromEnv(E2E_WEBHOOK_ENV),
    merchants: merchantsSettingsFromEnv(E2E_WEBHOOK_ENV),
    busRetry: busRetryPolicyFromEnv(E2E_BUS_ENV),
  });
  const events = await EventObserver.attach(merx.bus, `e2e-observer-${randomBytes(4).toString('hex')}`);
  return {
    mode: 'embedded',
    baseUrl: merx.baseUrl,
    grpcAddress: `127.0.0.1:${merx.gateway.grpc!.port}`,
    operatorToken: merx.credentials.operator_token,
    events,
    publish: (published) => merx.bus.publish(published),
    processes: {},
    brokerLinks: {},
    directUrl: (service) => merx[service].url,
    directGrpcAddress: (service) => merx[service].grpc.address,
    gatewayCredential: merx.serviceToken,
    adminUrl: () => merx.admin.url,
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

/**
 * Every service its own process against PostgreSQL, RabbitMQ and Redis, as in production, started
 * by the same launcher as `npm run start:distributed`. The stack is its own deployment
 * (MERX_DEPLOYMENT) with its own database, so runs sharing the servers never see each other.
 */
export async function startDistributedStack(): Promise<Stack> {
  const database = await createTestDatabase('merx_e2e');
  const deployment = `e2e-${database.name.slice(-10)}`;
  const operatorToken = randomBytes(32).toString('base64url');
  const amqp = new URL(AMQP_URL);
  // Every process that speaks to RabbitMQ does so through a link of its own: cutting them all is the broker going away.
  const brokerLinks: Record<string, TcpProxy> = {};
  for (const service of ['oauth', 'catalog', 'audit', 'webhooks', 'merchants', 'gateway'])
    brokerLinks[service] = await TcpProxy.start(amqp.hostname, Number(amqp.port || 5672));
  const viaProxy = (service: string) => {
    const url = new URL(AMQP_URL);
    url.port = String(brokerLinks[service]!.port);
    return { AMQP_URL: url.toString() };
  };
  const bus = await AmqpBus.connect({ url: AMQP_URL, service: 'e2e-observer', logger: quietLogger(), deployment });
  const events = await EventObserver.attach(bus, 'e2e-observer');
  let cluster: LocalCluster | undefined;
  // Everything this stack made, undone in reverse: used when a start fails and by stop().
  const tearDown = async () => {
    await cluster?.stop();
    await Promise.all(Object.values(brokerLinks).map((link) => link.close()));
    await events.close();
    await bus.close();
    await removeDeploymentFromBroker(AMQP_URL, deployment, busRetryPolicyFromEnv(E2E_BUS_ENV));
    await purgeThrottleState(REDIS_URL, `${deployment}:`);
    await database.drop();
  };
  try {
    cluster = await startLocalCluster({
      databaseUrl: database.url,
      amqpUrl: AMQP_URL,
      redisUrl: REDIS_URL,
      deployment,
      operatorToken,
      cookieSecret: randomBytes(32).toString('base64url'),
      consoleClientSecret: randomBytes(32).toString('base64url'),
      secretKeys: newSecretKeyEntry(`e2e${randomBytes(4).toString('hex')}`),
      gatewayPort: 0,
      logDir: path.join(tmpdir(), `merx-${deployment}`),
      logLevel: process.env.LOG_LEVEL ?? 'warn',
      env: { MERX_DB_POOL_SIZE: '5', ...E2E_THROTTLE_ENV, ...E2E_GRPC_ENV, ...E2E_WEBHOOK_ENV, ...E2E_SIGNIN_ENV, ...E2E_BUS_ENV },
      serviceEnv: {
        oauth: viaProxy('oauth'),
        catalog: viaProxy('catalog'),
        audit: viaProxy('audit'),
        webhooks: viaProxy('webhooks'),
        merchants: viaProxy('merchants'),
        gateway: viaProxy('gateway'),
      },
    });
  } catch (error) {
    await tearDown();
    throw error;
  }
  const running = cluster;
  return {
    mode: 'distributed',
    baseUrl: running.publicUrl,
    grpcAddress: running.grpcAddress,
    operatorToken,
    events,
    publish: (published) => bus.publish(published),
    processes: running.processes,
    brokerLinks,
    databaseUrl: database.url,
    deployment,
    directUrl: (service) => running.processes[service].url,
    directGrpcAddress: (service) => running.serviceGrpcAddresses[service],
    gatewayCredential: running.serviceToken,
    adminUrl: (service) => running.processes[service].adminUrl,
    async restart(name) {
      await running.restart(name as ClusterService);
    },
    async kill(name) {
      await running.kill(name as ClusterService);
    },
    async start(name, env) {
      await running.start(name as ClusterService, env);
    },
    // Straight to RabbitMQ, not through the service's broker link.
    startExtra: (name) => running.startReplica(name, { AMQP_URL }),
    stop: tearDown,
  };
}

export function startStack(mode: StackMode = stackMode()): Promise<Stack> {
  return mode === 'embedded' ? startEmbeddedStack() : startDistributedStack();
}
