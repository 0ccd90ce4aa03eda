import { create } from '@bufbuild/protobuf';
import {
  MAX_BULK_PAGE_ITEMS,
  BatchCreateProductsResponseSchema,
  ProductService,
  type BatchCreateProductsRequest,
  type BatchCreateProductsResponse,
  type ExportProductsRequest,
  type UpsertProductsRequest,
} from '@merx/contracts/grpc';
import {
  assertDecoded,
  authenticateGrpcCall,
  bulkMessageItems,
  bulkStreamHandler,
  endStreamWithError,
  grpcServiceDefinitionOf,
  unaryHandler,
  ValidationFailed,
  drained,
  type grpc,
  type Logger,
  type TokenVerifier,
} from '@merx/kit';
import { PRODUCT_STATUSES, type Product, type ProductStatus } from '../domain/product.js';
import { BULK_CHUNK_SIZE, type BulkItem, type BulkProductUseCases } from '../usecases/bulk-products.js';
import { encodedUpsertAnswerOf, encodedUpsertPageOf, restBodyOf, statusNameOf, wireResultOf, wireSizeBoundOf } from './product-wire.js';
import { encodeExportPage, encodeExportSingle, sizeProduct, type SizedProduct } from './product-encoding.js';
import type { ProductFilters } from '../store/products-store.js';
import { isCurrency } from '@merx/kit';

export const MAX_BATCH_CREATE = 1_000;
/** Items read ahead of the chunk being written. */
const READ_AHEAD = 2 * BULK_CHUNK_SIZE;
/** Products per query of an export: large enough that a query's round trip is small beside encoding its rows. */
const EXPORT_PAGE = 1_000;
/** The largest `page_size` of ExportProducts. */
export const MAX_EXPORT_PAGE_SIZE = 1_000;
/**
 * What one page of an export may weigh: a page of large products (10,000-character descriptions,
 * 50 attributes) closes early rather than pass the 4 MiB a gRPC message may weigh, here, at the
 * gateway or at a client with grpc-js's defaults.
 */
export const MAX_EXPORT_PAGE_BYTES = 1024 * 1024;

interface ExportPlan {
  filters: ProductFilters;
  /** Products per response message; 0 is the one-product `product` field of old. */
  pageSize: number;
}

