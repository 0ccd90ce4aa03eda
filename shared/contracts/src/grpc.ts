import type { DescMethod, DescService } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import type { GenFile } from '@bufbuild/protobuf/codegenv2';
import { file_google_rpc_error_details } from './gen/google/rpc/error_details_pb.js';
import { file_google_rpc_status } from './gen/google/rpc/status_pb.js';
import { EventService, file_merx_v1_events } from './gen/merx/v1/events_pb.js';
import { file_merx_v1_problems } from './gen/merx/v1/problems_pb.js';
import { file_merx_v1_products, ProductService } from './gen/merx/v1/products_pb.js';
import { file_merx_v1_records, RecordService } from './gen/merx/v1/records_pb.js';

/**
 * The gRPC contract (proto/merx/v1/*.proto), as TypeScript generated at build by protoc-gen-es.
 * Imported as `@merx/contracts/grpc` so its message names (Product, Event, ...) stay apart from
 * the REST contract's.
 */
export * from './gen/merx/v1/products_pb.js';
export * from './gen/merx/v1/records_pb.js';
export * from './gen/merx/v1/events_pb.js';
export * from './gen/merx/v1/problems_pb.js';
export * from './gen/google/rpc/status_pb.js';
export * from './gen/google/rpc/error_details_pb.js';

/** The public gRPC services, each owned by one backend service. */
export const grpcServices = { catalog: ProductService, merchants: RecordService, webhooks: EventService } as const;
export type GrpcOwner = keyof typeof grpcServices;

/** Every .proto file of the contract, for server reflection. */
export const grpcFiles: GenFile[] = [
  file_merx_v1_problems,
  file_merx_v1_products,
  file_merx_v1_records,
  file_merx_v1_events,
  file_google_rpc_status,
  file_google_rpc_error_details,
];

/** `/merx.v1.ProductService/UpsertProducts`: the HTTP/2 path of a method. */
export const grpcPathOf = (method: DescMethod) => `/${method.parent.typeName}/${method.name}`;

/**
 * The scope each method needs: the same scope as the REST operation doing the same work
 * (ingestion is `config:write` like `POST /sources/{id}/records`, events `webhooks:read` like `GET /events`).
 */
export const grpcMethodScopes: Record<string, string> = {
  '/merx.v1.ProductService/BatchCreateProducts': 'products:write',
  '/merx.v1.ProductService/UpsertProducts': 'products:write',
  '/merx.v1.ProductService/ExportProducts': 'products:read',
  '/merx.v1.RecordService/IngestRecords': 'config:write',
  '/merx.v1.EventService/StreamEvents': 'webhooks:read',
};

/**
 * Methods whose request messages count in the `bulk` class, in items: a message is one item, or
 * a page of items in the repeated field named here (UpsertProductsRequest.products,
 * IngestRecordsRequest.records, and the unary BatchCreateProductsRequest.products, charged as
 * the same products sent in a page of the streaming upsert would be).
 */
const BULK_PAGE_FIELDS = new Map([
  ['/merx.v1.ProductService/UpsertProducts', 2],
  ['/merx.v1.RecordService/IngestRecords', 3],
  ['/merx.v1.ProductService/BatchCreateProducts', 1],
]);

export const grpcBulkMethods: ReadonlySet<string> = new Set(BULK_PAGE_FIELDS.keys());

/** Most items one message of a bulk stream may carry (as BatchCreateProducts and a REST record batch). */
export const MAX_BULK_PAGE_ITEMS = 1_000;

/**
 * The items a bulk stream's message carries, read from its bytes without decoding it: the edge
 * counts them against the `bulk` class while forwarding the message as it came. Only the
 * top-level tags are read and every value is skipped. A message without a page counts as one
 * item (whatever it holds: the owning service judges that); bytes that are no message at all
 * also count as one, and the service refuses them.
 */
export function bulkItemsInMessage(path: string, bytes: Uint8Array): number {
  const pageField = BULK_PAGE_FIELDS.get(path);
  if (pageField === undefined) return 1;
  let items = 0;
  try {
    const reader = new BinaryReader(bytes);
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === pageField && wireType === WireType.LengthDelimited) items += 1;
      reader.skip(wireType, field);
    }
  } catch {
    return 1;
  }
  return Math.max(1, items);
}

export function grpcMethodsOf(service: DescService): DescMethod[] {
  return service.methods;
}
