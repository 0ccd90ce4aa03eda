import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { BadRequestSchema, ErrorInfoSchema, EventService, ProductService, RecordService, RetryInfoSchema } from '@merx/contracts/grpc';
import { decodeGrpcStatusDetails, grpc, grpcServiceDefinitionOf } from '@merx/kit';
import type { Stack } from './stack.js';

/**
 * A real @grpc/grpc-js client of each public service, on the stack's public gRPC port (or, with
 * `address`, on another: a service's own port, bypassing the edge).
 */
export function grpcClients(stack: Stack, address = stack.grpcAddress) {
  const make = (service: typeof ProductService | typeof RecordService | typeof EventService) => {
    const Client = grpc.makeGenericClientConstructor(grpcServiceDefinitionOf(service), service.typeName);
    return new Client(address, grpc.credentials.createInsecure(), {
      'grpc.max_send_message_length': 16 * 1024 * 1024,
      // As the Node SDK's client: no retry buffer, so writes are paced by the server (sdks/node/src/grpc/runtime.ts).
      'grpc.enable_retries': 0,
      'grpc.per_rpc_retry_buffer_size': 0,
    }) as grpc.Client & Record<string, any>;
  };
  const clients = { products: make(ProductService), records: make(RecordService), events: make(EventService) };
  return { ...clients, close: () => Object.values(clients).forEach((client) => client.close()) };
}

export function bearer(token: string | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

export function unary<Res>(client: Record<string, any>, method: string, request: unknown, metadata: grpc.Metadata): Promise<Res> {
  return new Promise((resolve, reject) =>
    client[method](request, metadata, (error: grpc.ServiceError | null, response: Res) => (error ? reject(error) : resolve(response))),
  );
}

/** Writes every request (waiting for the stream to drain when it asks), half-closes, and gathers every answer. */
export function bidiAll<Res>(client: Record<string, any>, method: string, requests: unknown[], metadata: grpc.Metadata): Promise<Res[]> {
  return new Promise((resolve, reject) => {
    const call: grpc.ClientDuplexStream<unknown, Res> = client[method](metadata);
    const answers: Res[] = [];
    call.on('data', (answer: Res) => answers.push(answer));
    call.on('error', reject);
    call.on('end', () => resolve(answers));
    let next = 0;
    const writeMore = () => {
      while (next < requests.length) if (!call.write(requests[next++])) return void call.once('drain', writeMore);
      call.end();
    };
    writeMore();
  });
}

export function serverStreamAll<Res>(client: Record<string, any>, method: string, request: unknown, metadata: grpc.Metadata): Promise<Res[]> {
  return new Promise((resolve, reject) => {
    const call: grpc.ClientReadableStream<Res> = client[method](request, metadata);
    const answers: Res[] = [];
    call.on('data', (answer: Res) => answers.push(answer));
    call.on('error', reject);
    call.on('end', () => resolve(answers));
  });
}

/** The ErrorInfo reason (the REST problem code), BadRequest field violations and RetryInfo of a failed call. */
export function problemOf(error: grpc.ServiceError): { reason: string | undefined; fields: string[]; retryDelayMs: number | undefined } {
  const status = decodeGrpcStatusDetails(error.metadata);
  let reason: string | undefined;
  let retryDelayMs: number | undefined;
  const fields: string[] = [];
  for (const detail of status?.details ?? []) {
    reason ??= anyUnpack(detail, ErrorInfoSchema)?.reason;
    fields.push(...(anyUnpack(detail, BadRequestSchema)?.fieldViolations.map((violation) => violation.field) ?? []));
    const delay = anyUnpack(detail, RetryInfoSchema)?.retryDelay;
    if (delay) retryDelayMs = Number(delay.seconds) * 1000 + delay.nanos / 1e6;
  }
  return { reason, fields, retryDelayMs };
}

/** A status the call must fail with. */
export async function rejectsWith(work: Promise<unknown>, code: grpc.status): Promise<grpc.ServiceError> {
  try {
    await work;
  } catch (error) {
    const failure = error as grpc.ServiceError;
    if (failure.code !== code) throw new Error(`expected ${grpc.status[code]}, got ${grpc.status[failure.code]}: ${failure.details}`);
    return failure;
  }
  throw new Error(`expected ${grpc.status[code]}, but the call succeeded`);
}