function exportPlanOf(request: ExportProductsRequest): ExportPlan {
  const filters: ProductFilters = {};
  const errors = [];
  if (request.pageSize > MAX_EXPORT_PAGE_SIZE) {
    errors.push({ field: 'page_size', code: 'out_of_range', message: `page_size must be from 0 (one product per message) to ${MAX_EXPORT_PAGE_SIZE}` });
  }
  const status = statusNameOf(request.status);
  if (status !== undefined) {
    if ((PRODUCT_STATUSES as readonly string[]).includes(status)) filters.status = status as ProductStatus;
    else errors.push({ field: 'status', code: 'invalid_value', message: `status must be one of ${PRODUCT_STATUSES.join(', ')}` });
  }
  if (request.sku !== undefined) filters.sku = request.sku;
  if (request.currency !== undefined) {
    if (isCurrency(request.currency)) filters.currency = request.currency;
    else errors.push({ field: 'currency', code: 'invalid_currency', message: 'currency must be an ISO 4217 code' });
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
  return { filters, pageSize: request.pageSize };
}

/**
 * Frames an export's products as response messages, encoded: one per message in `product` (page
 * size 0), or pages in `products` of `pageSize` products, or fewer where that many would weigh
 * more than MAX_EXPORT_PAGE_BYTES. A page is sent only once it is full, until `flush` at the end
 * sends the rest, so pages do not shrink where the database's pages fall.
 */
function exportFramer(pageSize: number) {
  let pending: SizedProduct[] = [];
  let pendingBytes = 0;
  const page = () => {
    const message = encodeExportPage(pending);
    pending = [];
    pendingBytes = 0;
    return message;
  };
  return {
    framed(products: Product[]): Uint8Array[] {
      if (pageSize === 0) return products.map((product) => encodeExportSingle(sizeProduct(product)));
      const messages: Uint8Array[] = [];
      for (const product of products) {
        const sized = sizeProduct(product);
        const bytes = wireSizeBoundOf(sized);
        if (pending.length > 0 && pendingBytes + bytes > MAX_EXPORT_PAGE_BYTES) messages.push(page());
        pending.push(sized);
        pendingBytes += bytes;
        if (pending.length === pageSize) messages.push(page());
      }
      return messages;
    },
    flush(): Uint8Array[] {
      return pending.length > 0 ? [page()] : [];
    },
  };
}

/**
 * merx.v1.ProductService: thin like the REST routes. Each handler checks the token and scope,
 * turns messages into the REST bodies they stand for, and hands them to the bulk use cases.
 */
export function productGrpcService(products: BulkProductUseCases, verifier: TokenVerifier, logger: Logger) {
  const batchCreateProducts = unaryHandler<BatchCreateProductsRequest, BatchCreateProductsResponse>(
    { verifier, scope: 'products:write', logger },
    async (claims, request) => {
      if (request.products.length === 0 || request.products.length > MAX_BATCH_CREATE) {
        throw new ValidationFailed([
          {
            field: 'products',
            code: request.products.length === 0 ? 'too_short' : 'too_long',
            message: `products must hold 1 to ${MAX_BATCH_CREATE} products`,
          },
        ]);
      }
      const outcomes = await products.createProducts(
        claims.merchantId,
        request.products.map((input, index) => ({ index, body: restBodyOf(input) })),
      );
      return create(BatchCreateProductsResponseSchema, { results: outcomes.map(wireResultOf) });
    },
  );

  // Answers go out as their bytes (encodedUpsertAnswerOf), which the kit's serializer sends as they are.
  const upsertProducts = bulkStreamHandler<UpsertProductsRequest, BulkItem, Uint8Array>({
    verifier,
    scope: 'products:write',
    logger,
    chunkSize: BULK_CHUNK_SIZE,
    readAhead: READ_AHEAD,
    itemsOf: (message, firstIndex) =>
      bulkMessageItems({ single: 'product', page: 'products', max: MAX_BULK_PAGE_ITEMS }, message.product, message.products, firstIndex, (input, index) => ({
        index,
        body: restBodyOf(input),
      })),
    pageOf: encodedUpsertPageOf,
    keyOf: (item) => (typeof item.body.sku === 'string' ? item.body.sku : undefined),
    write: async (claims, items) => (await products.upsertProducts(claims.merchantId, items)).map(encodedUpsertAnswerOf),
  });

  const exportProducts = (call: grpc.ServerWritableStream<ExportProductsRequest, Uint8Array>) => {
    void (async () => {
      const claims = await authenticateGrpcCall(verifier, call.metadata, 'products:read');
      assertDecoded(call.request);
      const { filters, pageSize } = exportPlanOf(call.request);
      const framer = exportFramer(pageSize);
      const pageAfter = (after: string | undefined) => {
        const page = products.exportPage(claims.merchantId, after, EXPORT_PAGE, filters);
        // Awaited below; this only keeps a failure of a page nobody waits for any more (a cancelled call) from going unhandled.
        page.catch(() => undefined);
        return page;
      };
      let next = pageAfter(undefined);
      while (!call.cancelled) {
        const page = await next;
        const more = page.length === EXPORT_PAGE;
        // The next page is read while this one goes out, and is not sent before the client has taken
        // this one: a slow reader holds two pages (and one part-filled message) at most.
        if (more) next = pageAfter(page.at(-1)!.id);
        let flowing = true;
        for (const message of more ? framer.framed(page) : [...framer.framed(page), ...framer.flush()]) flowing = call.write(message);
        if (!flowing) await drained(call);
        if (!more) break;
      }
      if (!call.cancelled) call.end();
    })().catch((error: unknown) => endStreamWithError(call, error, logger));
  };

  return {
    definition: grpcServiceDefinitionOf(ProductService),
    implementation: {
      BatchCreateProducts: batchCreateProducts,
      UpsertProducts: upsertProducts,
      ExportProducts: exportProducts,
    } as grpc.UntypedServiceImplementation,
  };
}
