import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@merx/kit';
import amqp from 'amqplib';
import pg from 'pg';

/**
 * PostgreSQL, RabbitMQ and Redis of the fault suite's own: servers it may stop, crash and restart
 * without touching the ones other suites (and other runs on the machine) share. Each lives in a
 * temporary directory on free ports and is gone after `destroy()`.
 */

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const exitOf = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));

/** The newest PostgreSQL server binaries of the Debian layout, if installed. */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((version) => existsSync(path.join(base, version, 'bin/initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(base, versions[0], 'bin') : undefined;
}

export const RABBITMQ_BIN_DIR = '/usr/lib/rabbitmq/bin';

/** What the fault suite needs installed; empty when it can run. */
export function missingPrivateServerBinaries(): string[] {
  const missing: string[] = [];
  if (!postgresBinDir()) missing.push('PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb)');
  if (!existsSync(path.join(RABBITMQ_BIN_DIR, 'rabbitmq-server'))) missing.push(`RabbitMQ (${RABBITMQ_BIN_DIR}/rabbitmq-server)`);
  if (!['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some(existsSync)) missing.push('redis-server');
  return missing;
}

export interface PrivatePostgres {
  /** The `postgres` database as the `postgres` user (trust authentication). */
  url: string;
  /** `immediate` is a crash (recovery from the WAL at the next start); `fast` a clean shutdown. */
  stop(mode: 'immediate' | 'fast'): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * A PostgreSQL cluster of its own (initdb, pg_ctl). PostgreSQL refuses to run as root, so as root
 * it runs as the `postgres` user the Debian package creates. fsync is off: the suite crashes the
 * server, never the machine, so the page cache keeps every committed write.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql');
  const dir = await mkdtemp(path.join(tmpdir(), 'merx-fault-pg-'));
  if (isRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(group.trim()));
  }
  const port = await freePort();
  const pgTool = (tool: string, args: string[]) =>
    isRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args]) : run(path.join(bin, tool), args);
  const data = path.join(dir, 'data');
  await pgTool('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const answers = async () => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const start = async () => {
    await pgTool('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
    await waitUntil(answers, 'the private PostgreSQL answering', 30_000);
  };
  const stop = async (mode: 'immediate' | 'fast') => {
    await pgTool('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
  };
  await start();
  return {
    url,
    stop,
    start,
    async destroy() {
      await stop('immediate').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRabbitMq {
  url: string;
  node: string;
  /** `rabbitmqctl stop`: what a restart by an operator or a service manager does first. */
  stop(): Promise<void>;
  /** Starts the node again on the same data directory (durable queues and persistent messages survive) and waits until AMQP answers. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * A RabbitMQ node of its own: its own node name, ports, data and log directories and Erlang
 * cookie (HOME), no plugins. It runs the release's own scripts directly, not the Debian wrapper,
 * which switches to the `rabbitmq` user and its shared cookie.
 */
export async function startPrivateRabbitMq(name: string): Promise<PrivateRabbitMq> {
  const dir = await mkdtemp(path.join(tmpdir(), 'merx-fault-rabbitmq-'));
  const port = await freePort();
  const distPort = await freePort();
  const node = `${name}@localhost`;
  await mkdir(path.join(dir, 'home'));
  await writeFile(path.join(dir, 'rabbitmq.conf'), `listeners.tcp.default = 127.0.0.1:${port}\nloopback_users = none\n`);
  await writeFile(path.join(dir, 'enabled_plugins'), '[].\n');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: path.join(dir, 'home'),
    RABBITMQ_NODENAME: node,
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_PID_FILE: path.join(dir, 'rabbitmq.pid'),
  };
  const url = `amqp://guest:guest@127.0.0.1:${port}`;
  let server: ChildProcess | undefined;
  const answers = async () => {
    try {
      const connection = await amqp.connect(url);
      await connection.close();
      return true;
    } catch {
      return false;
    }
  };
  const start = async () => {
    // Its own process group, so destroy() can end the Erlang VM with the script that started it.
    const started = spawn(path.join(RABBITMQ_BIN_DIR, 'rabbitmq-server'), [], { cwd: dir, env, stdio: 'ignore', detached: true });
    server = started;
    let exited = false;
    void exitOf(started).then(() => (exited = true));
    // A first boot takes 10-60 s on a busy two-core machine; a restart on existing data fewer.
    await waitUntil(
      async () => {
        if (exited) throw new Error(`the private RabbitMQ node ${node} exited during start-up; see ${path.join(dir, 'log')}`);
        return answers();
      },
      `the private RabbitMQ node ${node} answering`,
      120_000,
    );
  };
  const signalServer = (signal: NodeJS.Signals) => {
    if (!server?.pid || server.exitCode !== null || server.signalCode !== null) return;
    try {
      process.kill(-server.pid, signal);
    } catch {
      /* already gone */
    }
  };
  const stop = async () => {
    // Only the cookie's HOME: with the node's RABBITMQ_* settings the CLI would claim the node's own distribution port.
    await run(path.join(RABBITMQ_BIN_DIR, 'rabbitmqctl'), ['-n', node, 'stop'], { env: { PATH: env.PATH!, HOME: env.HOME! }, timeout: 60_000 }).catch(() =>
      signalServer('SIGTERM'),
    );
    if (!server) return;
    const killer = setTimeout(() => signalServer('SIGKILL'), 30_000);
    await exitOf(server);
    clearTimeout(killer);
  };
  await start();
  return {
    url,
    node,
    start,
    stop,
    async destroy() {
      await stop().catch(() => signalServer('SIGKILL'));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string;
  /** SIGSTOP: the server holds its connections and answers nothing, as a hung or partitioned one does. */
  freeze(): void;
  thaw(): void;
  destroy(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  await waitUntil(
    async () => {
      if (server.exitCode !== null) throw new Error('the private redis-server exited during start-up');
      try {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'ping'], { timeout: 2_000 });
        return stdout.trim() === 'PONG';
      } catch {
        return false;
      }
    },
    'the private Redis answering',
    20_000,
  );
  return {
    url,
    freeze: () => server.kill('SIGSTOP'),
    thaw: () => server.kill('SIGCONT'),
    async destroy() {
      server.kill('SIGCONT');
      server.kill('SIGKILL');
      await exitOf(server);
    },
  };
}
