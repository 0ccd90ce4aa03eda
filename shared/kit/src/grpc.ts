import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type DescMessage, type DescService, type MessageShape } from '@bufbuild/protobuf';
import { anyPack, durationFromMs } from '@bufbuild/protobuf/wkt';
import { BadRequestSchema, ErrorInfoSchema, grpcPathOf, RetryInfoSchema, StatusSchema } from '@merx/contracts/grpc';
import { bearerTokenOf, type AccessClaims, type TokenVerifier } from './auth.js';
import { runWithContext, type RequestContext } from './context.js';
import {
  InsufficientScope,
  InternalError,
  MalformedRequest,
  MerxError,
  RateLimited,
  Unauthenticated,
  ValidationFailed,
  type ErrorCode,
  type FieldError,
} from './errors.js';
import { newId } from './ids.js';
import { GATEWAY_CREDENTIAL_HEADER, gatewayCredentialRefusal } from './service-credential.js';
import type { Logger } from './logger.js';

export { grpc };

/** The domain of every ErrorInfo Merx sends: `reason` is the REST problem code. */
export const GRPC_ERROR_DOMAIN = 'merx.dev';
/** What one message may weigh, both ways (the design's limit; grpc-js answers RESOURCE_EXHAUSTED above it). */
export const GRPC_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
export const GRPC_SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': GRPC_MAX_MESSAGE_BYTES,
};

const STATUS_OF: Record<ErrorCode, grpc.status> = {
  malformed_request: grpc.status.INVALID_ARGUMENT,
  unauthenticated: grpc.status.UNAUTHENTICATED,
  insufficient_scope: grpc.status.PERMISSION_DENIED,
  not_found: grpc.status.NOT_FOUND,
  method_not_allowed: grpc.status.UNIMPLEMENTED,
  conflict: grpc.status.FAILED_PRECONDITION,
  precondition_failed: grpc.status.FAILED_PRECONDITION,
  payload_too_large: grpc.status.RESOURCE_EXHAUSTED,
  unsupported_media_type: grpc.status.INVALID_ARGUMENT,
  validation_failed: grpc.status.INVALID_ARGUMENT,
  idempotency_key_reused: grpc.status.INVALID_ARGUMENT,
  idempotency_key_in_use: grpc.status.ABORTED,
  rate_limited: grpc.status.RESOURCE_EXHAUSTED,
  internal: grpc.status.INTERNAL,
  unavailable: grpc.status.UNAVAILABLE,
};

export const grpcStatusOf = (code: ErrorCode): grpc.status => STATUS_OF[code];

/**
 * The one place a MerxError becomes a gRPC status, as problem.ts is for HTTP: the canonical code,
 * the detail as message, and google.rpc.Status details (ErrorInfo always, BadRequest for field
 * errors, RetryInfo when throttled) in `grpc-status-details-bin`. Internal errors say nothing but
 * an error id, which the log line carries with the stack.
 */
export function grpcErrorOf(error: unknown, logger?: Logger): grpc.StatusObject {
  const merxError = error instanceof MerxError ? error : new InternalError(error);
  let message = merxError.message;
  if (!merxError.expose) {
    const errorId = newId('err');
    logger?.error({ err: error, error_id: errorId }, 'gRPC call failed');
    message = `An internal error occurred (error id ${errorId}).`;
  }
  const code = STATUS_OF[merxError.code];
  const details = [anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: merxError.code, domain: GRPC_ERROR_DOMAIN }))];
  if (merxError instanceof ValidationFailed) {
    const violations = merxError.errors.map((e) => ({ field: e.field, description: e.message, reason: e.code }));
    details.push(anyPack(BadRequestSchema, create(BadRequestSchema, { fieldViolations: violations })));
  }
  if (merxError instanceof RateLimited) {
    details.push(anyPack(RetryInfoSchema, create(RetryInfoSchema, { retryDelay: durationFromMs(merxError.retryAfterSeconds * 1000) })));
  }
  const metadata = new grpc.Metadata();
  metadata.set('grpc-status-details-bin', Buffer.from(toBinary(StatusSchema, create(StatusSchema, { code, message, details }))));
  return { code, details: message, metadata };
}

