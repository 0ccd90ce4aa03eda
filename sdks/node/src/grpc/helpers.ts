/**
 * The gRPC helpers as the client shows them: `merx.bulk`, `merx.events.stream` and
 * `merx.records.ingest`. Each returns at once; the channel and @grpc/grpc-js are loaded when the
 * first result is asked for (connection.ts), so REST-only programs never load them.
 */
import { APIResource } from '../core/resource.js';
import { ConfigurationError } from '../core/errors.js';
import type { Requestor } from '../core/requestor.js';
import type { Product, RecordInput } from '../generated/types.js';
import type { GrpcConnection } from './connection.js';
import type { GrpcRuntime } from './runtime.js';
import type {
  BulkProductInput,
  BulkWriteOptions,
  EventStreamParams,
  ExportFilters,
  GrpcCallOptions,
  ProductResult,
  RecordAck,
  StreamedEvent,
  UpsertOptions,
} from './types.js';

/** Items for a streaming call: an array, a generator, a Node stream in object mode, ... */
export type ItemSource<T> = AsyncIterable<T> | Iterable<T>;

/** An async iterable whose work starts on the first `next()`, after the gRPC runtime is loaded. */
function deferred<T>(connection: GrpcConnection, start: (runtime: GrpcRuntime) => AsyncIterable<T>): AsyncIterable<T> {
  return {
    async *[Symbol.asyncIterator]() {
      yield* start(await connection.load());
    },
  };
}

function connectionOf(requestor: Requestor): GrpcConnection {
  if (!requestor.grpc) throw new ConfigurationError('This client has no gRPC connection: the gRPC helpers need an API key client (new Merx)');
  return requestor.grpc;
}

/**
 * `merx.bulk`: catalogue work for which one REST call per product is too slow, over the gRPC
 * ProductService with the client's own access token.
 */
export class BulkResource extends APIResource {
  /**
   * Creates or replaces products by `sku`, streaming: one result per item, in the order given
   * (`created`, `updated`, `unchanged` with the product, or `failed` with the REST problem). The
   * items are read only as fast as the server takes them.
   *
   *     for await (const result of merx.bulk.upsertProducts(readCsv('catalogue.csv'))) {
   *       if (result.outcome === 'failed') console.error(result.sku, result.problem.code);
   *     }
   */
  upsertProducts(items: ItemSource<BulkProductInput>, options: UpsertOptions = {}): AsyncIterable<ProductResult> {
    const connection = connectionOf(this.requestor);
    return deferred(connection, (runtime) => runtime.upsertProducts(items, options));
  }

  /**
   * Every product matching the filters (those of `products.list`) once, oldest first, yielded one
   * by one. On the wire the products come in pages of `pageSize` (default 500) per message, which
   * is what makes an export fast; the pages never change which products come or their order.
   *
   *     for await (const product of merx.bulk.exportProducts({ status: 'active' })) console.log(product.sku);
   */
  exportProducts(filters: ExportFilters = {}): AsyncIterable<Product> {
    const connection = connectionOf(this.requestor);
    return deferred(connection, (runtime) => runtime.exportProducts(filters));
  }

  /** Creates 1 to 1,000 products in one call; one result per product, in order (an existing sku fails with `conflict`). */
  async batchCreateProducts(items: BulkProductInput[], options: GrpcCallOptions = {}): Promise<ProductResult[]> {
    const runtime = await connectionOf(this.requestor).load();
    return runtime.batchCreateProducts(items, options);
  }
}

/** `merx.events`: the REST list and retrieve, plus the live stream over gRPC. */
export abstract class EventStreaming extends APIResource {
  /**
   * The merchant's events after a cursor (`after` an event id, or `since` a time; neither: from
   * now), oldest first, then each new one as it happens, for as long as the loop runs. A dropped
   * connection is resumed after the last event given, so nothing is missed or repeated; `break`
   * or an aborted `signal` ends the loop.
   *
   *     for await (const event of merx.events.stream({ after: lastSeenId, topics: ['products'] })) save(event);
   */
  stream(params: EventStreamParams = {}): AsyncIterable<StreamedEvent> {
    const connection = connectionOf(this.requestor);
    return deferred(connection, (runtime) => runtime.streamEvents(params));
  }
}

/** `merx.records`: the REST list and retrieve, plus streaming ingestion over gRPC. */
export abstract class RecordIngestion extends APIResource {
  /**
   * Ingests records into a source, streaming, as `sources.records.create` does in batches: one
   * acknowledgement per record, in order (`accepted`, `duplicate` with the first one's id, or
   * `rejected` with the REST problem).
   */
  ingest(sourceId: string, records: ItemSource<RecordInput>, options: BulkWriteOptions = {}): AsyncIterable<RecordAck> {
    const connection = connectionOf(this.requestor);
    return deferred(connection, (runtime) => runtime.ingestRecords(sourceId, records, options));
  }
}
