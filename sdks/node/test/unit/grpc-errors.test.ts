// Whole-call gRPC failures as the SDK's typed errors: the status and google.rpc.Status details
// are built here as Merx's kit builds them (ErrorInfo, BadRequest, RetryInfo), so every branch of
// the mapping is checked, including those a running server makes hard to provoke on purpose.
import assert from 'node:assert/strict';
import { create, toBinary, type DescMessage, type MessageInitShape } from '@bufbuild/protobuf';
import { anyPack, durationFromMs } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import {
  AuthenticationError,
  ConnectionError,
  InternalServerError,
  MerxError,
  NotFoundError,
  PermissionDeniedError,
  PreconditionFailedError,
  RateLimitError,
  TimeoutError,
  UnexpectedStatusError,
  UnprocessableEntityError,
} from '../../src/core/errors.js';
import { merxErrorOf } from '../../src/grpc/runtime.js';
import { grpcTargetOf } from '../../src/grpc/connection.js';
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from '../../src/proto/google/rpc/error_details_pb.js';
import { StatusSchema } from '../../src/proto/google/rpc/status_pb.js';

function failure(code: grpc.status, message: string, details: Array<{ schema: DescMessage; value: MessageInitShape<DescMessage> }> = []): grpc.ServiceError {
  const metadata = new grpc.Metadata();
  if (details.length > 0) {
    const status = create(StatusSchema, { code, message, details: details.map(({ schema, value }) => anyPack(schema, create(schema, value))) });
    metadata.set('grpc-status-details-bin', Buffer.from(toBinary(StatusSchema, status)));
  }
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${message}`), { code, details: message, metadata });
}

const reason = (value: string) => ({ schema: ErrorInfoSchema, value: { reason: value, domain: 'merx.dev' } });

describe('gRPC failures as typed errors', () => {
  it('maps each canonical status with its ErrorInfo to the class of its REST twin, carrying the reason as code', () => {
    const cases: Array<[grpc.status, string, new (...args: never[]) => MerxError, number]> = [
      [grpc.status.UNAUTHENTICATED, 'unauthenticated', AuthenticationError, 401],
      [grpc.status.PERMISSION_DENIED, 'insufficient_scope', PermissionDeniedError, 403],
      [grpc.status.NOT_FOUND, 'not_found', NotFoundError, 404],
      [grpc.status.FAILED_PRECONDITION, 'precondition_failed', PreconditionFailedError, 412],
      [grpc.status.INTERNAL, 'internal', InternalServerError, 500],
    ];
    for (const [code, why, ErrorClass, status] of cases) {
      const error = merxErrorOf(failure(code, `refused: ${why}`, [reason(why)]));
      assert.ok(error instanceof ErrorClass, `${grpc.status[code]} gave ${error.name}`);
      assert.equal(error.status, status);
      assert.equal(error.code, why);
      assert.equal(error.detail, `refused: ${why}`);
      assert.equal(error.problem.grpc_status, grpc.status[code]);
      assert.ok(error.cause, 'the grpc-js error stays reachable');
    }
  });

  it('gives the BadRequest field violations as the errors of a 422', () => {
    const error = merxErrorOf(
      failure(grpc.status.INVALID_ARGUMENT, 'products: too long', [
        reason('validation_failed'),
        {
          schema: BadRequestSchema,
          value: { fieldViolations: [{ field: 'products', reason: 'too_long', description: 'products must hold 1 to 1000 products' }] },
        },
      ]),
    );
    assert.ok(error instanceof UnprocessableEntityError);
    assert.deepEqual(error.errors, [{ field: 'products', code: 'too_long', message: 'products must hold 1 to 1000 products' }]);
  });

  it('gives RESOURCE_EXHAUSTED with RetryInfo as a RateLimitError saying how long to wait', () => {
    const error = merxErrorOf(
      failure(grpc.status.RESOURCE_EXHAUSTED, 'bulk class empty', [
        reason('rate_limited'),
        { schema: RetryInfoSchema, value: { retryDelay: durationFromMs(2_500) } },
      ]),
    );
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.retryAfter, 3);
    // Without an ErrorInfo, a message over the size limit is no throttle.
    const tooLarge = merxErrorOf(failure(grpc.status.RESOURCE_EXHAUSTED, 'Received message larger than max (5000000 vs. 4194304)'));
    assert.ok(tooLarge instanceof UnexpectedStatusError);
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.code, 'payload_too_large');
  });

  it('gives no answer as ConnectionError and a deadline as TimeoutError; a bare status still gets its class', () => {
    assert.ok(merxErrorOf(failure(grpc.status.UNAVAILABLE, 'No connection established')) instanceof ConnectionError);
    assert.ok(merxErrorOf(failure(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded')) instanceof TimeoutError);
    const bare = merxErrorOf(failure(grpc.status.PERMISSION_DENIED, 'no'));
    assert.ok(bare instanceof PermissionDeniedError);
    assert.equal(bare.code, undefined);
  });
});

describe('where the gRPC port is', () => {
  it('takes grpcUrl as host:port or with a scheme, else the base URL host on 50051', () => {
    assert.deepEqual(grpcTargetOf(undefined, 'http://localhost:8080'), { address: 'localhost:50051', tls: false });
    assert.deepEqual(grpcTargetOf(undefined, 'https://api.merx.dev'), { address: 'api.merx.dev:50051', tls: true });
    assert.deepEqual(grpcTargetOf('localhost:6000', 'http://localhost:8080'), { address: 'localhost:6000', tls: false });
    assert.deepEqual(grpcTargetOf('grpc.merx.dev:443', 'https://api.merx.dev'), { address: 'grpc.merx.dev:443', tls: true });
    assert.deepEqual(grpcTargetOf('grpcs://grpc.merx.dev', 'http://localhost:8080'), { address: 'grpc.merx.dev:443', tls: true });
    assert.deepEqual(grpcTargetOf('grpc://[::1]:7000', 'https://api.merx.dev'), { address: '[::1]:7000', tls: false });
    assert.throws(() => grpcTargetOf('ftp://x', 'http://localhost:8080'), /grpcUrl must be/);
    assert.throws(() => grpcTargetOf('grpc://host:1/path', 'http://localhost:8080'), /grpcUrl must be/);
  });
});