/** A client's view of a status's details: the ErrorInfo reason and BadRequest violations, for tests and SDKs. */
export function decodeGrpcStatusDetails(metadata: grpc.Metadata | undefined) {
  const raw = metadata?.get('grpc-status-details-bin')[0];
  if (!(raw instanceof Buffer)) return undefined;
  return fromBinary(StatusSchema, raw);
}

/** Every gRPC service checks the bearer token itself, as REST routes do: nothing trusts the edge blindly. */
export async function authenticateGrpcCall(verifier: TokenVerifier, metadata: grpc.Metadata, scope: string): Promise<AccessClaims> {
  const header = metadata.get('authorization')[0];
  const token = bearerTokenOf(typeof header === 'string' ? header : undefined);
  if (!token)
    throw new Unauthenticated(
      header ? 'The authorization metadata must be "Bearer <access token>".' : 'A bearer access token is required in the authorization metadata.',
    );
  const claims = await verifier.verify(token);
  if (!claims.scopes.has(scope)) throw new InsufficientScope(scope);
  return claims;
}

/** The context a call's work runs in (request id from the edge, merchant and actor from the token), as for HTTP. */
export function grpcCallContext(metadata: grpc.Metadata, claims?: AccessClaims): RequestContext {
  const incoming = metadata.get('x-request-id')[0];
  const requestId = typeof incoming === 'string' && /^req_[0-9a-z]{26}$/.test(incoming) ? incoming : newId('req');
  return { requestId, ...(claims ? { merchantId: claims.merchantId, actor: claims.actor } : {}) };
}

export function runInGrpcContext<T>(context: RequestContext, work: () => T): T {
  return runWithContext(context, work);
}

type Kind = 'unary' | 'server_streaming' | 'client_streaming' | 'bidi_streaming';
const streamsRequests = (kind: Kind) => kind === 'client_streaming' || kind === 'bidi_streaming';
const streamsResponses = (kind: Kind) => kind === 'server_streaming' || kind === 'bidi_streaming';

const UNDECODABLE = Symbol('undecodable');

/** What a request that is no protobuf message of its type becomes, so the handler answers INVALID_ARGUMENT. */
interface Undecodable {
  [UNDECODABLE]: string;
}

/**
 * grpc-js answers a request it cannot decode with INTERNAL, a server fault; the fault is the
 * client's. So decoding never throws: the handler finds the failure and refuses the call.
 */
export function assertDecoded(message: unknown): void {
  if (typeof message === 'object' && message !== null && UNDECODABLE in message) throw new MalformedRequest((message as Undecodable)[UNDECODABLE]);
}

/** A Buffer over the bytes, not a copy of them: grpc-js copies them into its frame anyway. */
const bufferOver = (bytes: Uint8Array) => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

function serializerOf<Desc extends DescMessage>(schema: Desc) {
  return {
    /**
     * A handler may write a message already encoded (a hot path with an encoder of its own,
     * checked byte for byte against protobuf-es): its bytes go out as they are.
     */
    serialize: (message: MessageShape<Desc> | Uint8Array) => bufferOver(message instanceof Uint8Array ? message : toBinary(schema, message)),
    deserialize: (bytes: Buffer): MessageShape<Desc> => {
      try {
        return fromBinary(schema, bytes);
      } catch (error) {
        return { [UNDECODABLE]: `The request is not a valid ${schema.typeName} message: ${(error as Error).message}.` } as unknown as MessageShape<Desc>;
      }
    },
  };
}

/** A grpc-js service definition whose messages are protobuf-es messages of the generated schemas. */
export function grpcServiceDefinitionOf(service: DescService): grpc.ServiceDefinition {
  // Messages of any method of the service: typed per method by the generated schemas, not here.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const definition: Record<string, grpc.MethodDefinition<any, any>> = {};
  for (const method of service.methods) {
    const input = serializerOf(method.input);
    const output = serializerOf(method.output);
    definition[method.name] = {
      path: grpcPathOf(method),
      requestStream: streamsRequests(method.methodKind),
      responseStream: streamsResponses(method.methodKind),
      requestSerialize: input.serialize,
      requestDeserialize: input.deserialize,
      responseSerialize: output.serialize,
      responseDeserialize: output.deserialize,
      originalName: method.name,
    };
  }
  return definition;
}

