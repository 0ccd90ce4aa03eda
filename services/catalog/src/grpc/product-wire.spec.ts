import assert from 'node:assert/strict';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { ExportProductsResponseSchema, ProductInputSchema, ProductResult_Outcome, ProductStatus, UpsertProductsResponseSchema } from '@merx/contracts/grpc';
import { ValidationFailed } from '@merx/kit';
import { validateNewProduct, type Product } from '../domain/product.js';
import { storedProduct } from '../../test/stored-product.js';
import type { BulkOutcome } from '../usecases/bulk-products.js';
import { sizeProduct } from './product-encoding.js';
import { encodedUpsertAnswerOf, encodedUpsertPageOf, restBodyOf, wireProductOf, wireResultOf, wireSizeBoundOf } from './product-wire.js';

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
    const product: Product = { ...storedProduct, status: 'draft', inventoryQuantity: 3, attributes: { k: 'v' }, version: 2 };
    const wire = wireProductOf(product);
    assert.equal(wire.status, ProductStatus.DRAFT);
    assert.equal(wire.description, undefined);
    assert.equal(wire.inventoryQuantity, 3);
    assert.equal(wire.createTime!.seconds, BigInt(Math.floor(storedProduct.createdAt.getTime() / 1000)));
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

  it('bounds the bytes a product adds to an export page from above, and closely', () => {
    const base = storedProduct;
    const largest = (character: string): Product => ({
      ...base,
      sku: 'S'.repeat(64),
      title: character.repeat(255),
      description: character.repeat(10_000),
      price: '99999999999999.99',
      inventoryQuantity: 2_147_483_647,
      attributes: Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`${character.repeat(60)}${index}`, character.repeat(500)])),
      version: 2_147_483_647,
    });
    for (const product of [base, largest('x'), largest('é'), largest('😀')]) {
      const page = (products: Product[]) =>
        toBinary(ExportProductsResponseSchema, create(ExportProductsResponseSchema, { products: products.map(wireProductOf) })).length;
      const added = page([product, product]) - page([product]);
      const bound = wireSizeBoundOf(sizeProduct(product));
      assert.ok(bound >= added, `${bound} bytes bound ${added} encoded ones`);
      assert.ok(bound <= added + 1_000, `${bound} bytes is a loose bound of ${added}`);
    }
  });
});

describe('the answer to a page of upserted products', () => {
  it('holds, as `results`, exactly the results each item would have had alone, written or failed, in order', () => {
    const outcomes: BulkOutcome[] = [
      { index: 7, sku: 'A-1', outcome: 'created', product: storedProduct },
      {
        index: 8,
        sku: 'B-1',
        outcome: 'failed',
        problem: {
          code: 'validation_failed',
          detail: 'price: must be a decimal string',
          errors: [{ field: 'price', code: 'invalid_decimal', message: 'must be a decimal string' }],
        },
      },
      { index: 9, sku: storedProduct.sku, outcome: 'updated', product: { ...storedProduct, version: 2 } },
    ];
    const alone = outcomes.map((outcome) => fromBinary(UpsertProductsResponseSchema, encodedUpsertAnswerOf(outcome)).result!);
    const page = fromBinary(UpsertProductsResponseSchema, encodedUpsertPageOf(outcomes.map(encodedUpsertAnswerOf)));
    assert.equal(page.result, undefined);
    assert.deepEqual(page.results, alone);
    assert.deepEqual(
      page.results.map((result) => [result.index, result.outcome]),
      [
        [7, ProductResult_Outcome.CREATED],
        [8, ProductResult_Outcome.FAILED],
        [9, ProductResult_Outcome.UPDATED],
      ],
    );
  });
});
