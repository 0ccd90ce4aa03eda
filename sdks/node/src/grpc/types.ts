/**
 * The public shapes of the gRPC helpers, in the REST resources' terms (snake_case fields, money as
 * decimal strings, ISO 8601 times, `status: 'active'`), so code that handles a REST product or
 * problem handles these too. Plain TypeScript: nothing here needs @grpc/grpc-js to type-check.
 */
import type { FieldError } from '../core/errors.js';
import type { Event, Product, ProductCreate } from '../generated/types.js';

/** A product to create or replace by `sku`, as `products.create` takes it; `archived` is allowed too. */
export type BulkProductInput = Omit<ProductCreate, 'status'> & { status?: Product['status'] | undefined };

/** An item refused inside a stream or a batch: the REST problem of the same refusal. */
export interface ItemProblem {
  /** The REST problem code: `validation_failed`, `conflict`, `not_found`, ... */
  code: string;
  detail: string;
  /** The fields that broke a rule, as in the `errors` of a REST 422. */
  errors: FieldError[];
}

/** What became of one item, in the order the items were given. */
export type ProductResult =
  | { index: number; sku: string; outcome: 'created' | 'updated' | 'unchanged'; product: Product; problem?: undefined }
  | { index: number; sku: string; outcome: 'failed'; product?: undefined; problem: ItemProblem };

/** Options of every gRPC call. */
export interface GrpcCallOptions {
  /** Cancels the call: a stream's loop ends, a pending batch rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** Options of a bulk write over gRPC (`bulk.upsertProducts`, `records.ingest`). */
export interface BulkWriteOptions extends GrpcCallOptions {
  /**
   * Items per message, at most (500 by default, 1 to 1,000). Items the iterable has ready at once
   * go together in one message (a page), answered together; one that comes alone goes alone. The
   * results are the same either way, one per item in order.
   */
  pageSize?: number | undefined;
}

export interface UpsertOptions extends BulkWriteOptions {
  /**
   * Items sent and not yet answered, at most (1,000 by default). The iterable is read no faster
   * than that, so a producer of millions of items holds only this many in memory.
   */
  window?: number | undefined;
}

/** The filters of `products.list`, for `bulk.exportProducts`. */
export interface ExportFilters extends GrpcCallOptions {
  status?: Product['status'] | undefined;
  sku?: string | undefined;
  currency?: string | undefined;
  /**
   * Products per message on the wire, 1 to 1,000 (default 500). Products are still yielded one
   * by one; only the framing changes, and with it the speed: one product per message costs several
   * times more per product.
   */
  pageSize?: number | undefined;
}

/** An event of the gRPC stream: the REST `Event` less the fields the stream does not carry. */
export type StreamedEvent = Pick<Event, 'id' | 'object' | 'topic' | 'created_at' | 'data'>;

export interface EventStreamParams extends GrpcCallOptions {
  /** Start after this event id (`evt_...`): the last one a previous stream gave. */
  after?: string | undefined;
  /** Or start with the events recorded at or after this time. Neither: from now on. */
  since?: Date | string | undefined;
  /** Event names (`products.created`) or whole topics (`products`); none means every event. */
  topics?: string[] | undefined;
  /**
   * Reconnections in a row without the server accepting the call before the stream gives up and
   * throws; 10 by default. Each reconnection resumes after the last event given, waiting 0.5 s,
   * 1 s, 2 s, ... (at most 8 s, or what RetryInfo asks) before it.
   */
  maxReconnects?: number | undefined;
}

/** The acknowledgement of one record, in the order they were given. */
export interface RecordAck {
  index: number;
  external_id: string;
  /** `duplicate`: ingested before; `record_id` is the first one's. */
  status: 'accepted' | 'duplicate' | 'rejected';
  record_id?: string | undefined;
  event_id?: string | undefined;
  problem?: ItemProblem | undefined;
}
