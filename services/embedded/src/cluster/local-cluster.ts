import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  brokerNamesOf,
  busRetryPolicyFromEnv,
  DEFAULT_RETRY_POLICY,
  freePort,
  newSecretKeyEntry,
  newServiceToken,
  poisonQueueOf,
  retryDelaysOf,
  retryQueueOf,
  workQueueNames,
  type RetryPolicy,
} from '@merx/kit';
import amqp from 'amqplib';
import { startServiceProcess, type ServiceProcess } from './service-process.js';

/** In start order: oauth first (every other service loads its signing keys and revocations), the console before the gateway that checks it, the gateway last. */
export const CLUSTER_SERVICES = ['oauth', 'catalog', 'audit', 'webhooks', 'merchants', 'console', 'gateway'] as const;
export type ClusterService = (typeof CLUSTER_SERVICES)[number];
export type BackendService = Exclude<ClusterService, 'gateway'>;

/** Every durable queue a deployment declares, by logical name (the bus prefixes them with the deployment). */
export const DEPLOYMENT_QUEUES = workQueueNames();

export interface LocalClusterOptions {
  databaseUrl: string;
  amqpUrl: string;
  /** The gateway replicas' shared throttle state; without it the gateway counts in memory. */
  redisUrl?: string;
  /** MERX_DEPLOYMENT: names this cluster's exchange, queues and Redis keys apart from others on the same servers. */
  deployment: string;
  operatorToken: string;
  cookieSecret: string;
  /** The merchant console's client secret, given to the oauth service and the console alike. */
  consoleClientSecret: string;
  /** What services present to each other's internal routes; a fresh one per cluster when absent. */
  serviceToken?: string;
  /** MERX_SECRETS_KEYS of the merchants and webhooks services (they share it); a fresh key per cluster when absent. */
  secretKeys?: string;
  /** 0 picks a free one. */
  gatewayPort: number;
  /** The gateway's public gRPC port; 0 (or absent) picks a free one. */
  grpcPort?: number;
  /** Where the gateway is reached from outside; `http://localhost:<gateway port>` unless given. */
  publicUrl?: string;
  /** Each service's output goes to `<logDir>/<service>.log`. */
  logDir: string;
  logLevel?: string;
  /** Settings for every service (throttle plans, the delivery engine's schedule, pool sizes, ...). */
  env?: Record<string, string>;
  /** Settings for one service, applied last (a test reaches the broker through a proxy it can cut). */
  serviceEnv?: Partial<Record<ClusterService, Record<string, string>>>;
  /** Node options per service, before its script (a benchmark's `--cpu-prof`). */
  execArgv?: (service: ClusterService) => string[];
  /** Every output line of every service, as written. */
  onLine?: (service: string, line: string) => void;
  /** A service exited without being asked to (a crash, a start-up failure after it was ready). */
  onUnexpectedExit?: (service: string, code: number | null) => void;
}

export interface LocalCluster {
  deployment: string;
  /** The public base URL (issuer, links): `http://localhost:<port>` unless configured. */
  publicUrl: string;
  /** The gateway on the loopback interface. */
  gatewayUrl: string;
  /** The gateway's public gRPC port on the loopback interface, `127.0.0.1:<port>`. */
  grpcAddress: string;
  /** The internal gRPC ports of the services that own one (they answer only calls the gateway forwards). */
  serviceGrpcAddresses: Record<'catalog' | 'merchants' | 'webhooks', string>;
  /** MERX_SERVICE_TOKEN of every process: what the gateway vouches with on the services' own ports. */
  serviceToken: string;
  processes: Record<ClusterService, ServiceProcess>;
  /** Starts a service again (after kill or stopService) on the same port with the same settings. */
  /** `env`: settings for this start only, over the cluster's (a test's failpoint). */
  start(service: ClusterService, env?: Record<string, string>): Promise<ServiceProcess>;
  stopService(service: ClusterService): Promise<void>;
  /** SIGKILL, no shutdown of any kind, as a crash would. */
  kill(service: ClusterService): Promise<void>;
  restart(service: ClusterService): Promise<ServiceProcess>;
  /** One more replica on a port of its own, sharing the database, the queues and the settings (overrides last). */
  startReplica(service: BackendService, env?: Record<string, string>): Promise<ServiceProcess>;
  /** Stops every process, replicas included, the gateway first. */
  stop(): Promise<void>;
}

