/**
 * The gRPC helpers' engine, loaded on the first gRPC call (see connection.ts): one grpc-js channel,
 * the protobuf-es messages generated from shared/contracts/proto at build, the conversions between
 * them and the REST shapes, and whole-call failures as the SDK's typed errors.
 */
import type { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type DescMessage, type JsonObject, type DescMethod, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { anyUnpack, timestampDate, timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { ConnectionError, MerxError, TimeoutError, type FieldError, type ProblemDocument } from '../core/errors.js';
import type { Product, RecordInput } from '../generated/types.js';
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from '../proto/google/rpc/error_details_pb.js';
import { StatusSchema } from '../proto/google/rpc/status_pb.js';
import { EventService, type Event as EventMessage } from '../proto/merx/v1/events_pb.js';
import type { Problem } from '../proto/merx/v1/problems_pb.js';
import {
  ProductInputSchema,
  ProductResult_Outcome,
  ProductService,
  ProductStatus,
  type Product as ProductMessage,
  type ProductResult as ProductResultMessage,
} from '../proto/merx/v1/products_pb.js';
import { IngestRecordsResponse_Status, RecordService, RecordType, type IngestRecordsResponse } from '../proto/merx/v1/records_pb.js';
import type { GrpcConnection } from './connection.js';
import { PageReader } from './page-reader.js';
import type {
  BulkProductInput,
  EventStreamParams,
  ExportFilters,
  GrpcCallOptions,
  ItemProblem,
  ProductResult,
  RecordAck,
  StreamedEvent,
  UpsertOptions,
  BulkWriteOptions,
} from './types.js';

const DEFAULT_WINDOW = 1_000;
/**
 * Items per UpsertProducts and IngestRecords message, at most, unless the caller says otherwise:
 * as with export pages, framing a message per item is most of a bulk write's cost at the edge.
 */
export const DEFAULT_WRITE_PAGE_SIZE = 500;
const MAX_WRITE_PAGE_SIZE = 1_000;
/**
 * Products per message of an export unless the caller says otherwise: large enough that framing a
 * message costs little per product (export runs several times faster than one per message), small
 * enough that a message stays a fraction of a MiB.
 */
export const DEFAULT_EXPORT_PAGE_SIZE = 500;
const DEFAULT_MAX_RECONNECTS = 10;
const MAX_BACKOFF_MS = 8_000;
/** Above the server's 4 MiB so the server, not this client, says a message is too large. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

type Source<T> = AsyncIterable<T> | Iterable<T>;

export class GrpcRuntime {
  private readonly client: grpc.Client;

  constructor(private readonly connection: GrpcConnection) {
    const { target } = connection.settings;
    const credentials = target.tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
    this.client = new grpc.Client(target.address, credentials, {
      'grpc.primary_user_agent': connection.userAgent,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      // Streams resume through this runtime's own reconnects (by sku, external_id or cursor), not
      // grpc-js's retry layer. Its buffer acknowledged each write before it was sent and copied
      // itself after every message, a cost that grows with the stream; without it each write
      // completes when it reaches the transport, so a bulk upload is paced by the server.
      'grpc.enable_retries': 0,
      'grpc.per_rpc_retry_buffer_size': 0,
    });
  }

  close(): void {
    this.client.close();
  }

  // ---- ProductService -------------------------------------------------------------------------

  async batchCreateProducts(items: BulkProductInput[], options: GrpcCallOptions): Promise<ProductResult[]> {
    const method = ProductService.method.batchCreateProducts;
    const request = create(method.input, { products: items.map(productInputOf) });
    const answer = await this.withFreshToken(options, (metadata) => this.unary(method, request, metadata, options));
    return answer.results.map(productResultOf);
  }

  exportProducts(filters: ExportFilters): AsyncIterable<Product> {
    const method = ProductService.method.exportProducts;
    const pageSize = filters.pageSize ?? DEFAULT_EXPORT_PAGE_SIZE;
    if (!Number.isInteger(pageSize) || pageSize < 1) throw new MerxError('pageSize must be a whole number of products, 1 or more');
    const request = create(method.input, {
      status: filters.status === undefined ? ProductStatus.UNSPECIFIED : productStatusOf(filters.status),
      ...(filters.sku === undefined ? {} : { sku: filters.sku }),
      ...(filters.currency === undefined ? {} : { currency: filters.currency }),
      pageSize,
    });
    // Read ahead about as many products as one product per message would, but never less than two
    // pages, so the next page is on its way while the caller works through this one.
    const readAhead = Math.max(2, Math.ceil(READ_AHEAD / pageSize));
    return flatMapAsync(this.serverStream(method, request, filters, readAhead), (message) =>
      // A server from before pages answers with `product`, one per message.
      (message.product ? [message.product] : message.products).map(restProductOf),
    );
  }

  /**
   * Writes items as the iterable gives them (never more than `window` unanswered) and yields one
   * result per item in order. A call refused at the start for its token is opened again once with
   * a fresh token, sending the items it took again. A connection lost midway is a ConnectionError:
   * the caller sends the same items again, which upserting by sku makes safe.
   */
  async *upsertProducts(source: Source<BulkProductInput>, options: UpsertOptions): AsyncGenerator<ProductResult> {
    const method = ProductService.method.upsertProducts;
    const window = options.window ?? DEFAULT_WINDOW;
    if (!Number.isInteger(window) || window < 1) throw new MerxError('window must be a whole number of items, 1 or more');
    const pageSize = writePageSizeOf(options);
    const items = new PageReader(iteratorOf(source));
    /** Messages sent and not yet answered, with how many items each carries. */
    const unanswered: Array<{ message: MessageShape<typeof method.input>; items: number }> = [];
    let unansweredItems = 0;
    let sourceDone = false;
    let answered = 0;
    let refreshedToken = false;
    try {
      for (;;) {
        const token = await this.connection.settings.tokens.get();
        const call = this.client.makeBidiStreamRequest(pathOf(method), serializer(method.input), deserializer(method.output), bearer(token), {});
        const cancel = () => call.cancel();
        options.signal?.addEventListener('abort', cancel, { once: true });
        let answeredHere = 0;
        let space = signal();
        // The writer sends what the last call left unanswered, then reads the iterable as answers free room.
        const writer = (async () => {
          const ended = closed(call);
          for (const { message } of [...unanswered]) if (!call.write(message)) await Promise.race([drained(call), ended]);
          while (!sourceDone && !ended.settled) {
            if (unansweredItems >= window) {
              await Promise.race([space.wait(), ended]);
              continue;
            }
            const page = (await items.page(Math.min(pageSize, window - unansweredItems))).map(productInputOf);
            if (page.length === 0) {
              sourceDone = true;
              break;
            }
            // One item goes as `product`, as every server takes it; more go as a page.
            const message = create(method.input, page.length === 1 ? { product: page[0]! } : { products: page });
            unanswered.push({ message, items: page.length });
            unansweredItems += page.length;
            if (ended.settled) break; // sent by the next call
            if (!call.write(message)) await Promise.race([drained(call), ended]);
          }
          if (!ended.settled) call.end();
        })();
        const writerFailure: { error?: unknown; failed?: true } = {};
        writer.catch((error: unknown) => {
          // The iterable threw: stop the call, and the loop throws what it threw.
          writerFailure.error = error;
          writerFailure.failed = true;
          call.cancel();
        });
        const rethrowWriterFailure = () => {
          if (writerFailure.failed) throw writerFailure.error;
        };
        try {
          for await (const answer of answersOf(call)) {
            const sent = unanswered.shift();
            unansweredItems -= sent?.items ?? 0;
            answeredHere += 1;
            space.fire();
            space = signal();
            for (const result of answer.result ? [answer.result] : answer.results) yield productResultOf(result, answered++);
          }
          await writer;
          return;
        } catch (error) {
          options.signal?.removeEventListener('abort', cancel);
          call.cancel();
          rethrowWriterFailure();
          if (options.signal?.aborted) throw options.signal.reason;
          const status = (error as grpc.ServiceError).code;
          if (status !== grpc.status.UNAUTHENTICATED || answeredHere > 0 || refreshedToken) throw merxErrorOf(error);
          // The next call must not read the iterable while this writer still does.
          await writer.catch(() => undefined);
          rethrowWriterFailure();
          refreshedToken = true;
          this.connection.settings.tokens.invalidate(token);
          continue;
        } finally {
          options.signal?.removeEventListener('abort', cancel);
          call.cancel(); // a consumer that stopped early: nothing more is written or read
        }
      }
    } finally {
      if (!sourceDone) await items.return();
    }
  }

  // ---- RecordService --------------------------------------------------------------------------

  async *ingestRecords(sourceId: string, source: Source<RecordInput>, options: BulkWriteOptions): AsyncGenerator<RecordAck> {
    const method = RecordService.method.ingestRecords;
    const pageSize = writePageSizeOf(options);
    const records = new PageReader(iteratorOf(source));
    const token = await this.connection.settings.tokens.get();
    const call = this.client.makeBidiStreamRequest(pathOf(method), serializer(method.input), deserializer(method.output), bearer(token), {});
    const cancel = () => call.cancel();
    options.signal?.addEventListener('abort', cancel, { once: true });
    const writer = (async () => {
      const ended = closed(call);
      try {
        for (;;) {
          const page = (await records.page(pageSize)).map(recordInputOf);
          if (page.length === 0 || ended.settled) break;
          const message = create(method.input, page.length === 1 ? { sourceId, record: page[0]! } : { sourceId, records: page });
          if (!call.write(message)) await Promise.race([drained(call), ended]);
        }
      } finally {
        await records.return();
      }
      if (!ended.settled) call.end();
    })();
    writer.catch(() => call.cancel());
    try {
      for await (const answer of answersOf(call)) for (const ack of answer.acks.length > 0 ? answer.acks : [answer]) yield recordAckOf(ack);
      await writer;
    } catch (error) {
      await writer;
      if (options.signal?.aborted) throw options.signal.reason;
      if ((error as grpc.ServiceError).code === grpc.status.UNAUTHENTICATED) this.connection.settings.tokens.invalidate(token);
      throw merxErrorOf(error);
    } finally {
      options.signal?.removeEventListener('abort', cancel);
      call.cancel();
    }
  }

  // ---- EventService ---------------------------------------------------------------------------

  /**
   * The merchant's events from the cursor, then live, for as long as the caller reads. A dropped
   * stream is opened again after the last event given (or, before any, at the time the first one
   * was opened), so the caller sees every event once, in order. An abort ends the loop.
   */
  async *streamEvents(params: EventStreamParams): AsyncGenerator<StreamedEvent> {
    const method = EventService.method.streamEvents;
    const maxReconnects = params.maxReconnects ?? DEFAULT_MAX_RECONNECTS;
    let after = params.after;
    const since = params.since === undefined ? (after === undefined ? new Date() : undefined) : new Date(params.since);
    if (since !== undefined && Number.isNaN(since.getTime())) throw new MerxError(`since must be a Date or an ISO 8601 time, got "${String(params.since)}"`);
    let failures = 0;
    let refreshedToken = false;
    while (!params.signal?.aborted) {
      const request = create(method.input, {
        cursor: after !== undefined ? { case: 'afterEventId', value: after } : { case: 'startTime', value: timestampFromDate(since!) },
        topics: params.topics ?? [],
      });
      const token = await this.connection.settings.tokens.get();
      const call = this.client.makeServerStreamRequest(pathOf(method), serializer(method.input), deserializer(method.output), request, bearer(token), {});
      const cancel = () => call.cancel();
      params.signal?.addEventListener('abort', cancel, { once: true });
      call.once('metadata', () => {
        failures = 0; // the server took the call: the next drop starts the count again
        refreshedToken = false;
      });
      let retryDelay: number | undefined;
      try {
        for await (const message of answersOf(call)) {
          const event = message.event!;
          if (event.id === after) continue;
          after = event.id;
          yield restEventOf(event);
        }
        // A live stream has no end: the server went away cleanly (a restart). Resume as after a drop.
      } catch (error) {
        if (params.signal?.aborted) return;
        const failure = error as grpc.ServiceError;
        if (failure.code === grpc.status.UNAUTHENTICATED && !refreshedToken) {
          refreshedToken = true;
          this.connection.settings.tokens.invalidate(token);
          continue;
        }
        if (!RESUMABLE.has(failure.code) || failures >= maxReconnects) throw merxErrorOf(error);
        retryDelay = details(failure).retryDelayMs;
      } finally {
        params.signal?.removeEventListener('abort', cancel);
        call.cancel();
      }
      if (failures >= maxReconnects) throw new ConnectionError(`the event stream ended ${failures + 1} times in a row`);
      await pause(retryDelay ?? backoff(failures++), params.signal).catch(() => undefined);
    }
  }

  // ---- calls ----------------------------------------------------------------------------------

  private unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethod & { input: I; output: O },
    request: MessageShape<I>,
    metadata: grpc.Metadata,
    options: GrpcCallOptions,
  ): Promise<MessageShape<O>> {
    return new Promise((resolve, reject) => {
      const call = this.client.makeUnaryRequest(
        pathOf(method),
        serializer(method.input),
        deserializer(method.output),
        request,
        metadata,
        {},
        (error, answer) => {
          options.signal?.removeEventListener('abort', cancel);
          if (error) reject(options.signal?.aborted ? options.signal.reason : error);
          else resolve(answer!);
        },
      );
      const cancel = () => call.cancel();
      if (options.signal?.aborted) cancel();
      else options.signal?.addEventListener('abort', cancel, { once: true });
    });
  }

  /** A server stream as an async iterable; a call refused for its token before any message is made again once. */
  private async *serverStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethod & { input: I; output: O },
    request: MessageShape<I>,
    options: GrpcCallOptions,
    readAhead = READ_AHEAD,
  ): AsyncGenerator<MessageShape<O>> {
    let refreshedToken = false;
    for (;;) {
      const token = await this.connection.settings.tokens.get();
      const call = this.client.makeServerStreamRequest(pathOf(method), serializer(method.input), deserializer(method.output), request, bearer(token), {});
      const cancel = () => call.cancel();
      if (options.signal?.aborted) cancel();
      else options.signal?.addEventListener('abort', cancel, { once: true });
      let received = 0;
      try {
        for await (const message of answersOf(call, readAhead)) {
          received += 1;
          yield message;
        }
        return;
      } catch (error) {
        if (options.signal?.aborted) return;
        if ((error as grpc.ServiceError).code === grpc.status.UNAUTHENTICATED && received === 0 && !refreshedToken) {
          refreshedToken = true;
          this.connection.settings.tokens.invalidate(token);
          continue;
        }
        throw merxErrorOf(error);
      } finally {
        options.signal?.removeEventListener('abort', cancel);
        call.cancel();
      }
    }
  }

  private async withFreshToken<T>(options: GrpcCallOptions, work: (metadata: grpc.Metadata) => Promise<T>): Promise<T> {
    const token = await this.connection.settings.tokens.get();
    try {
      return await work(bearer(token));
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if ((error as grpc.ServiceError).code !== grpc.status.UNAUTHENTICATED) throw merxErrorOf(error);
      this.connection.settings.tokens.invalidate(token);
      try {
        return await work(bearer(await this.connection.settings.tokens.get()));
      } catch (again) {
        if (options.signal?.aborted) throw options.signal.reason;
        throw merxErrorOf(again);
      }
    }
  }
}

