import { toBinary, type DescFile } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import {
  bulkItemsInMessage,
  EventService,
  grpcBulkMethods,
  MAX_BULK_PAGE_ITEMS,
  grpcFiles,
  grpcMethodScopes,
  grpcPathOf,
  grpcServices,
  type GrpcOwner,
} from '@merx/contracts/grpc';
import {
  authenticateGrpcCall,
  GATEWAY_CREDENTIAL_HEADER,
  grpc,
  grpcErrorOf,
  grpcPassThroughDefinitionOf,
  GRPC_MAX_MESSAGE_BYTES,
  newId,
  RateLimited,
  shutDownGrpcServer,
  type AccessClaims,
  type Logger,
  type RunningGrpcServer,
  type TokenVerifier,
} from '@merx/kit';
import type { Throttle } from '../throttle/limiter.js';
import { DEFAULT_GRPC_CONNECTION_SETTINGS, GrpcConnectionGuard, grpcServerOptionsOf, listenGrpc, type GrpcConnectionSettings } from './connections.js';
import { Relay } from './relay.js';

export interface GrpcEdgeDeps {
  logger: Logger;
  verifier: TokenVerifier;
  /** The internal gRPC address (`host:port`) of each owning service. */
  upstreams: Record<GrpcOwner, string>;
  /** Per-merchant classes; the bulk class paces streams of items. Absent: no throttling. */
  throttle?: Throttle;
  port: number;
  host?: string;
  /** How connections are bounded (idle, age, keepalive, pings, streams, the deadline to authenticate, caps); the defaults when absent. */
  connections?: GrpcConnectionSettings;
  /** Proxies in front (MERX_TRUSTED_PROXIES): each carries many clients, so the per-address connection cap spares them. */
  trustedProxies?: readonly string[];
  /** The service credential, sent with every forwarded call: the services' gRPC ports answer only the edge. */
  gatewayCredential?: string;
}

export interface RunningGrpcEdge extends RunningGrpcServer {
  health: HealthImplementation;
  /** The connections of the public port, as the guard sees them. */
  connections: GrpcConnectionGuard;
}

/** Metadata the owning service sees: the caller's, minus what only concerns this hop, plus our request id. */
function forwardedMetadata(incoming: grpc.Metadata, requestId: string, credential: string | undefined): grpc.Metadata {
  const metadata = incoming.clone();
  for (const name of ['x-request-id', 'grpc-timeout', 'user-agent', 'te', 'content-type', 'grpc-accept-encoding', 'grpc-encoding', GATEWAY_CREDENTIAL_HEADER])
    metadata.remove(name);
  metadata.set('x-request-id', requestId);
  if (credential) metadata.set(GATEWAY_CREDENTIAL_HEADER, credential);
  return metadata;
}

/** Every file the contract needs, its imports first, as serialized FileDescriptorProtos (for reflection). */
function fileDescriptorProtos(files: DescFile[]): Buffer[] {
  const seen = new Map<string, Buffer>();
  const visit = (file: DescFile) => {
    if (seen.has(file.proto.name)) return;
    for (const dependency of file.dependencies) visit(dependency);
    seen.set(file.proto.name, Buffer.from(toBinary(FileDescriptorProtoSchema, file.proto)));
  };
  files.forEach(visit);
  return [...seen.values()];
}

/** StreamEvents: each call holds one of its merchant's slots (the `event_streams` cap) until it ends. */
const EVENT_STREAM_PATH = grpcPathOf(EventService.method.streamEvents);

/**
 * The first status of a stream wins. grpc-js keeps an error's status until the answers already
 * written are flushed, and a second error meanwhile replaced it: a stream the edge refused
 * (RESOURCE_EXHAUSTED) and whose upstream it cancelled sometimes ended with the upstream's
 * CANCELLED instead.
 */
const sendError = (call: grpc.ServerWritableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>, status: Partial<grpc.StatusObject>) => {
  if (!call.cancelled && !call.destroyed && !call.writableEnded) call.emit('error', status);
};

/**
 * The public gRPC port: authenticates the bearer token and the method's scope, throttles, and
 * forwards each call to the service that owns it as bytes (no message is decoded here). Flow
 * control runs end to end: neither side reads faster than the other can take. Standard health
 * checking and server reflection answer here, so grpcurl works without the .proto files.
 */
