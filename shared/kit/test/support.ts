import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type { PGlite } from '@electric-sql/pglite';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import {
  createLogger,
  createPostgresDb,
  DEFAULT_RETRY_POLICY,
  openPglite,
  poisonQueueOf,
  retryDelaysOf,
  retryQueueOf,
  type Db,
  type RetryPolicy,
} from '../src/index.js';

export const silentLogger = createLogger('kit-test', 'silent');

export const AMQP_URL = process.env.TEST_AMQP_URL ?? process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

const DATABASE_URLS = [
  process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test',
  'postgres://postgres@127.0.0.1:5432/test',
];

/** A name no other run of these tests (or anyone else's) uses; schema and routing-key safe. */
export function uniqueName(prefix: string): string {
  return `${prefix}${randomBytes(5).toString('hex')}`;
}

let workingDatabaseUrl: string | undefined;

/** The machine's PostgreSQL accepts root on some setups and only postgres on others. */
export async function connectPostgres(options: { maxConnections?: number } = {}): Promise<Db> {
  const candidates = workingDatabaseUrl ? [workingDatabaseUrl] : DATABASE_URLS;
  let lastError: unknown;
  for (const url of candidates) {
    const db = createPostgresDb(url, { maxConnections: options.maxConnections ?? 10, applicationName: 'merx-kit-test' });
    try {
      await db.ping();
      workingDatabaseUrl = url;
      return db;
    } catch (error) {
      lastError = error;
      await db.close();
    }
  }
  throw lastError;
}

let pglite: Promise<PGlite> | undefined;

/** PGlite takes seconds to start on a busy machine: suites share one instance, each in its own schema. */
export function sharedPglite(): Promise<PGlite> {
  return (pglite ??= openPglite(undefined));
}

after(async () => {
  if (pglite) await (await pglite).close();
});

export async function dropSchema(db: Db, schema: string): Promise<void> {
  assert.match(schema, /^kit_test_[0-9a-f]+$/);
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/** Polls a condition; a failure fails the test with `what` instead of hanging it. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Rejects after `ms` so an awaited promise that never settles fails the test. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A plain amqplib connection, for what the bus under test must not do for us. */
export async function withAmqpConnection<T>(work: (connection: ChannelModel) => Promise<T>): Promise<T> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    return await work(connection);
  } finally {
    await connection.close().catch(() => undefined);
  }
}

export async function withAmqpChannel<T>(work: (channel: Channel) => Promise<T>): Promise<T> {
  return withAmqpConnection(async (connection) => {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined); // a 404 from checkQueue closes the channel; the caller sees the rejection
    return work(channel);
  });
}

export async function deleteQueues(...queues: string[]): Promise<void> {
  await withAmqpChannel(async (channel) => {
    for (const queue of queues) await channel.deleteQueue(queue);
  });
}

/** A deployment name of this run's own, so its exchange and queues are apart from every other run's. */
export const testDeployment = () => uniqueName('kt-');

/** A work queue by its broker name, with the poison and retry queues the bus declared beside it. */
export async function deleteWorkQueue(channel: Channel, queue: string, retry: RetryPolicy = DEFAULT_RETRY_POLICY): Promise<void> {
  for (const name of [queue, poisonQueueOf(queue), ...retryDelaysOf(retry).map((ms) => retryQueueOf(queue, ms))]) await channel.deleteQueue(name);
}

/** What a test deployment left on the broker: its work queues (by broker name) and its exchange. */
export async function deleteDeployment(deployment: string, brokerQueues: string[], retry: RetryPolicy = DEFAULT_RETRY_POLICY): Promise<void> {
  await withAmqpChannel(async (channel) => {
    for (const queue of brokerQueues) await deleteWorkQueue(channel, queue, retry);
    await channel.deleteExchange(`${deployment}.events`);
  });
}

/**
 * A TCP relay between a client and RabbitMQ that the test can cut (every live socket destroyed,
 * as when a network link drops) or make refuse new connections (broker unreachable).
 */
export class TcpProxy {
  accepted = 0;
  refused = 0;
  refusing = false;
  /** While set, new connections are accepted but held, unanswered, until `release()`. */
  stalling = false;
  private readonly held: net.Socket[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
  ) {
    server.on('connection', (client) => this.relay(client));
  }

  static async start(targetUrl: string = AMQP_URL): Promise<TcpProxy> {
    const url = new URL(targetUrl);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new TcpProxy(server, { host: url.hostname, port: Number(url.port || 5672) });
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** The target URL (credentials, vhost) with the proxy in place of the broker. */
  urlFor(targetUrl: string = AMQP_URL): string {
    const url = new URL(targetUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  get liveConnections(): number {
    return this.sockets.size / 2;
  }

  get heldConnections(): number {
    return this.held.length;
  }

  release(): void {
    this.stalling = false;
    for (const client of this.held.splice(0)) if (!client.destroyed) this.relay(client);
  }

  cut(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  async close(): Promise<void> {
    for (const client of this.held.splice(0)) client.destroy();
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: net.Socket): void {
    if (this.refusing) {
      this.refused++;
      client.destroy();
      return;
    }
    if (this.stalling) {
      this.held.push(client);
      client.on('error', () => undefined);
      return;
    }
    this.accepted++;
    const upstream = net.connect(this.target.port, this.target.host);
    for (const [socket, peer] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      this.sockets.add(socket);
      socket.on('error', () => peer.destroy());
      socket.on('close', () => {
        this.sockets.delete(socket);
        peer.destroy();
      });
      socket.pipe(peer);
    }
  }
}
