import http2 from 'node:http2';
import net from 'node:net';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  BatchCreateProductsRequestSchema,
  ProductInputSchema,
  StreamEventsRequestSchema,
  type BatchCreateProductsResponse,
  type StreamEventsResponse,
} from '@merx/contracts/grpc';
import { grpc } from '@merx/kit';
import type { TestMerchant } from '../client.js';
import { bearer } from '../grpc.js';
import type { Stack } from '../stack.js';
import { latencyFigures, type LatencyFigures } from './latency.js';
import { stackMetric } from './metrics.js';

/**
 * Neighbours on the public gRPC port (issue 29): connections that never authenticate, bulk
 * batches, and StreamEvents held open, beside a merchant whose latency is measured. The helpers
 * serve the end-to-end test (tests/e2e/neighbours-grpc.test.ts) and a bench alike.
 */

// ---- unary calls and batches ----------------------------------------------------------------------

const productInput = (sku: string) => create(ProductInputSchema, { sku, title: `Product ${sku}`, price: '10.00', currency: 'EUR' });

export interface BatchOutcome {
  elapsedMs: number;
  response?: BatchCreateProductsResponse;
  error?: grpc.ServiceError;
}

/** One BatchCreateProducts call of `count` new products (skus `<prefix>-<n>`), timed; `deadlineMs` from now if given. */
export function timedBatch(
  products: grpc.Client & Record<string, any>,
  merchant: TestMerchant,
  prefix: string,
  count: number,
  deadlineMs?: number,
): Promise<BatchOutcome> {
  const request = create(BatchCreateProductsRequestSchema, { products: Array.from({ length: count }, (_, index) => productInput(`${prefix}-${index}`)) });
  const started = performance.now();
  return new Promise((resolve) =>
    products.BatchCreateProducts(
      request,
      bearer(merchant.token),
      deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs },
      (error: grpc.ServiceError | null, response: BatchCreateProductsResponse) =>
        resolve({ elapsedMs: performance.now() - started, ...(error ? { error } : { response }) }),
    ),
  );
}

/** A merchant's unary gRPC calls (BatchCreateProducts of one product), one after another: their latencies. */
export async function timeUnaryCalls(
  products: grpc.Client & Record<string, any>,
  merchant: TestMerchant,
  prefix: string,
  count: number,
): Promise<LatencyFigures> {
  const samples: number[] = [];
  for (let index = 0; index < count; index++) {
    const outcome = await timedBatch(products, merchant, `${prefix}-${index}`, 1);
    if (outcome.error) throw new Error(`a unary call of the measured merchant failed: ${grpc.status[outcome.error.code]} ${outcome.error.details}`);
    samples.push(outcome.elapsedMs);
  }
  return latencyFigures(samples);
}

// ---- connections that never authenticate --------------------------------------------------------

export type AttackKind = 'silent' | 'prefaceOnly' | 'refusedCalls';

const hostAndPort = (address: string) => {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(address.slice(colon + 1)) };
};

/** A TCP connection that sends nothing, once connected. */
export async function silentConnection(address: string): Promise<net.Socket> {
  const { host, port } = hostAndPort(address);
  const socket = net.connect(port, host);
  socket.on('error', () => undefined);
  // Whatever the server sends (its SETTINGS) is read and dropped, as a peer that never answers would.
  socket.on('data', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('close', () => reject(new Error('closed before it connected')));
  });
  return socket;
}

/** An HTTP/2 session that sent the preface and its SETTINGS, once the server's SETTINGS came; no stream. */
export async function prefaceOnlySession(address: string): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    session.once('remoteSettings', () => resolve());
    session.once('close', () => reject(new Error('closed before the server spoke')));
  });
  return session;
}

