import { randomBytes } from 'node:crypto';
import { AmqpBus, createLogger, type Logger } from '@merx/kit';
import { startEmbedded } from '@merx/embedded';
import { AMQP_URL, createTestDatabase, freePort, startServiceProcess, type ServiceProcess } from './distributed.js';
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
  restart(service: string): Promise<void>;
  /** Distributed mode only: SIGKILL, no shutdown of any kind, as a crash would. */
  kill(service: string): Promise<void>;
  start(service: string): Promise<void>;
  stop(): Promise<void>;
}

export function stackMode(): StackMode {
  const mode = process.env.MERX_E2E_MODE ?? 'embedded';
  if (mode !== 'embedded' && mode !== 'distributed') throw new Error(`MERX_E2E_MODE must be embedded or distributed, not ${mode}`);
  return mode;
}

const quietLogger = (): Logger => createLogger('e2e', process.env.LOG_LEVEL ?? 'silent');

async function startEmbeddedStack(): Promise<Stack> {
  const merx = await startEmbedded({ dataDir: undefined, port: 0, logger: quietLogger() });
  const events = await EventObserver.attach(merx.bus, `e2e-observer-${randomBytes(4).toString('hex')}`);
  return {
    mode: 'embedded',
    baseUrl: merx.baseUrl,
    operatorToken: merx.credentials.operator_token,
    events,
    processes: {},
    brokerLinks: {},
    async restart() {
      throw new Error('restart needs the distributed mode');
    },
    async kill() {
      throw new Error('kill needs the distributed mode');
    },
    async start() {
      throw new Error('start needs the distributed mode');
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
  const [gatewayPort, oauthPort, catalogPort] = [await freePort(), await freePort(), await freePort()];
  const baseUrl = `http://localhost:${gatewayPort}`;
  const operatorToken = randomBytes(32).toString('base64url');
  const amqp = new URL(AMQP_URL);
  const brokerLinks: Record<string, TcpProxy> = {
    oauth: await TcpProxy.start(amqp.hostname, Number(amqp.port || 5672)),
    catalog: await TcpProxy.start(amqp.hostname, Number(amqp.port || 5672)),
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
  };
  const env: Record<string, Record<string, string>> = {
    oauth: { ...common, AMQP_URL: viaProxy('oauth'), MERX_OPERATOR_TOKEN: operatorToken, MERX_COOKIE_SECRET: randomBytes(32).toString('base64url') },
    catalog: { ...common, AMQP_URL: viaProxy('catalog') },
    gateway: {
      MERX_PUBLIC_URL: baseUrl,
      MERX_JWKS_URL: common.MERX_JWKS_URL,
      MERX_OAUTH_URL: `http://127.0.0.1:${oauthPort}`,
      MERX_CATALOG_URL: `http://127.0.0.1:${catalogPort}`,
    },
  };
  const ports: Record<string, number> = { oauth: oauthPort, catalog: catalogPort, gateway: gatewayPort };
  const processes: Record<string, ServiceProcess> = {};
  const bus = await AmqpBus.connect({ url: AMQP_URL, service: 'e2e-observer', logger: quietLogger() });
  const events = await EventObserver.attach(bus, 'e2e-observer');
  try {
    for (const name of ['oauth', 'catalog', 'gateway']) processes[name] = await startServiceProcess(name, env[name]!, ports[name]!);
  } catch (error) {
    await Promise.all(Object.values(processes).map((service) => service.stop()));
    await Promise.all(Object.values(brokerLinks).map((link) => link.close()));
    await events.close();
    await bus.close();
    await database.drop();
    throw error;
  }
  return {
    mode: 'distributed',
    baseUrl,
    operatorToken,
    events,
    processes,
    brokerLinks,
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
    async stop() {
      await Promise.all(Object.values(processes).map((service) => service.stop()));
      await Promise.all(Object.values(brokerLinks).map((link) => link.close()));
      await events.close();
      await bus.close();
      await database.drop();
    },
  };
}

export function startStack(mode: StackMode = stackMode()): Promise<Stack> {
  return mode === 'embedded' ? startEmbeddedStack() : startDistributedStack();
}
