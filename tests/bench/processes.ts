import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDeploymentFromBroker, startLocalCluster, type LocalCluster, lastLines as tail } from '@merx/embedded';
import { purgeThrottleState } from '@merx/gateway';
import { AMQP_URL, createTestDatabase, freePort, REDIS_URL, repoRoot } from '../src/harness/distributed.js';

const benchDir = path.dirname(fileURLToPath(import.meta.url));

/**
 * `--cpu-prof` for the Merx processes when BENCH_CPU_PROF names a folder (Node refuses it in
 * NODE_OPTIONS, hence our own spawning); the profile is written when the process exits.
 */
function profilingArgs(name: string): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  return dir && !['hello', 'oauth', 'receiver'].includes(name) ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(dir, name)}`] : [];
}

export interface BenchProcess {
  name: string;
  pid: number;
  url: string;
  stop(): Promise<void>;
}

/** What a started mode offers the scenarios: its origins, a way in (operator token or API key), and the pids to watch. */
export interface RunningMode {
  gatewayUrl: string;
  /** The public gRPC port on the loopback interface, `127.0.0.1:<port>`. */
  grpcAddress: string;
  /** The origin that hands out tokens and merchants; `localhost` as the issuer names it. */
  publicUrl: string;
  operatorToken: string;
  /** The sandbox merchant's key (embedded mode, from dev.json). */
  apiKey?: string;
  /** Pids whose CPU time the report attributes by name. */
  processes: Record<string, number>;
  /** Each process's log file, by the same names. */
  logs: Record<string, string>;
  /** Distributed mode: MERX_DEPLOYMENT, the run's names on the broker. */
  deployment?: string;
  /** Distributed mode: the run's PostgreSQL database, whose sessions the CPU figures count. */
  databaseName?: string;
  /** Embedded mode: the admin listener (/metrics), where the in-process bus's counters are read. */
  adminUrl?: string;
  /** MERX_SERVICE_TOKEN: the services' own ports answer their API only with it (the direct GET scenario sends it). */
  serviceToken: string;
  stop(): Promise<void>;
}

function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  return exited.then(() => clearTimeout(timer));
}

interface Spawned {
  child: ChildProcess;
  exited: Promise<number | null>;
  logFile: string;
  /** Stops the process and removes its log: failures quote the log before anything is stopped. */
  stop(): Promise<void>;
}

function spawnNode(name: string, script: string, env: Record<string, string>): Spawned {
  const logFile = path.join(tmpdir(), `merx-bench-${name}-${process.pid}.log`);
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, [...profilingArgs(name), script], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    logFile,
    async stop() {
      await stopChild(child, exited);
      rmSync(logFile, { force: true });
    },
  };
}

async function until<T>(what: string, logFile: string, exited: Promise<unknown>, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone) throw new Error(`${what} exited during start-up:\n${tail(logFile)}`);
    const found = await probe().catch(() => undefined);
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} was not ready within ${timeoutMs} ms:\n${tail(logFile)}`);
}