/** One unary call on a raw session with a token that is no token: its grpc-status (-1 when the stream broke). */
export function refusedCall(session: http2.ClientHttp2Session, path = '/merx.v1.ProductService/BatchCreateProducts'): Promise<number> {
  return new Promise((resolve) => {
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', authorization: 'Bearer not-a-token' });
    } catch {
      return resolve(-1);
    }
    const message = toBinary(BatchCreateProductsRequestSchema, create(BatchCreateProductsRequestSchema, { products: [productInput('NEVER')] }));
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    let status = -1;
    const statusOf = (headers: http2.IncomingHttpHeaders) => {
      if (headers['grpc-status'] !== undefined) status = Number(headers['grpc-status']);
    };
    stream.on('response', statusOf);
    stream.on('trailers', statusOf);
    stream.on('data', () => undefined);
    stream.on('error', () => undefined);
    stream.on('close', () => resolve(status));
    stream.end(frame);
  });
}

interface Held {
  kind: AttackKind;
  openedAt: number;
  destroy(): void;
}

/**
 * Connections that never authenticate, held against the public gRPC port: TCP connections that
 * send nothing, HTTP/2 sessions with the preface and no stream, and sessions calling with a bad
 * token every `refusedEveryMs` (each call refused UNAUTHENTICATED). While `replenishing`, each
 * one the gateway closes is opened again, so the attack lasts as long as it is wanted. How long
 * each lived, from connected to closed as the attacker saw it, is kept by kind.
 */
export class ConnectionAttack {
  readonly lifetimes: Record<AttackKind, number[]> = { silent: [], prefaceOnly: [], refusedCalls: [] };
  /** Calls answered UNAUTHENTICATED, and answered otherwise (which would be a failure). */
  unauthenticated = 0;
  otherAnswers: number[] = [];
  private replenishing = true;
  private closed = false;
  private readonly held = new Set<Held>();
  private opening = 0;
  private failure: Error | undefined;

  private constructor(
    private readonly address: string,
    private readonly refusedEveryMs: number,
  ) {}

  static async start(address: string, counts: Partial<Record<AttackKind, number>>, options: { refusedEveryMs?: number } = {}): Promise<ConnectionAttack> {
    const attack = new ConnectionAttack(address, options.refusedEveryMs ?? 200);
    const opening: Array<Promise<void>> = [];
    for (const kind of ['silent', 'prefaceOnly', 'refusedCalls'] as const)
      for (let index = 0; index < (counts[kind] ?? 0); index++) opening.push(attack.openOne(kind));
    await Promise.all(opening);
    attack.check();
    return attack;
  }

  /** Connections of the attack open now. */
  get open(): number {
    return this.held.size;
  }

  /** Throws what went wrong with the attack itself (a connection that could not be made). */
  check(): void {
    if (this.failure) throw this.failure;
  }

  stopReplenishing(): void {
    this.replenishing = false;
  }

