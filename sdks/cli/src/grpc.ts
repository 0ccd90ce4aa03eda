/**
 * gRPC clients of the public port (listen, events tail, import, export), with the protobuf-es
 * schemas generated at build from the repository's .proto files. Calls carry the same access
 * token as REST calls (the session's cache); an UNAUTHENTICATED answer gets one fresh token and
 * one retry, as the SDK does on a 401.
 */
import * as grpc from '@grpc/grpc-js';
import { fromBinary, toBinary, type DescMessage, type DescService, type MessageShape } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ErrorInfoSchema, RetryInfoSchema } from './gen/google/rpc/error_details_pb.js';
import { StatusSchema } from './gen/google/rpc/status_pb.js';
import type { Session } from './session.js';
import { VERSION } from './version.js';

/** A failed call: its status name, the message, and the REST problem code when the server gave one. */
export class GrpcCallError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly reason: string | undefined,
    detail: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(`${grpc.status[code] ?? code}${reason ? ` (${reason})` : ''}: ${detail}${retryAfterSeconds ? `, retry after ${retryAfterSeconds} s` : ''}`);
  }
}

export function grpcErrorOf(error: grpc.ServiceError): GrpcCallError {
  let reason: string | undefined;
  let retryAfterSeconds: number | undefined;
  const raw = error.metadata?.get('grpc-status-details-bin')[0];
  if (raw instanceof Buffer) {
    try {
      for (const detail of fromBinary(StatusSchema, raw).details) {
        const info = anyUnpack(detail, ErrorInfoSchema);
        if (info) reason = info.reason;
        const retry = anyUnpack(detail, RetryInfoSchema);
        if (retry?.retryDelay) retryAfterSeconds = Number(retry.retryDelay.seconds);
      }
    } catch {
      // details we cannot read: the status and message still say what happened
    }
  }
  return new GrpcCallError(error.code, reason, error.details || error.message, retryAfterSeconds);
}

const serializerOf = <Desc extends DescMessage>(schema: Desc) => ({
  serialize: (message: MessageShape<Desc>) => Buffer.from(toBinary(schema, message)),
  deserialize: (bytes: Buffer) => fromBinary(schema, bytes),
});

function definitionOf(service: DescService): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    const input = serializerOf(method.input);
    const output = serializerOf(method.output);
    definition[method.name] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
      responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
      requestSerialize: input.serialize as (value: unknown) => Buffer,
      requestDeserialize: input.deserialize,
      responseSerialize: output.serialize as (value: unknown) => Buffer,
      responseDeserialize: output.deserialize,
      originalName: method.name,
    };
  }
  return definition;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- methods are made at run time from the service descriptor
export type GenericClient = grpc.Client & Record<string, any>;

export class GrpcClients {
  private readonly clients: grpc.Client[] = [];

  constructor(private readonly session: Session) {}

  client(service: DescService): GenericClient {
    const Client = grpc.makeGenericClientConstructor(definitionOf(service), service.typeName);
    const client = new Client(this.session.grpcTarget(), grpc.credentials.createInsecure(), {
      'grpc.primary_user_agent': `merx-cli/${VERSION}`,
    }) as unknown as GenericClient;
    this.clients.push(client);
    return client;
  }

  async metadata(fresh = false): Promise<grpc.Metadata> {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${await this.session.accessToken({ fresh })}`);
    return metadata;
  }

  /** Runs `call` with a token, and once more with a new token if the first was refused. */
  async withToken<T>(call: (metadata: grpc.Metadata) => Promise<T>): Promise<T> {
    try {
      return await call(await this.metadata());
    } catch (error) {
      if (!(error instanceof GrpcCallError) || error.code !== grpc.status.UNAUTHENTICATED) throw error;
      return call(await this.metadata(true));
    }
  }

  close(): void {
    for (const client of this.clients) client.close();
  }
}

export { grpc };
