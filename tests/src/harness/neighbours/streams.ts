import { create } from '@bufbuild/protobuf';
import { EventService, StreamEventsRequestSchema, type StreamEventsResponse } from '@merx/contracts/grpc';
import { grpc, grpcServiceDefinitionOf } from '@merx/kit';
import { call, type TestMerchant } from '../client.js';
import { eventually } from '../wait.js';
import { bearer } from '../grpc.js';
import type { Stack } from '../stack.js';
import { latencyFigures, type LatencyFigures } from './latency.js';
import { stackMetric } from './metrics.js';

/**
 * Neighbours on StreamEvents (issue 29): merchant B holds many StreamEvents calls open while the
 * database load and merchant A's latency are measured. The helpers serve the end-to-end test and
 * a bench alike.
 */

/** Statements the stack's processes have sent to the database so far (merx_db_statements_total, every process). */
export function databaseStatements(stack: Stack): Promise<number> {
  return stackMetric(stack, 'merx_db_statements_total');
}

export interface StatementRate {
  statements: number;
  seconds: number;
  perSecond: number;
}

/** Statements per second the whole stack sends to its database over `ms`. */
export async function databaseStatementRate(stack: Stack, ms: number): Promise<StatementRate> {
  const before = await databaseStatements(stack);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const statements = (await databaseStatements(stack)) - before;
  const seconds = (performance.now() - started) / 1000;
  return { statements, seconds, perSecond: statements / seconds };
}

/**
 * Waits until the stack's statement rate is steady: two windows of `windowMs` in a row within
 * `within` of each other. Work earlier tests left behind (retries, backlogs being drained) would
 * otherwise weigh on one side of a comparison and not the other.
 */
export async function steadyDatabase(stack: Stack, { windowMs = 5_000, within = 0.1, timeoutMs = 120_000 } = {}): Promise<StatementRate> {
  const deadline = Date.now() + timeoutMs;
  let previous = await databaseStatementRate(stack, windowMs);
  for (;;) {
    const next = await databaseStatementRate(stack, windowMs);
    if (Math.abs(next.perSecond - previous.perSecond) <= within * Math.max(next.perSecond, previous.perSecond)) return next;
    if (Date.now() > deadline) throw new Error(`the database never settled: ${previous.perSecond.toFixed(1)}, then ${next.perSecond.toFixed(1)} statements/s`);
    previous = next;
  }
}

/** StreamEvents calls the webhooks service holds open now (merx_event_streams_open). */
export function eventStreamsOpen(stack: Stack): Promise<number> {
  return stackMetric(stack, 'merx_event_streams_open', { services: ['webhooks'] });
}

/** Lets one merchant hold `concurrent` StreamEvents calls at once: the operator's throttle override. */
export async function allowEventStreams(stack: Stack, merchant: TestMerchant, concurrent: number): Promise<void> {
  const set = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, {
    headers: { authorization: `Bearer ${stack.operatorToken}` },
    body: { event_streams: { concurrent } },
  });
  if (set.status !== 200) throw new Error(`the throttle override was refused: ${set.status} ${set.text}`);
}

export interface StreamsAttackOptions {
  /** Client connections the streams are spread over (the edge caps the streams of one connection). */
  connections?: number;
  /** How long a stream refused with RESOURCE_EXHAUSTED (an override the gateway has not learnt yet) is retried. */
  refusedForMs?: number;
}

interface HeldStream {
  call: grpc.ClientReadableStream<StreamEventsResponse> | undefined;
  ids: Set<string>;
  /** Until when a refusal for the cap is taken for an override not yet known everywhere. */
  retryUntil: number;
  ended: boolean;
}

/**
 * One merchant's StreamEvents calls, held open through the public gRPC port with real grpc-js
 * clients until `close`: the streams of the attack. A stream the gateway refuses for its cap is
 * opened again until `refusedForMs` has passed (the override travels as an event); any other
 * error ends the attack with that error.
 */
export class StreamsAttack {
  private readonly streams: HeldStream[] = [];
  private readonly clients: grpc.Client[];
  private failure: Error | undefined;
  private closed = false;