/**
 * The distributed mode on one machine: each service its own process against PostgreSQL,
 * RabbitMQ and Redis, exactly as Compose runs them. `npm run start:distributed`, the
 * distributed end-to-end suite and the benchmarks all start it this way.
 */
export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  await mkdir(options.logDir, { recursive: true });
  const ports = {} as Record<ClusterService, number>;
  for (const service of CLUSTER_SERVICES) ports[service] = service === 'gateway' && options.gatewayPort !== 0 ? options.gatewayPort : await freePort();
  // Each process's admin listener (/metrics, the detailed /readyz): kept across restarts, like its port.
  const adminPorts = {} as Record<ClusterService, number>;
  for (const service of CLUSTER_SERVICES) adminPorts[service] = await freePort();
  // Internal gRPC ports of the services that own a gRPC service, and the gateway's public one.
  const grpcPorts = {
    catalog: await freePort(),
    merchants: await freePort(),
    webhooks: await freePort(),
    gateway: options.grpcPort ? options.grpcPort : await freePort(),
  };
  const publicUrl = options.publicUrl ?? `http://localhost:${ports.gateway}`;
  const local = (service: ClusterService) => `http://127.0.0.1:${ports[service]}`;
  const serviceToken = options.serviceToken ?? newServiceToken();
  const shared: Record<string, string> = {
    AMQP_URL: options.amqpUrl,
    MERX_DEPLOYMENT: options.deployment,
    MERX_PUBLIC_URL: publicUrl,
    MERX_OAUTH_URL: local('oauth'),
    MERX_SERVICE_TOKEN: serviceToken,
    LOG_LEVEL: options.logLevel ?? 'info',
  };
  const secretKeys = options.secretKeys ?? newSecretKeyEntry(`k${randomBytes(4).toString('hex')}`);
  const envOf = (service: ClusterService): Record<string, string> => {
    const own: Record<string, string> =
      service === 'gateway'
        ? {
            MERX_CATALOG_URL: local('catalog'),
            MERX_AUDIT_URL: local('audit'),
            MERX_WEBHOOKS_URL: local('webhooks'),
            MERX_MERCHANTS_URL: local('merchants'),
            MERX_CONSOLE_URL: local('console'),
            GRPC_PORT: String(grpcPorts.gateway),
            MERX_CATALOG_GRPC: `127.0.0.1:${grpcPorts.catalog}`,
            MERX_MERCHANTS_GRPC: `127.0.0.1:${grpcPorts.merchants}`,
            MERX_WEBHOOKS_GRPC: `127.0.0.1:${grpcPorts.webhooks}`,
            ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
          }
        : {
            DATABASE_URL: options.databaseUrl,
            ...(service === 'catalog' || service === 'merchants' || service === 'webhooks' ? { GRPC_PORT: String(grpcPorts[service]) } : {}),
            ...(service === 'merchants' || service === 'webhooks' ? { MERX_SECRETS_KEYS: secretKeys } : {}),
            ...(service === 'oauth'
              ? {
                  MERX_OPERATOR_TOKEN: options.operatorToken,
                  MERX_COOKIE_SECRET: options.cookieSecret,
                  MERX_CONSOLE_CLIENT_SECRET: options.consoleClientSecret,
                }
              : {}),
            // The console calls the API through the gateway, as any client does.
            ...(service === 'console' ? { MERX_CONSOLE_CLIENT_SECRET: options.consoleClientSecret, MERX_GATEWAY_URL: local('gateway') } : {}),
          };
    return { ...shared, ...own, ...options.env, ...options.serviceEnv?.[service] };
  };

  const processes = {} as Record<ClusterService, ServiceProcess>;
  const replicas: ServiceProcess[] = [];
  const expectedExits = new Set<ServiceProcess>();
  let stopping = false;
  const watch = (process: ServiceProcess) => {
    void process.exited.then((code) => {
      if (!stopping && !expectedExits.has(process)) options.onUnexpectedExit?.(process.name, code);
    });
    return process;
  };
  const spawn = (service: ClusterService, port: number, adminPort: number, env: Record<string, string>, logName: string) =>
    startServiceProcess({
      name: service,
      port,
      adminPort,
      env,
      logFile: path.join(options.logDir, `${logName}.log`),
      ...(options.execArgv ? { execArgv: options.execArgv(service) } : {}),
      ...(options.onLine ? { onLine: (line: string) => options.onLine!(logName, line) } : {}),
    }).then(watch);
  const start = async (service: ClusterService, env: Record<string, string> = {}) =>
    (processes[service] = await spawn(service, ports[service], adminPorts[service], { ...envOf(service), ...env }, service));
  const stopQuietly = async (process: ServiceProcess | undefined) => {
    if (!process) return;
    expectedExits.add(process);
    await process.stop();
  };
  const stop = async () => {
    stopping = true;
    await stopQuietly(processes.gateway);
    await Promise.all([...replicas, ...CLUSTER_SERVICES.filter((service) => service !== 'gateway').map((service) => processes[service])].map(stopQuietly));
  };

  try {
    for (const service of CLUSTER_SERVICES) await start(service);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    deployment: options.deployment,
    publicUrl,
    gatewayUrl: local('gateway'),
    grpcAddress: `127.0.0.1:${grpcPorts.gateway}`,
    serviceGrpcAddresses: {
      catalog: `127.0.0.1:${grpcPorts.catalog}`,
      merchants: `127.0.0.1:${grpcPorts.merchants}`,
      webhooks: `127.0.0.1:${grpcPorts.webhooks}`,
    },
    serviceToken,
    processes,
    start,
    stopService: (service) => stopQuietly(processes[service]),
    async kill(service) {
      const process = processes[service];
      expectedExits.add(process);
      process.child.kill('SIGKILL');
      await process.exited;
    },
    async restart(service) {
      await stopQuietly(processes[service]);
      return start(service);
    },
    async startReplica(service, env = {}) {
      const replica = await spawn(
        service,
        await freePort(),
        await freePort(),
        { ...envOf(service), GRPC_PORT: String(await freePort()), ...env },
        `${service}-replica-${replicas.length + 1}`,
      );
      replicas.push(replica);
      return replica;
    },
    stop,
  };
}

/** Removes what a deployment declared on the broker (its queues, their poison queues, its exchange): for throwaway deployments. */
/**
 * Deletes what a deployment made on the broker: its work queues with their poison and retry
 * queues, and its exchange. Retry queues are named by their delay: those of the default schedule,
 * of `retry` and of MERX_BUS_RETRY_SCHEDULE in this environment are all looked for.
 */
export async function removeDeploymentFromBroker(amqpUrl: string, deployment: string, retry?: RetryPolicy): Promise<void> {
  const names = brokerNamesOf(deployment);
  const delays = new Set([DEFAULT_RETRY_POLICY, busRetryPolicyFromEnv(process.env), ...(retry ? [retry] : [])].flatMap(retryDelaysOf));
  const connection = await amqp.connect(amqpUrl);
  try {
    const channel = await connection.createChannel();
    for (const queue of DEPLOYMENT_QUEUES.map(names.queue)) {
      await channel.deleteQueue(queue);
      await channel.deleteQueue(poisonQueueOf(queue));
      for (const delayMs of delays) await channel.deleteQueue(retryQueueOf(queue, delayMs));
    }
    await channel.deleteExchange(names.exchange);
    await channel.close();
  } finally {
    await connection.close().catch(() => undefined);
  }
}