/** The same methods with the messages left as bytes: the edge forwards them without decoding. */
export function grpcPassThroughDefinitionOf(service: DescService): grpc.ServiceDefinition<grpc.UntypedServiceImplementation> {
  const identity = { serialize: (bytes: Buffer) => bytes, deserialize: (bytes: Buffer) => bytes };
  // Messages of any method of the service: typed per method by the generated schemas, not here.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const definition: Record<string, grpc.MethodDefinition<any, any>> = {};
  for (const method of service.methods) {
    definition[method.name] = {
      path: grpcPathOf(method),
      requestStream: streamsRequests(method.methodKind),
      responseStream: streamsResponses(method.methodKind),
      requestSerialize: identity.serialize,
      requestDeserialize: identity.deserialize,
      responseSerialize: identity.serialize,
      responseDeserialize: identity.deserialize,
      originalName: method.name,
    };
  }
  return definition;
}

export interface RunningGrpcServer {
  server: grpc.Server;
  port: number;
  /** `127.0.0.1:<port>` (a grpc-js target, no scheme). */
  address: string;
  stop(): Promise<void>;
}

/**
 * Refuses, UNAUTHENTICATED, a call whose metadata lacks the service credential under
 * GATEWAY_CREDENTIAL_HEADER: a service's internal gRPC port answers the edge only, which
 * authenticates, throttles and paces every call before forwarding it.
 */
export function gatewayOnlyInterceptor(token: string): grpc.ServerInterceptor {
  return (_method, call) => {
    const listener = new grpc.ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        const refusal = gatewayCredentialRefusal(token, metadata.get(GATEWAY_CREDENTIAL_HEADER)[0]?.toString());
        if (refusal) call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: refusal });
        else next(metadata);
      })
      .build();
    return new grpc.ServerInterceptingCall(call, new grpc.ResponderBuilder().withStart((next) => next(listener)).build());
  };
}

/** Binds a gRPC server (plaintext: TLS ends in front of the edge, as for HTTP) and resolves once it listens. */
export async function startGrpcServer(options: {
  host?: string;
  port: number;
  services: Array<{ definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation }>;
  serverOptions?: grpc.ServerOptions;
  /** Adds what is not a plain service (health checking, reflection) before the port opens. */
  configure?(server: grpc.Server): void;
  /** The service credential: every call must then carry it (the edge's forwarded calls do), see gatewayOnlyInterceptor. */
  gatewayCredential?: string;
}): Promise<RunningGrpcServer> {
  const host = options.host ?? '127.0.0.1';
  const interceptors = options.gatewayCredential ? [gatewayOnlyInterceptor(options.gatewayCredential)] : [];
  const server = new grpc.Server({ ...GRPC_SERVER_OPTIONS, ...options.serverOptions, ...(interceptors.length > 0 ? { interceptors } : {}) });
  for (const { definition, implementation } of options.services) server.addService(definition, implementation);
  options.configure?.(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${options.port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return {
    server,
    port,
    address: `${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}`,
    stop: () => shutDownGrpcServer(server),
  };
}

/** Calls in flight get `graceMs` to finish; then the rest, streams that never end (StreamEvents) among them, are cut. */
export function shutDownGrpcServer(server: grpc.Server, graceMs = 2_000): Promise<void> {
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    force.unref();
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}

/** Runs a unary handler: auth, context, and errors as statuses. */
export function unaryHandler<Req, Res>(
  options: { verifier: TokenVerifier; scope: string; logger: Logger },
  work: (claims: AccessClaims, request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    void (async () => {
      const claims = await authenticateGrpcCall(options.verifier, call.metadata, options.scope);
      assertDecoded(call.request);
      return runInGrpcContext(grpcCallContext(call.metadata, claims), () => work(claims, call.request, call));
    })().then(
      (response) => callback(null, response),
      (error: unknown) => callback(grpcErrorOf(error, options.logger)),
    );
  };
}

/** Ends a stream with the status of `error` (a MerxError, or an internal error that is logged). */
export function endStreamWithError(
  call: grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>,
  error: unknown,
  logger: Logger,
): void {
  if (call.cancelled || call.destroyed) return;
  call.emit('error', grpcErrorOf(error, logger));
}

/** Resolves when the stream can take more (or is gone): a slow reader holds the server back, not its memory. */
export function writeWithBackpressure<T>(call: grpc.ServerWritableStream<unknown, T> | grpc.ServerDuplexStream<unknown, T>, message: T): Promise<void> {
  if (call.write(message)) return Promise.resolve();
  return drained(call);
}

/** Resolves once what was written has been taken (drain), or the call is over. */
export function drained(call: grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      call.off('close', done);
      call.off('cancelled', done);
      resolve();
    };
    call.on('drain', done);
    call.on('close', done);
    call.on('cancelled', done);
  });
}