  private constructor(
    stack: Stack,
    readonly merchant: TestMerchant,
    private readonly options: StreamsAttackOptions,
  ) {
    const Client = grpc.makeGenericClientConstructor(grpcServiceDefinitionOf(EventService), EventService.typeName);
    // A pool of their own per client: otherwise grpc-js shares one connection between identical clients.
    this.clients = Array.from(
      { length: options.connections ?? 10 },
      () => new Client(stack.grpcAddress, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
    );
  }

  static start(stack: Stack, merchant: TestMerchant, options: StreamsAttackOptions = {}): StreamsAttack {
    return new StreamsAttack(stack, merchant, options);
  }

  /** Opens `count` more streams. */
  open(count: number): void {
    for (let i = 0; i < count; i++) {
      const stream: HeldStream = { call: undefined, ids: new Set(), retryUntil: Date.now() + (this.options.refusedForMs ?? 15_000), ended: false };
      this.streams.push(stream);
      this.connect(stream, this.streams.length - 1);
    }
  }

  get size(): number {
    return this.streams.length;
  }

  /** Throws what ended a stream other than the client or a refusal for the cap. */
  check(): void {
    if (this.failure) throw this.failure;
  }

  /** Streams that have received the event. */
  receivedBy(eventId: string): number {
    return this.streams.filter((stream) => stream.ids.has(eventId)).length;
  }

  /** Events received over every stream, counting each stream's own. */
  get received(): number {
    return this.streams.reduce((sum, stream) => sum + stream.ids.size, 0);
  }

  /**
   * Opens streams until `total` are open at the webhooks service (`openBefore` being those of
   * others), in waves of `wave` as a client pool would open them: a thousand at once would be a
   * test of the gateway's limiter store.
   */
  async holdOpen(stack: Stack, total: number, { openBefore, wave = 100 }: { openBefore: number; wave?: number }): Promise<void> {
    const openAtService = (count: number) =>
      eventually(
        async () => {
          this.check();
          return eventStreamsOpen(stack);
        },
        (open) => open === openBefore + count,
        `${count} streams of B open at the webhooks service`,
        60_000,
        200,
      );
    if (this.size >= total) this.closeAllBut(total);
    while (this.size < total) {
      this.open(Math.min(wave, total - this.size));
      await openAtService(this.size);
    }
    await openAtService(total);
  }

  /** Ends the streams opened last, keeping the first `keep`. */
  closeAllBut(keep: number): void {
    for (const stream of this.streams.splice(keep)) {
      stream.ended = true;
      stream.call?.cancel();
    }
  }

  close(): void {
    this.closed = true;
    for (const stream of this.streams) stream.call?.cancel();
    for (const client of this.clients) client.close();
  }

  private connect(stream: HeldStream, index: number): void {
    if (this.closed || stream.ended) return;
    const client = this.clients[index % this.clients.length] as grpc.Client & Record<string, any>;
    // No cursor: each follows from the present, as a consumer that only wants what happens next.
    const request = create(StreamEventsRequestSchema, { topics: index % 2 === 0 ? ['products'] : [] });
    const call: grpc.ClientReadableStream<StreamEventsResponse> = client.StreamEvents(request, bearer(this.merchant.token));
    stream.call = call;
    call.on('data', (message: StreamEventsResponse) => stream.ids.add(message.event!.id));
    call.on('error', (error: grpc.ServiceError) => {
      if (this.closed || stream.ended || error.code === grpc.status.CANCELLED) return;
      if (error.code === grpc.status.RESOURCE_EXHAUSTED && Date.now() < stream.retryUntil) {
        setTimeout(() => this.connect(stream, index), 100);
        return;
      }
      this.failure ??= new Error(`a stream of the attack ended: ${grpc.status[error.code]} ${error.details}`);
    });
  }
}

/** A merchant's `GET /api/v1/merchant`, `count` times one after another, each timed from request to the last byte. */
export async function timeMerchantReads(stack: Stack, merchant: TestMerchant, count: number): Promise<LatencyFigures> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await fetch(`${stack.baseUrl}/api/v1/merchant`, { headers: { authorization: `Bearer ${merchant.token}` } });
    await response.arrayBuffer();
    samples.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`GET /api/v1/merchant answered ${response.status} for merchant ${merchant.merchantId}`);
  }
  return latencyFigures(samples);
}

export interface StreamNeighbours {
  quiet: LatencyFigures;
  attacked: LatencyFigures;
  /** The stack's statements per second with one stream of B, with all of them, and with one again. */
  oneStream: StatementRate;
  allStreams: StatementRate;
  oneStreamAfter: StatementRate;
  /** B's streams, left open (one of them): the caller closes them. */
  attack: StreamsAttack;
  openBefore: number;
}

/**
 * The comparison of the neighbours test and bench: the stack's database statements per second
 * with one of B's streams and with `streams` of them (one again after), and A's `GET
 * /api/v1/merchant` over `samples` reads quiet and while B holds them all. B's cap is raised first.
 */
export async function measureStreamNeighbours(
  stack: Stack,
  merchants: { a: TestMerchant; b: TestMerchant },
  options: { streams: number; samples: number; windowMs: number },
): Promise<StreamNeighbours> {
  const { a, b } = merchants;
  await allowEventStreams(stack, b, options.streams);
  const openBefore = await eventStreamsOpen(stack);
  // A warm start (connections, caches, plans), nothing left over from earlier work, then A alone.
  await timeMerchantReads(stack, a, 20);
  await steadyDatabase(stack);
  const quiet = await timeMerchantReads(stack, a, options.samples);
  const attack = StreamsAttack.start(stack, b);
  try {
    await attack.holdOpen(stack, 1, { openBefore });
    const oneStream = await databaseStatementRate(stack, options.windowMs);
    await attack.holdOpen(stack, options.streams, { openBefore });
    const allStreams = await databaseStatementRate(stack, options.windowMs);
    const attacked = await timeMerchantReads(stack, a, options.samples);
    attack.check();
    // The single stream once more, after: a drift of the stack's own work shows on both sides.
    await attack.holdOpen(stack, 1, { openBefore });
    const oneStreamAfter = await databaseStatementRate(stack, options.windowMs);
    return { quiet, attacked, oneStream, allStreams, oneStreamAfter, attack, openBefore };
  } catch (error) {
    attack.close();
    throw error;
  }
}