  /** Resolves once the gateway has closed every connection of the attack (none is opened again meanwhile). */
  async allClosed(timeoutMs: number): Promise<void> {
    this.stopReplenishing();
    const deadline = Date.now() + timeoutMs;
    while (this.held.size > 0 || this.opening > 0) {
      if (Date.now() > deadline) throw new Error(`${this.held.size} connections of the attack were still open after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Ends every connection still open (a failing test's cleanup). */
  close(): void {
    this.closed = true;
    this.replenishing = false;
    for (const each of this.held) each.destroy();
    this.held.clear();
  }

  private async openOne(kind: AttackKind): Promise<void> {
    if (this.closed) return;
    this.opening += 1;
    try {
      const connection = kind === 'silent' ? await silentConnection(this.address) : await prefaceOnlySession(this.address);
      if (this.closed) {
        connection.destroy();
        return;
      }
      const held: Held = { kind, openedAt: performance.now(), destroy: () => connection.destroy() };
      this.held.add(held);
      connection.once('close', () => {
        if (!this.held.delete(held)) return;
        this.lifetimes[kind].push(performance.now() - held.openedAt);
        if (this.replenishing) void this.openOne(kind);
      });
      if (kind === 'refusedCalls') void this.callRefused(connection as http2.ClientHttp2Session);
    } catch (error) {
      this.failure ??= new Error(`the attack could not open a ${kind} connection: ${(error as Error).message}`);
    } finally {
      this.opening -= 1;
    }
  }

  private async callRefused(session: http2.ClientHttp2Session): Promise<void> {
    while (!session.closed && !session.destroyed) {
      const status = await refusedCall(session);
      if (status === grpc.status.UNAUTHENTICATED) this.unauthenticated += 1;
      else if (status !== -1) this.otherAnswers.push(status);
      await new Promise((resolve) => setTimeout(resolve, this.refusedEveryMs));
    }
  }
}

export interface ConnectionNeighbours {
  quiet: LatencyFigures;
  attacked: LatencyFigures;
  /** The attack, still replenishing: the caller waits for `allClosed` or closes it. */
  attack: ConnectionAttack;
  /** Connections of the attack open when A's last call was answered. */
  openAtTheEnd: number;
}

/**
 * The comparison of the neighbours test and bench: A's unary BatchCreateProducts calls over
 * `samples` calls quiet, then while connections that never authenticate (`counts` of each kind)
 * are held against the gateway, each opened again as it is closed.
 */
export async function measureConnectionNeighbours(
  stack: Stack,
  products: grpc.Client & Record<string, any>,
  a: TestMerchant,
  options: { samples: number; counts: Partial<Record<AttackKind, number>> },
): Promise<ConnectionNeighbours> {
  await timeUnaryCalls(products, a, 'NB-WARM', 20);
  const quiet = await timeUnaryCalls(products, a, 'NB-QUIET', options.samples);
  const attack = await ConnectionAttack.start(stack.grpcAddress, options.counts);
  try {
    const attacked = await timeUnaryCalls(products, a, 'NB-ATTACKED', options.samples);
    attack.check();
    return { quiet, attacked, attack, openAtTheEnd: attack.open };
  } catch (error) {
    attack.close();
    throw error;
  }
}

// ---- StreamEvents -------------------------------------------------------------------------------

export interface HeldEventStream {
  call: grpc.ClientReadableStream<StreamEventsResponse>;
  events: string[];
  /** The status it ended with, once it has. */
  ended: Promise<grpc.StatusObject>;
}

/**
 * A StreamEvents call of `merchant` for `topics`, from `startTime` (every event since, then live:
 * unlike "from now", it cannot miss an event made while the call was on its way), or from now.
 */
export function openEventStream(
  events: grpc.Client & Record<string, any>,
  merchant: TestMerchant,
  options: { topics?: string[]; startTime?: Date } = {},
): HeldEventStream {
  const request = create(StreamEventsRequestSchema, {
    topics: options.topics ?? ['products'],
    ...(options.startTime ? { cursor: { case: 'startTime' as const, value: timestampFromDate(options.startTime) } } : {}),
  });
  const call: grpc.ClientReadableStream<StreamEventsResponse> = events.StreamEvents(request, bearer(merchant.token));
  const held: HeldEventStream = { call, events: [], ended: new Promise((resolve) => call.on('status', resolve)) };
  call.on('data', (message: StreamEventsResponse) => held.events.push(message.event!.id));
  call.on('error', () => undefined);
  return held;
}

/** The status of a StreamEvents call that ends before `withinMs` (a refusal), or undefined while it stays open. */
export async function refusalOf(stream: HeldEventStream, withinMs: number): Promise<grpc.StatusObject | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const open = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), withinMs)));
  try {
    return await Promise.race([stream.ended, open]);
  } finally {
    clearTimeout(timer);
  }
}

// ---- the gateway's own figures ------------------------------------------------------------------

/** A metric of the gateway's admin listener, every sample whose labels include `labels` summed. */
export function gatewayMetric(stack: Stack, name: string, labels = ''): Promise<number> {
  return stackMetric(stack, name, { services: ['gateway'], labels });
}