export interface BulkStreamOptions<Req, Item, Res> {
  verifier: TokenVerifier;
  scope: string;
  logger: Logger;
  /** Items handed to `write` at most at once (one transaction's worth). */
  chunkSize: number;
  /** Items read ahead of the chunks being written; beyond it the stream stops reading (flow control does the rest). */
  readAhead: number;
  /**
   * The items a message stands for, as the use case takes them: one, or a page (`paged`) of one
   * or more, the first at `firstIndex` (its place in the stream, from 0). Throws a MerxError for
   * a message that is neither (both set, a page too long): the call ends INVALID_ARGUMENT.
   */
  itemsOf(message: Req, firstIndex: number): { items: Item[]; paged: boolean };
  /** The one response to a paged message: its items' answers, in order. */
  pageOf(answers: Res[]): Res;
  /**
   * What makes two items the same thing (a sku, a source's external id). A chunk holding a key of
   * a chunk still being written waits for it, so a thing sent twice is applied in stream order.
   */
  keyOf(item: Item): string | undefined;
  /** Writes a chunk and returns one answer per item, in order, once what it reports is durable. */
  write(claims: AccessClaims, items: Item[]): Promise<Res[]>;
}

/**
 * A bulk message's items: one (`single`, the singular field), or the page in `page` (the repeated
 * field) of 1 to `max`. Both at once, or a longer page, is refused as the whole call's bad input.
 */
export function bulkMessageItems<Input, Item>(
  fields: { single: string; page: string; max: number },
  single: Input | undefined,
  page: Input[],
  firstIndex: number,
  itemOf: (input: Input | undefined, index: number) => Item,
): { items: Item[]; paged: boolean } {
  if (page.length === 0) return { items: [itemOf(single, firstIndex)], paged: false };
  const violations: FieldError[] = [];
  if (single !== undefined) violations.push({ field: fields.single, code: 'not_allowed', message: `set ${fields.single} or ${fields.page}, not both` });
  if (page.length > fields.max) violations.push({ field: fields.page, code: 'too_long', message: `${fields.page} must hold 1 to ${fields.max} items` });
  if (violations.length > 0) throw new ValidationFailed(violations);
  return { items: page.map((input, offset) => itemOf(input, firstIndex + offset)), paged: true };
}

/**
 * Chunks being written at once per stream. Two keep the database busy while the previous
 * chunk's answers go out and the next one is read: one chunk alone leaves the database idle for
 * every round trip to the client, and more would only queue on the same cores.
 */
export const BULK_CHUNKS_IN_FLIGHT = 2;

/**
 * A bidirectional bulk stream (UpsertProducts, IngestRecords): items are read as they come and
 * written chunk by chunk, up to BULK_CHUNKS_IN_FLIGHT chunks (each its own transaction) at once;
 * each item is answered in stream order once its chunk has committed. A message of one item gets
 * its answer as it comes; a page gets one message holding its answers once the last of them is
 * in (a page may span chunks), so every request message has exactly one response, in order. A second chunk starts only
 * full (or at the end of the stream), so a fast client gets whole chunks and a slow one is not
 * kept waiting. Reading pauses while `readAhead` items wait and while the client does not take
 * its answers, so memory stays bounded; a cancelled call starts no further chunk.
 */