// ---- errors -------------------------------------------------------------------------------------

/** Statuses after which the event stream resumes rather than fails. */
const RESUMABLE = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.ABORTED,
  grpc.status.INTERNAL,
  grpc.status.UNKNOWN,
  grpc.status.CANCELLED,
  grpc.status.DEADLINE_EXCEEDED,
]);

/** The HTTP status of each REST problem code, so a gRPC failure is the same class as its REST twin. */
const HTTP_STATUS_OF_REASON: Record<string, number> = {
  malformed_request: 400,
  unauthenticated: 401,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_key_in_use: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

/** Without an ErrorInfo (a status from grpc-js or a proxy), the canonical code's nearest HTTP status. */
const HTTP_STATUS_OF_CODE: Partial<Record<grpc.status, number>> = {
  [grpc.status.INVALID_ARGUMENT]: 400,
  [grpc.status.OUT_OF_RANGE]: 400,
  [grpc.status.UNAUTHENTICATED]: 401,
  [grpc.status.PERMISSION_DENIED]: 403,
  [grpc.status.NOT_FOUND]: 404,
  [grpc.status.ALREADY_EXISTS]: 409,
  [grpc.status.ABORTED]: 409,
  [grpc.status.FAILED_PRECONDITION]: 409,
  [grpc.status.RESOURCE_EXHAUSTED]: 429,
  [grpc.status.UNIMPLEMENTED]: 501,
  [grpc.status.INTERNAL]: 500,
  [grpc.status.UNKNOWN]: 500,
  [grpc.status.DATA_LOSS]: 500,
};

function details(error: grpc.ServiceError): { reason: string | undefined; errors: FieldError[]; retryDelayMs: number | undefined } {
  let reason: string | undefined;
  let retryDelayMs: number | undefined;
  const errors: FieldError[] = [];
  const raw = error.metadata?.get('grpc-status-details-bin')[0];
  if (raw instanceof Buffer) {
    try {
      for (const detail of fromBinary(StatusSchema, raw).details) {
        reason ??= anyUnpack(detail, ErrorInfoSchema)?.reason;
        for (const violation of anyUnpack(detail, BadRequestSchema)?.fieldViolations ?? [])
          errors.push({ field: violation.field, code: violation.reason, message: violation.description });
        const delay = anyUnpack(detail, RetryInfoSchema)?.retryDelay;
        if (delay) retryDelayMs = Number(delay.seconds) * 1000 + delay.nanos / 1e6;
      }
    } catch {
      // details we cannot read: the status code and message still say what happened
    }
  }
  return { reason: reason || undefined, errors, retryDelayMs };
}

/** A whole-call failure as the MerxError REST would have thrown for it, carrying the ErrorInfo reason as `code`. */
export function merxErrorOf(error: unknown): MerxError {
  const failure = error as Partial<grpc.ServiceError>;
  if (typeof failure?.code !== 'number')
    return error instanceof MerxError ? error : new MerxError(String((error as Error)?.message ?? error), { cause: error });
  const { reason, errors, retryDelayMs } = details(failure as grpc.ServiceError);
  const grpcStatus = grpc.status[failure.code] ?? String(failure.code);
  const message = failure.details || failure.message || grpcStatus;
  if (reason === undefined) {
    if (failure.code === grpc.status.DEADLINE_EXCEEDED) return new TimeoutError(`gRPC call timed out: ${message}`, { cause: error });
    if (failure.code === grpc.status.UNAVAILABLE || failure.code === grpc.status.CANCELLED)
      return new ConnectionError(`gRPC call got no answer: ${message} (${grpcStatus})`, { cause: error });
  }
  const tooLarge = reason === undefined && failure.code === grpc.status.RESOURCE_EXHAUSTED && /larger than max/i.test(message);
  const status = (reason === undefined ? undefined : HTTP_STATUS_OF_REASON[reason]) ?? (tooLarge ? 413 : HTTP_STATUS_OF_CODE[failure.code]) ?? 500;
  const problem: ProblemDocument = { status, detail: message, grpc_status: grpcStatus };
  if (reason !== undefined) problem.code = reason;
  else if (tooLarge) problem.code = 'payload_too_large';
  if (errors.length > 0) problem.errors = errors;
  if (retryDelayMs !== undefined) problem.retry_after = Math.ceil(retryDelayMs / 1000);
  const requestId = failure.metadata?.get('x-request-id')[0];
  const merxError = MerxError.fromResponse(status, problem, {}, typeof requestId === 'string' ? requestId : undefined);
  Object.defineProperty(merxError, 'cause', { value: error, enumerable: false, configurable: true });
  return merxError;
}

// ---- conversions --------------------------------------------------------------------------------

const STATUS_NAMES = { [ProductStatus.DRAFT]: 'draft', [ProductStatus.ACTIVE]: 'active', [ProductStatus.ARCHIVED]: 'archived' } as const;
const OUTCOMES = {
  [ProductResult_Outcome.CREATED]: 'created',
  [ProductResult_Outcome.UPDATED]: 'updated',
  [ProductResult_Outcome.UNCHANGED]: 'unchanged',
} as const;
const RECORD_TYPES: Record<RecordInput['type'], RecordType> = {
  order: RecordType.ORDER,
  review: RecordType.REVIEW,
  campaign_spend: RecordType.CAMPAIGN_SPEND,
  alert: RecordType.ALERT,
};
const ACK_STATUSES = {
  [IngestRecordsResponse_Status.ACCEPTED]: 'accepted',
  [IngestRecordsResponse_Status.DUPLICATE]: 'duplicate',
  [IngestRecordsResponse_Status.REJECTED]: 'rejected',
} as const;

function productStatusOf(status: string): ProductStatus {
  switch (status) {
    case 'draft':
      return ProductStatus.DRAFT;
    case 'active':
      return ProductStatus.ACTIVE;
    case 'archived':
      return ProductStatus.ARCHIVED;
    default:
      // Not a status: the server refuses the unknown enum value with the REST problem, per item.
      return -1 as ProductStatus;
  }
}

function productInputOf(item: BulkProductInput): MessageInitShape<typeof ProductInputSchema> {
  if (item === null || typeof item !== 'object') throw new MerxError(`a product to upsert must be an object, got ${item === null ? 'null' : typeof item}`);
  return {
    sku: item.sku ?? '',
    title: item.title ?? '',
    price: item.price ?? '',
    currency: item.currency ?? '',
    status: item.status === undefined ? ProductStatus.UNSPECIFIED : productStatusOf(item.status),
    attributes: item.attributes ?? {},
    ...(item.description === undefined || item.description === null ? {} : { description: item.description }),
    ...(item.inventory_quantity === undefined || item.inventory_quantity === null ? {} : { inventoryQuantity: item.inventory_quantity }),
  };
}

function restProductOf(product: ProductMessage): Product {
  return {
    id: product.id,
    object: 'product',
    sku: product.sku,
    title: product.title,
    description: product.description ?? null,
    price: product.price,
    currency: product.currency,
    status: STATUS_NAMES[product.status as keyof typeof STATUS_NAMES] ?? 'active',
    inventory_quantity: product.inventoryQuantity ?? null,
    attributes: { ...product.attributes },
    version: product.version,
    created_at: isoOf(product.createTime),
    updated_at: isoOf(product.updateTime),
  };
}

function productResultOf(result: ProductResultMessage, index = result.index): ProductResult {
  const outcome = OUTCOMES[result.outcome as keyof typeof OUTCOMES];
  if (outcome !== undefined && result.product) return { index, sku: result.sku, outcome, product: restProductOf(result.product) };
  return { index, sku: result.sku, outcome: 'failed', problem: itemProblemOf(result.problem) };
}

function itemProblemOf(problem: Problem | undefined): ItemProblem {
  return {
    code: problem?.code || 'internal',
    detail: problem?.detail ?? '',
    errors: (problem?.violations ?? []).map((violation) => ({ field: violation.field, code: violation.code, message: violation.message })),
  };
}

function recordInputOf(record: RecordInput) {
  if (record === null || typeof record !== 'object')
    throw new MerxError(`a record to ingest must be an object, got ${record === null ? 'null' : typeof record}`);
  const occurred = record.occurred_at === undefined ? undefined : new Date(record.occurred_at);
  return {
    type: RECORD_TYPES[record.type] ?? RecordType.UNSPECIFIED,
    externalId: record.external_id ?? '',
    data: (record.data ?? {}) as JsonObject,
    ...(occurred === undefined || Number.isNaN(occurred.getTime()) ? {} : { occurTime: timestampFromDate(occurred) }),
  };
}

function recordAckOf(ack: IngestRecordsResponse): RecordAck {
  const status = ACK_STATUSES[ack.status as keyof typeof ACK_STATUSES] ?? 'rejected';
  return {
    index: ack.index,
    external_id: ack.externalId,
    status,
    ...(ack.recordId ? { record_id: ack.recordId } : {}),
    ...(ack.eventId ? { event_id: ack.eventId } : {}),
    ...(status === 'rejected' ? { problem: itemProblemOf(ack.problem) } : {}),
  };
}

function restEventOf(event: EventMessage): StreamedEvent {
  return {
    id: event.id,
    object: 'event',
    topic: event.type as StreamedEvent['topic'],
    created_at: isoOf(event.createTime),
    data: (event.data ?? { object: {} }) as StreamedEvent['data'],
  };
}

function isoOf(timestamp: Timestamp | undefined): string {
  return timestamp ? timestampDate(timestamp).toISOString() : '';
}

// ---- plumbing -----------------------------------------------------------------------------------

const pathOf = (method: DescMethod) => `/${method.parent.typeName}/${method.name}`;

function serializer<D extends DescMessage>(schema: D) {
  return (message: MessageShape<D>) => Buffer.from(toBinary(schema, message));
}

function deserializer<D extends DescMessage>(schema: D) {
  return (bytes: Buffer) => fromBinary(schema, bytes);
}

function bearer(token: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

/** Items per message of a bulk write (`pageSize`), checked: 1 to the server's 1,000. */
function writePageSizeOf(options: BulkWriteOptions): number {
  const pageSize = options.pageSize ?? DEFAULT_WRITE_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_WRITE_PAGE_SIZE)
    throw new MerxError(`pageSize must be a whole number of items from 1 to ${MAX_WRITE_PAGE_SIZE}`);
  return pageSize;
}

function iteratorOf<T>(source: Source<T>): AsyncIterator<T> {
  return toAsync(source)[Symbol.asyncIterator]();
}

function toAsync<T>(source: Source<T>): AsyncIterable<T> {
  if (source !== null && typeof source === 'object' && Symbol.asyncIterator in source) return source;
  if (source !== null && typeof source === 'object' && Symbol.iterator in source) {
    return (async function* () {
      yield* source;
    })();
  }
  throw new MerxError('expected an iterable or async iterable of items');
}

async function* flatMapAsync<T, U>(source: AsyncIterable<T>, map: (item: T) => U[]): AsyncGenerator<U> {
  for await (const item of source) yield* map(item);
}

const READ_AHEAD = 64;

/**
 * A call's answers as an async iterable, from its events rather than the stream's own iterator:
 * grpc-js ends the readable side before it emits a failed status, and a reader waiting at that
 * moment could hang on a dropped connection (seen in the suite). Here a failed status or 'error'
 * throws the ServiceError after the answers already received, and 'end' ends the loop. At most `readAhead` answers wait
 * (the call is paused beyond that), so a slow consumer holds the server back, not memory.
 */
async function* answersOf<T>(call: grpc.ClientReadableStream<T> | grpc.ClientDuplexStream<unknown, T>, readAhead = READ_AHEAD): AsyncGenerator<T> {
  const waiting: T[] = [];
  let outcome: { error?: grpc.ServiceError } | undefined;
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };
  call.on('data', (answer: T) => {
    waiting.push(answer);
    if (waiting.length >= readAhead) call.pause();
    poke();
  });
  call.on('error', (error: grpc.ServiceError) => {
    outcome ??= { error };
    poke();
  });
  call.on('status', (status: grpc.StatusObject) => {
    // An error status also comes as 'error'; this is the fallback. OK waits for 'end', which
    // comes only once the answers still buffered in a paused call have been given.
    if (status.code !== grpc.status.OK)
      outcome ??= { error: Object.assign(new Error(`${status.code} ${grpc.status[status.code]}: ${status.details}`), status) };
    poke();
  });
  call.on('end', () => {
    outcome ??= {};
    poke();
  });
  for (;;) {
    if (waiting.length > 0) {
      const answer = waiting.shift()!;
      if (waiting.length < readAhead / 2 && call.isPaused()) call.resume();
      yield answer;
      continue;
    }
    if (outcome?.error) throw outcome.error;
    if (outcome) return;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}

/** Settles when the call is over (its status received or it was cancelled), and says so synchronously. */
function closed(call: EventEmitter): Promise<void> & { settled: boolean } {
  let settled = false;
  const promise = new Promise<void>((resolve) => {
    const done = () => {
      settled = true;
      resolve();
    };
    call.once('status', done);
    call.once('error', done);
    call.once('close', done);
  }) as Promise<void> & { settled: boolean };
  Object.defineProperty(promise, 'settled', { get: () => settled });
  return promise;
}

function drained(call: EventEmitter): Promise<void> {
  return new Promise((resolve) => call.once('drain', resolve));
}

/** A promise the reader fires when an answer frees room in the window. */
function signal(): { wait(): Promise<void>; fire(): void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { wait: () => promise, fire };
}

function backoff(attempt: number): number {
  return Math.min(500 * 2 ** attempt, MAX_BACKOFF_MS) * (1 - 0.25 * Math.random());
}

function pause(ms: number, abort: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (abort?.aborted) return reject(abort.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abort!.reason);
    };
    const timer = setTimeout(() => {
      abort?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    abort?.addEventListener('abort', onAbort, { once: true });
  });
}
