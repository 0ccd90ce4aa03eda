import type { DescMethod, DescService } from '@bufbuild/protobuf';
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

/** Methods whose request stream counts in the `bulk` class, one item per message. */
export const grpcBulkMethods = new Set(['/merx.v1.ProductService/UpsertProducts', '/merx.v1.RecordService/IngestRecords']);

export function grpcMethodsOf(service: DescService): DescMethod[] {
  return service.methods;
}