/** A bench helper script that prints its port on its first line (the hello server, the webhook receiver). */
async function startPortPrinter(name: string, script: string): Promise<BenchProcess> {
  const { child, exited, logFile, stop } = spawnNode(name, path.join(benchDir, script), {});
  try {
    const port = await until(name, logFile, exited, async () => {
      const first = readFileSync(logFile, 'utf8').split('\n')[0]!;
      return /^\d+$/.test(first) ? Number(first) : undefined;
    });
    return { name, pid: child.pid!, url: `http://127.0.0.1:${port}`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export const startHelloServer = (): Promise<BenchProcess> => startPortPrinter('hello', 'hello-server.js');

/** The webhook endpoint of the delivery benchmark (webhook-receiver.ts), in its own process. */
export const startWebhookReceiver = (): Promise<BenchProcess> => startPortPrinter('receiver', 'webhook-receiver.js');

/** `npm start` as a newcomer runs it: one process, PGlite in a fresh data folder, the in-process bus. */
export async function startEmbeddedMode(extraEnv: Record<string, string> = {}): Promise<RunningMode> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'merx-bench-data-'));
  const port = await freePort();
  // a known admin port rather than an ephemeral one: the POST scenario reads the bus counters there
  const adminPort = await freePort();
  const serviceToken = randomBytes(32).toString('base64url');
  const {
    child,
    exited,
    logFile,
    stop: stopProcess,
  } = spawnNode('embedded', path.join(repoRoot, 'services/embedded/dist/src/main.js'), {
    MERX_DATA_DIR: dataDir,
    PORT: String(port),
    GRPC_PORT: '0',
    ADMIN_PORT: String(adminPort),
    LOG_LEVEL: 'warn',
    MERX_SERVICE_TOKEN: serviceToken,
    ...extraEnv,
  });
  const stop = async () => {
    await stopProcess();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const gatewayUrl = `http://127.0.0.1:${port}`;
    const devFile = path.join(dataDir, 'dev.json');
    const credentials = await until('embedded merx', logFile, exited, async () => {
      if (!existsSync(devFile)) return undefined;
      const response = await fetch(`${gatewayUrl}/readyz`);
      await response.arrayBuffer();
      return response.status === 200
        ? (JSON.parse(readFileSync(devFile, 'utf8')) as { base_url: string; grpc_url: string; operator_token: string; api_key: string })
        : undefined;
    });
    return {
      gatewayUrl,
      grpcAddress: `127.0.0.1:${credentials.grpc_url.split(':').at(-1)}`,
      publicUrl: credentials.base_url,
      operatorToken: credentials.operator_token,
      apiKey: credentials.api_key,
      adminUrl: `http://127.0.0.1:${adminPort}`,
      serviceToken,
      processes: { merx: child.pid! },
      logs: { merx: logFile },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Every service its own process on PostgreSQL and RabbitMQ, started by the same launcher as the
 * harness and `npm run start:distributed`, with production pool sizes, as a deployment of its own.
 * `gatewayEnv`: extra settings for the gateway (the limiter scenarios switch throttling on and off);
 * `webhooksEnv`: for the webhooks service (the delivery scenario lets it reach a loopback receiver).
 */
export async function startDistributedMode(
  gatewayEnv: Record<string, string> = {},
  webhooksEnv: Record<string, string> = {},
): Promise<RunningMode & { catalogUrl: string; databaseUrl: string }> {
  const database = await createTestDatabase('merx_bench');
  const deployment = `bench-${database.name.slice(-10)}`;
  const operatorToken = randomBytes(32).toString('base64url');
  const databaseUrl = new URL(database.url);
  // BENCH_PG_HOST=/var/run/postgresql reaches PostgreSQL over its Unix socket instead of loopback TCP
  if (process.env.BENCH_PG_HOST) databaseUrl.searchParams.set('host', process.env.BENCH_PG_HOST);
  // e.g. "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=100": slow plans in the server log
  if (process.env.BENCH_PG_OPTIONS) databaseUrl.searchParams.set('options', process.env.BENCH_PG_OPTIONS);
  const logDir = mkdtempSync(path.join(tmpdir(), 'merx-bench-'));
  const cleanUp = async () => {
    await removeDeploymentFromBroker(AMQP_URL, deployment).catch(() => undefined);
    await purgeThrottleState(REDIS_URL, `${deployment}:`).catch(() => undefined);
    await database.drop();
  };
  let cluster: LocalCluster;
  try {
    cluster = await startLocalCluster({
      databaseUrl: databaseUrl.toString(),
      amqpUrl: AMQP_URL,
      deployment,
      operatorToken,
      cookieSecret: randomBytes(32).toString('base64url'),
      consoleClientSecret: randomBytes(32).toString('base64url'),
      gatewayPort: 0,
      logDir,
      logLevel: 'warn',
      // the services' own default pool size unless the run asks for another, to see whether the pool is the limit
      env: process.env.BENCH_DB_POOL_SIZE ? { MERX_DB_POOL_SIZE: process.env.BENCH_DB_POOL_SIZE } : {},
      serviceEnv: { gateway: gatewayEnv, webhooks: webhooksEnv },
      execArgv: (service) => profilingArgs(service),
    });
  } catch (error) {
    await cleanUp();
    throw error;
  }
  const services = Object.values(cluster.processes);
  return {
    gatewayUrl: cluster.gatewayUrl,
    grpcAddress: cluster.grpcAddress,
    publicUrl: cluster.publicUrl,
    operatorToken,
    deployment,
    catalogUrl: cluster.processes.catalog.url,
    serviceToken: cluster.serviceToken,
    databaseUrl: database.url,
    databaseName: database.name,
    processes: Object.fromEntries(services.map((service) => [service.name, service.child.pid!])),
    logs: Object.fromEntries(services.map((service) => [service.name, service.logFile])),
    async stop() {
      await cluster.stop();
      await cleanUp();
      rmSync(logDir, { recursive: true, force: true });
    },
  };
}

/**
 * The TCP ports a process listens on, from /proc (Linux): its socket inodes matched against the
 * kernel's listening sockets. The embedded catalog sits on an ephemeral port nobody prints.
 */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const match = /^socket:\[(\d+)\]$/.exec(target);
      if (match) inodes.add(match[1]!);
    } catch {
      /* closed meanwhile */
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    const file = `/proc/${pid}/net/${table}`;
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [local, state, inode] = [fields[1], fields[3], fields[9]];
      if (state === '0A' && local && inode && inodes.has(inode)) ports.add(parseInt(local.split(':')[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}