export function bulkStreamHandler<Req, Item, Res>(options: BulkStreamOptions<Req, Item, Res>): grpc.handleBidiStreamingCall<Req, Res> {
  return (call) => {
    const waiting: Item[] = [];
    /** The request messages not yet answered, in order: how many items each holds, and whether it is a page. */
    const framing: Array<{ items: number; paged: boolean }> = [];
    /** Answers of the oldest unanswered page, while some of its items are still being written. */
    let pageAnswers: Res[] = [];
    /** Chunks started and not yet answered, in stream order. */
    const inFlight: Array<{ keys: Set<string>; written: Promise<Res[]> }> = [];
    let received = 0;
    let ended = false;
    let answering = false;
    let failed = false;
    let pumpScheduled = false;
    const stopped = () => failed || call.cancelled;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      waiting.length = 0;
      endStreamWithError(call, error, options.logger);
    };
    const ready = authenticateGrpcCall(options.verifier, call.metadata, options.scope);
    ready.catch(fail);

    const start = (chunk: Item[]) => {
      const keys = new Set<string>();
      for (const item of chunk) {
        const key = options.keyOf(item);
        if (key !== undefined) keys.add(key);
      }
      const overlapping = inFlight.filter((earlier) => [...keys].some((key) => earlier.keys.has(key)));
      const after = overlapping.length > 0 ? Promise.allSettled(overlapping.map((earlier) => earlier.written)) : Promise.resolve();
      const written = Promise.all([ready, after]).then(([claims]) =>
        stopped() ? [] : runInGrpcContext(grpcCallContext(call.metadata, claims), () => options.write(claims, chunk)),
      );
      // Awaited in order by `answer`; this only keeps a failure of a later chunk from going unhandled meanwhile.
      written.catch(() => undefined);
      inFlight.push({ keys, written });
    };

    /** Starts what may start now, and reads again once there is room. */
    const pump = () => {
      pumpScheduled = false;
      if (stopped()) return;
      while (inFlight.length < BULK_CHUNKS_IN_FLIGHT && waiting.length > 0 && (waiting.length >= options.chunkSize || ended || inFlight.length === 0)) {
        start(waiting.splice(0, options.chunkSize));
      }
      if (call.isPaused() && waiting.length < options.readAhead) call.resume();
      void answer();
    };

    /** Answers the oldest chunk once it has committed, then the next: the stream's order, whatever order the commits came in. */
    const answer = async () => {
      if (answering) return;
      answering = true;
      try {
        while (inFlight.length > 0 && !stopped()) {
          const answers = await inFlight[0]!.written;
          inFlight.shift();
          // The next chunk goes to the database before these answers go to the client.
          pump();
          if (stopped()) break;
          // A chunk's answers go out together (they are in memory already); the next answers wait
          // until the client has taken them, so at most one chunk of answers is ever buffered.
          let flowing = true;
          for (const response of answers) {
            const frame = framing[0]!;
            if (!frame.paged) {
              framing.shift();
              flowing = call.write(response);
              continue;
            }
            pageAnswers.push(response);
            if (pageAnswers.length < frame.items) continue;
            framing.shift();
            flowing = call.write(options.pageOf(pageAnswers));
            pageAnswers = [];
          }
          if (!flowing) await drained(call);
        }
        answering = false;
        if (stopped()) {
          // A cancelled call leaves its unread items behind; chunks under way finish unanswered.
          waiting.length = 0;
          inFlight.length = 0;
        } else if (inFlight.length > 0 || waiting.length > 0) pump();
        else if (ended) call.end();
      } catch (error) {
        answering = false;
        fail(error);
      }
    };

    call.on('data', (message: Req) => {
      if (failed) return;
      let carried: { items: Item[]; paged: boolean };
      try {
        assertDecoded(message);
        carried = options.itemsOf(message, received);
      } catch (error) {
        return fail(error);
      }
      received += carried.items.length;
      framing.push({ items: carried.items.length, paged: carried.paged });
      for (const item of carried.items) waiting.push(item);
      if (waiting.length >= options.readAhead) call.pause();
      // The messages already read join this chunk before it is written.
      if (!pumpScheduled) {
        pumpScheduled = true;
        setImmediate(pump);
      }
    });
    call.on('end', () => {
      ended = true;
      pump();
    });
    call.on('error', () => undefined);
  };
}
