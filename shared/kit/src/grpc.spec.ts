import assert from 'node:assert/strict';
import { create, toBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { BadRequestSchema, ErrorInfoSchema, ExportProductsResponseSchema, ProductService, RetryInfoSchema } from '@merx/contracts/grpc';
import { assertDecoded, decodeGrpcStatusDetails, grpc, grpcErrorOf, grpcServiceDefinitionOf } from './grpc.js';
import { InsufficientScope, MalformedRequest, NotFound, RateLimited, ValidationFailed } from './errors.js';
import { idFloorAt, newId } from './ids.js';

describe('MerxError as a gRPC status', () => {
  const detailsOf = (status: grpc.StatusObject) => decodeGrpcStatusDetails(status.metadata)!.details;

  it('gives the canonical code and ErrorInfo with the REST problem code', () => {
    const status = grpcErrorOf(new NotFound('product', 'prod_x'));
    assert.equal(status.code, grpc.status.NOT_FOUND);
    assert.equal(status.details, 'No product with id prod_x.');
    const info = detailsOf(status)
      .map((detail) => anyUnpack(detail, ErrorInfoSchema))
      .find(Boolean)!;
    assert.deepEqual([info.reason, info.domain], ['not_found', 'merx.dev']);
    assert.equal(grpcErrorOf(new InsufficientScope('products:write')).code, grpc.status.PERMISSION_DENIED);
  });

  it('adds BadRequest for field errors and RetryInfo when throttled', () => {
    const invalid = grpcErrorOf(new ValidationFailed([{ field: 'sku', code: 'required', message: 'sku is required' }]));
    assert.equal(invalid.code, grpc.status.INVALID_ARGUMENT);
    const violations = detailsOf(invalid)
      .map((detail) => anyUnpack(detail, BadRequestSchema))
      .find(Boolean)!.fieldViolations;
    assert.deepEqual(
      violations.map((v) => [v.field, v.reason, v.description]),
      [['sku', 'required', 'sku is required']],
    );
    const limited = grpcErrorOf(new RateLimited('bulk', 3));
    assert.equal(limited.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(
      detailsOf(limited)
        .map((detail) => anyUnpack(detail, RetryInfoSchema))
        .find(Boolean)!.retryDelay!.seconds,
      3n,
    );
  });

  it('says nothing of an internal error but an error id', () => {
    const status = grpcErrorOf(new Error('password=hunter2 at db.ts:12'));
    assert.equal(status.code, grpc.status.INTERNAL);
    assert.match(status.details, /^An internal error occurred \(error id err_[0-9a-z]{26}\)\.$/);
  });
});

describe('idFloorAt', () => {
  it('sits above every id minted before the time and below every id minted from it on', () => {
    const at = Date.now();
    assert.ok(newId('evt', at - 1) < idFloorAt('evt', at));
    assert.ok(idFloorAt('evt', at) < newId('evt', at));
  });
});

describe('decoding requests', () => {
  it('turns bytes that are no message of the type into a client error, not a server fault', () => {
    const method = grpcServiceDefinitionOf(ProductService).BatchCreateProducts!;
    const decoded = method.requestDeserialize(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]));
    assert.throws(
      () => assertDecoded(decoded),
      (error: unknown) => error instanceof MalformedRequest && /merx\.v1\.BatchCreateProductsRequest/.test(error.message),
    );
    assert.doesNotThrow(() => assertDecoded(method.requestDeserialize(Buffer.alloc(0))));
  });
});

describe('encoding responses', () => {
  it('encodes a message with protobuf-es, and sends a message given as bytes as it is', () => {
    const method = grpcServiceDefinitionOf(ProductService).ExportProducts!;
    const message = create(ExportProductsResponseSchema, { product: { id: 'prod_1', sku: 'A-1' } });
    const encoded = toBinary(ExportProductsResponseSchema, message);
    assert.deepEqual(new Uint8Array(method.responseSerialize(message)), encoded);
    const framed = new Uint8Array(encoded.length + 4);
    framed.set(encoded, 2);
    const given = framed.subarray(2, 2 + encoded.length);
    const sent = method.responseSerialize(given);
    assert.deepEqual(new Uint8Array(sent), encoded);
    assert.equal(sent.length, encoded.length);
  });
});