export async function startGrpcEdge(deps: GrpcEdgeDeps): Promise<RunningGrpcEdge> {
  const { logger, throttle } = deps;
  const channelOptions = {
    'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': GRPC_MAX_MESSAGE_BYTES,
    // One HTTP/2 connection carries every call: round robin over every address the name resolves
    // to (scaled Compose services, a headless Kubernetes Service) spreads calls over the replicas.
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    // The edge never retries a forwarded call: the client decides, and a stream cannot be
    // replayed once committed anyway. Without a retry buffer grpc-js also stops acknowledging
    // writes before they reach the transport: it kept up to 256 KiB of messages per call and
    // copied that buffer's array after every message sent, 12-13% of the gateway's CPU in a
    // 20,000-product upsert stream (BENCHMARKS.md). Each write now completes when it is sent.
    'grpc.enable_retries': 0,
    'grpc.per_rpc_retry_buffer_size': 0,
  };
  const clients = Object.fromEntries(
    (Object.keys(grpcServices) as GrpcOwner[]).map((owner) => [
      owner,
      new grpc.Client(deps.upstreams[owner], grpc.credentials.createInsecure(), channelOptions),
    ]),
  ) as Record<GrpcOwner, grpc.Client>;
  const identity = (bytes: Buffer) => bytes;

  const settings = deps.connections ?? DEFAULT_GRPC_CONNECTION_SETTINGS;
  const guard = new GrpcConnectionGuard(settings, { logger, ...(deps.trustedProxies ? { trustedProxies: deps.trustedProxies } : {}) });

  const admit = async (path: string, call: Pick<grpc.ServerUnaryCall<Buffer, Buffer>, 'metadata' | 'getPeer'>, write: boolean): Promise<AccessClaims> => {
    const claims = await authenticateGrpcCall(deps.verifier, call.metadata, grpcMethodScopes[path]!);
    // A valid token: the connection is a client's, not one that never authenticates.
    guard.authenticated(call.getPeer());
    if (throttle) {
      const decision = await throttle.merchantCall(claims.merchantId, claims.plan, write);
      if (!decision.allowed) throw new RateLimited(decision.refusedBy!, decision.retryAfterSeconds);
    }
    return claims;
  };
  const optionsOf = (call: { getDeadline(): grpc.Deadline }): grpc.CallOptions => ({ deadline: call.getDeadline() });

  /**
   * A unary batch is charged one request as REST's batches are (admit), and each of its items to
   * the bulk class as a page of the streaming upsert: while the class is empty the call waits,
   * within MERX_THROTTLE_BULK_MAX_WAIT_MS and its deadline, before it is refused.
   */
  const chargeBatch = (path: string, claims: AccessClaims, call: grpc.ServerUnaryCall<Buffer, Buffer>): Promise<void> => {
    const carried = bulkItemsInMessage(path, call.request);
    // More than the service takes is bad input for it to refuse, not a wait for the bulk class.
    const items = carried > MAX_BULK_PAGE_ITEMS ? 1 : carried;
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
    return throttle!.chargeBatch(claims.merchantId, claims.plan, items, {
      cancelled: () => call.cancelled,
      ...(Number.isFinite(deadlineMs) ? { deadline: deadlineMs } : {}),
    });
  };

  /** Upstream answers back to the caller, at the caller's pace. */
  const relayResponses = (
    upstream: grpc.ClientReadableStream<Buffer> | grpc.ClientDuplexStream<Buffer, Buffer>,
    call: grpc.ServerWritableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>,
  ) => {
    const answers = new Relay(upstream, call);
    upstream.on('data', (bytes: Buffer) => answers.write(bytes));
    upstream.on('error', (error: grpc.ServiceError) => sendError(call, { code: error.code, details: error.details, metadata: error.metadata }));
    upstream.on('end', () => {
      if (!call.cancelled) call.end();
    });
    call.on('cancelled', () => upstream.cancel());
  };

  const services: Array<{ definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation }> = [];
  for (const [owner, service] of Object.entries(grpcServices) as Array<[GrpcOwner, (typeof grpcServices)[GrpcOwner]]>) {
    const client = clients[owner];
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const method of service.methods) {
      const path = grpcPathOf(method);
      const writes = grpcMethodScopes[path]!.endsWith(':write');
      if (method.methodKind === 'unary') {
        const batched = grpcBulkMethods.has(path) && throttle !== undefined;
        implementation[method.name] = ((call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
          const requestId = newId('req');
          admit(path, call, writes)
            .then((claims) => (batched ? chargeBatch(path, claims, call) : undefined))
            .then(
              () => {
                if (call.cancelled) return;
                const upstream = client.makeUnaryRequest(
                  path,
                  identity,
                  identity,
                  call.request,
                  forwardedMetadata(call.metadata, requestId, deps.gatewayCredential),
                  optionsOf(call),
                  (error, response) => (error ? callback({ code: error.code, details: error.details, metadata: error.metadata }) : callback(null, response)),
                );
                call.on('cancelled', () => upstream.cancel());
              },
              (error: unknown) => callback(grpcErrorOf(error, logger)),
            );
        }) as grpc.handleUnaryCall<Buffer, Buffer>;
      } else if (method.methodKind === 'server_streaming') {
        const capped = path === EVENT_STREAM_PATH && throttle !== undefined;
        implementation[method.name] = ((call: grpc.ServerWritableStream<Buffer, Buffer>) => {
          const requestId = newId('req');
          admit(path, call, writes)
            .then((claims) => (capped ? throttle.openEventStream(claims.merchantId, claims.plan) : undefined))
            .then(
              (slot) => {
                // A caller gone while its token was checked gets no stream opened for it (StreamEvents would never end).
                if (call.cancelled) return slot?.release();
                const upstream = client.makeServerStreamRequest(
                  path,
                  identity,
                  identity,
                  call.request,
                  forwardedMetadata(call.metadata, requestId, deps.gatewayCredential),
                  optionsOf(call),
                );
                if (slot) {
                  // Every end of the call reaches the upstream's status: its end, its error, the caller's cancel, a stop.
                  upstream.on('status', () => slot.release());
                  call.on('cancelled', () => slot.release());
                }
                relayResponses(upstream, call);
              },
              (error: unknown) => sendError(call, grpcErrorOf(error, logger)),
            );
        }) as grpc.handleServerStreamingCall<Buffer, Buffer>;
      } else {
        const paced = grpcBulkMethods.has(path);
        implementation[method.name] = ((call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
          const requestId = newId('req');
          call.on('error', () => undefined);
          // Until the token is checked nothing is read: the client's messages wait in flow control.
          admit(path, call, writes).then(
            (claims) => {
              if (call.cancelled) return;
              const upstream = client.makeBidiStreamRequest(
                path,
                identity,
                identity,
                forwardedMetadata(call.metadata, requestId, deps.gatewayCredential),
                optionsOf(call),
              );
              relayResponses(upstream, call);
              const pace = paced && throttle ? throttle.bulkPacer(claims.merchantId, claims.plan) : undefined;
              // The caller is read only while the service's stream has room and no message waits for the bulk class.
              const requests = new Relay(call, upstream);
              // Messages go upstream in order; while one waits for the bulk class, the rest queue behind it.
              let tail: Promise<void> = Promise.resolve();
              let queued = 0;
              let refused = false;
              const enqueue = (step: () => void | Promise<void>) => {
                queued += 1;
                requests.hold('bulk class');
                tail = tail
                  .then(() => (refused ? undefined : step()))
                  .catch((error: unknown) => {
                    if (refused) return;
                    refused = true;
                    upstream.cancel();
                    sendError(call, grpcErrorOf(error, logger));
                  })
                  .finally(() => {
                    queued -= 1;
                    if (queued === 0) requests.release('bulk class');
                  });
              };
              call.on('data', (bytes: Buffer) => {
                if (!pace) return requests.write(bytes);
                // A page counts as the items it carries: read off its tags, the message itself goes on as it came.
                // A page longer than any service takes is one message to refuse as bad input, not a
                // wait for the bulk class to make room for work that will never be done.
                const carried = bulkItemsInMessage(path, bytes);
                const items = carried > MAX_BULK_PAGE_ITEMS ? 1 : carried;
                if (queued === 0) {
                  const wait = pace.take(items);
                  if (!wait) return requests.write(bytes);
                  // Backpressure before refusal: no reading until the bulk class has room again.
                  return enqueue(() => wait.then(() => requests.write(bytes)));
                }
                enqueue(async () => {
                  await pace.take(items);
                  requests.write(bytes);
                });
              });
              call.on('end', () => (queued === 0 ? upstream.end() : enqueue(() => void upstream.end())));
            },
            (error: unknown) => sendError(call, grpcErrorOf(error, logger)),
          );
        }) as grpc.handleBidiStreamingCall<Buffer, Buffer>;
      }
    }
    services.push({ definition: grpcPassThroughDefinitionOf(service), implementation });
  }

  const health = new HealthImplementation({
    '': 'SERVING',
    ...Object.fromEntries(Object.values(grpcServices).map((service) => [service.typeName, 'SERVING'])),
  });
  const reflection = new ReflectionService({ merx: { fileDescriptorProtos: fileDescriptorProtos(grpcFiles) } } as never);
  const server = new grpc.Server(grpcServerOptionsOf(settings));
  for (const { definition, implementation } of services) server.addService(definition, implementation);
  health.addToServer(server);
  reflection.addToServer(server);
  const host = deps.host ?? '127.0.0.1';
  const listener = await listenGrpc(server, guard, { host, port: deps.port, logger });
  return {
    server,
    port: listener.port,
    address: `${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${listener.port}`,
    health,
    connections: guard,
    async stop() {
      for (const name of ['', ...Object.values(grpcServices).map((service) => service.typeName)]) health.setStatus(name, 'NOT_SERVING');
      // No new connections; those open get a GOAWAY, calls in flight a moment to finish, and streams that never end (StreamEvents) are cut.
      const closed = listener.close();
      await shutDownGrpcServer(server);
      guard.destroyAll();
      await closed;
      for (const client of Object.values(clients)) client.close();
    },
  };
}
