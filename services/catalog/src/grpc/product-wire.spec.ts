import assert from 'node:assert/strict';
import { create } from '@bufbuild/protobuf';
import { ProductInputSchema, ProductResult_Outcome, ProductStatus } from '@merx/contracts/grpc';
import { ValidationFailed } from '@merx/kit';
import { validateNewProduct } from '../domain/product.js';
import { restBodyOf, wireProductOf, wireResultOf } from './product-wire.js';

describe('ProductService messages as REST bodies', () => {
  it('reads empty strings as absent fields, so the REST checks say which are required', () => {
    const body = restBodyOf(create(ProductInputSchema, { title: 'No sku', price: '1.00', currency: 'EUR' }));
    assert.equal('sku' in body, false);
    assert.throws(
      () => validateNewProduct(body),
      (error: unknown) => error instanceof ValidationFailed && error.errors.some((e) => e.field === 'sku' && e.code === 'required'),
    );
  });

  it('states the whole product: no description or inventory is null, an unspecified status is left to the use case', () => {
    const body = restBodyOf(create(ProductInputSchema, { sku: 'A-1', title: 'A', price: '1.5', currency: 'EUR' }));
    assert.deepEqual(body, { sku: 'A-1', title: 'A', price: '1.5', currency: 'EUR', description: null, inventory_quantity: null, attributes: {} });
    assert.equal(validateNewProduct(body).status, 'active');
  });

  it('lets an enum number the contract does not name reach the checks, which refuse it', () => {
    const body = restBodyOf(create(ProductInputSchema, { sku: 'A-1', title: 'A', price: '1.00', currency: 'EUR', status: 9 as ProductStatus }));
    assert.throws(
      () => validateNewProduct(body),
      (error: unknown) => error instanceof ValidationFailed && error.errors[0]!.field === 'status' && error.errors[0]!.code === 'invalid_value',
    );
  });

  it('answers a product and a failed item in the wire shape', () => {
    const createdAt = new Date('2026-11-22T10:04:05.123Z');
    const product = {
      id: 'prod_01m84wz4ntj32rt4qgsnft38ft',
      merchantId: 'mch_x',
      sku: 'A-1',
      title: 'A',
      description: null,
      price: '1.00',
      currency: 'EUR',
      status: 'draft' as const,
      inventoryQuantity: 3,
      attributes: { k: 'v' },
      version: 2,
      createdAt,
      updatedAt: createdAt,
    };
    const wire = wireProductOf(product);
    assert.equal(wire.status, ProductStatus.DRAFT);
    assert.equal(wire.description, undefined);
    assert.equal(wire.inventoryQuantity, 3);
    assert.equal(wire.createTime!.seconds, BigInt(Math.floor(createdAt.getTime() / 1000)));
    const failed = wireResultOf({
      index: 4,
      sku: 'B',
      outcome: 'failed',
      problem: { code: 'validation_failed', detail: 'price: bad', errors: [{ field: 'price', code: 'invalid_decimal', message: 'bad' }] },
    });
    assert.equal(failed.outcome, ProductResult_Outcome.FAILED);
    assert.equal(failed.index, 4);
    assert.deepEqual(
      failed.problem!.violations.map((v) => [v.field, v.code]),
      [['price', 'invalid_decimal']],
    );
  });
});
