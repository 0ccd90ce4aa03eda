import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { EventService, StreamEventsResponseSchema, type StreamEventsRequest, type StreamEventsResponse } from '@merx/contracts/grpc';
import {
  assertDecoded,
  authenticateGrpcCall,
  endStreamWithError,
  grpcServiceDefinitionOf,
  writeWithBackpressure,
  type grpc,
  type Logger,
  Unavailable,
  type TokenVerifier,
} from '@merx/kit';
import type { EventCursor, FollowEvents } from '../usecases/event-stream.js';
import type { StoredEvent } from '../domain/delivery.js';

function cursorOf(request: StreamEventsRequest): EventCursor {
  if (request.cursor.case === 'afterEventId') return { afterEventId: request.cursor.value };
  if (request.cursor.case === 'startTime') return { startTime: timestampDate(request.cursor.value) };
  return undefined;
}

function wireEventOf(event: StoredEvent): StreamEventsResponse {
  return create(StreamEventsResponseSchema, {
    event: { id: event.id, type: event.topic, createTime: timestampFromDate(event.createdAt), data: event.payload.data as never },
  });
}

/** merx.v1.EventService: the events of `GET /events`, followed live; it ends only when the client cancels (or the server stops). */
export function eventGrpcService(followEvents: FollowEvents, verifier: TokenVerifier, logger: Logger) {
  const streamEvents = (call: grpc.ServerWritableStream<StreamEventsRequest, StreamEventsResponse>) => {
    // A stream waiting for events wakes when its caller goes, and lets go of its place at once.
    const gone = new AbortController();
    call.on('cancelled', () => gone.abort());
    call.on('close', () => gone.abort());
    void (async () => {
      const claims = await authenticateGrpcCall(verifier, call.metadata, 'webhooks:read');
      assertDecoded(call.request);
      if (call.cancelled) return;
      for await (const event of followEvents(claims.merchantId, cursorOf(call.request), call.request.topics, gone.signal)) {
        await writeWithBackpressure(call, wireEventOf(event));
      }
      // Only a stopping service ends a stream its caller did not: the caller resumes elsewhere from its last id.
      if (!gone.signal.aborted) throw new Unavailable('The service is stopping; resume the stream after the last event id received.');
    })().catch((error: unknown) => endStreamWithError(call, error, logger));
  };
  return { definition: grpcServiceDefinitionOf(EventService), implementation: { StreamEvents: streamEvents } as grpc.UntypedServiceImplementation };
}
