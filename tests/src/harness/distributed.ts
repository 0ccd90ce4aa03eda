import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import amqp from 'amqplib';
import pg from 'pg';

export const POSTGRES_ADMIN_URL = process.env.MERX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const AMQP_URL = process.env.MERX_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

export { freePort } from '@merx/kit';

export async function createTestDatabase(prefix: string): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export interface ServiceProcess {
  name: string;
  url: string;
  child: ChildProcess;
  logFile: string;
  stop(): Promise<void>;
  /** Exit code once it has exited. */
  exited: Promise<number | null>;
}

/** Polls until the service answers its readiness probe; a service that dies first fails at once with its log. */
async function waitUntilReady(service: Omit<ServiceProcess, 'stop'>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void service.exited.then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${service.name} exited during start-up:\n${tail(service.logFile)}`);
    try {
      const response = await fetch(`${service.url}/readyz`);
      if (response.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${service.name} was not ready within ${timeoutMs} ms:\n${tail(service.logFile)}`);
}

export function tail(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Starts `services/<name>/dist/src/main.js` as its own process, exactly as a container would. */
export async function startServiceProcess(name: string, env: Record<string, string>, port: number): Promise<ServiceProcess> {
  const logFile = path.join(tmpdir(), `merx-${name}-${port}.log`);
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, [path.join(repoRoot, 'services', name, 'dist/src/main.js')], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const service = { name, url: `http://127.0.0.1:${port}`, child, logFile, exited };
  await waitUntilReady(service, 30_000);
  return {
    ...service,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Durable queues outlive the processes that declared them; a test stack removes its own. */
export async function deleteQueues(queues: string[]): Promise<void> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    for (const queue of queues) await channel.deleteQueue(queue);
    await channel.close();
  } finally {
    await connection.close();
  }
}
