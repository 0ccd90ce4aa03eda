import assert from 'node:assert/strict';
import { create, toBinary } from '@bufbuild/protobuf';
import { ExportProductsResponseSchema, ProductResult_Outcome, ProductSchema, UpsertProductsResponseSchema } from '@merx/contracts/grpc';
import type { Product } from '../domain/product.js';
import type { BulkOutcome } from '../usecases/bulk-products.js';
import { ENCODED_PRODUCT_FIELDS, encodeExportPage, encodeExportSingle, encodeProductResultResponse, sizeProduct } from './product-encoding.js';
import { wireProductOf, wireResultOf } from './product-wire.js';
import { storedProduct } from '../../test/stored-product.js';

const plain = storedProduct;

/** Products that reach every branch: empty and absent fields, zero and negative numbers, times around 1970, text beyond ASCII. */
const products: Array<[string, Product]> = [
  ['a plain product', plain],
  ['a full product', { ...plain, description: 'Soft cotton', inventoryQuantity: 12, attributes: { size: 'M', color: 'black' }, status: 'draft', version: 7 }],
  ['an empty description and inventory 0 (present, unlike absent)', { ...plain, description: '', inventoryQuantity: 0 }],
  ['empty strings (left out) and version 0', { ...plain, id: '', sku: '', title: '', price: '', currency: '', version: 0 }],
  ['an unknown status (unspecified)', { ...plain, status: 'gone' as Product['status'] }],
  ['archived', { ...plain, status: 'archived' }],
  ['map entries with empty keys and values, and integer-like keys', { ...plain, attributes: { '': '', b: '', '10': 'ten', '2': 'two' } }],
  ['large numbers', { ...plain, inventoryQuantity: 2_147_483_647, version: 2_147_483_647 }],
  ['negative numbers', { ...plain, inventoryQuantity: -1, version: -2_147_483_648 }],
  ['whole seconds (no nanos)', { ...plain, createdAt: new Date('2026-11-22T10:04:05.000Z'), updatedAt: new Date('2026-11-22T10:04:06.999Z') }],
  ['the epoch (an empty Timestamp)', { ...plain, createdAt: new Date(0), updatedAt: new Date(1) }],
  ['before 1970', { ...plain, createdAt: new Date('1969-12-31T23:59:59.999Z'), updatedAt: new Date('1901-07-04T12:00:00.042Z') }],
  ['far times', { ...plain, createdAt: new Date('0001-01-01T00:00:00.000Z'), updatedAt: new Date('9999-12-31T23:59:59.999Z') }],
  [
    'text beyond ASCII, a lone surrogate included',
    { ...plain, sku: 'SKU-é', title: 'Tasse 😀 ☕', description: 'x\ud800y', attributes: { größe: 'é'.repeat(200), '😀': '\udfff' } },
  ],
  [
    'long fields (multi-byte lengths)',
    {
      ...plain,
      title: 't'.repeat(255),
      description: 'd'.repeat(20_000),
      attributes: Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`k${index}`, 'v'.repeat(500)])),
    },
  ],
];

const byProtobufEs = (product: Product) => toBinary(ProductSchema, wireProductOf(product));

describe('product encoding', () => {
  for (const [name, product] of products) {
    it(`writes the bytes protobuf-es writes: ${name}`, () => {
      const sized = sizeProduct(product);
      assert.equal(sized.size, byProtobufEs(product).length);
      assert.deepEqual(
        new Uint8Array(encodeExportSingle(sized)),
        toBinary(ExportProductsResponseSchema, create(ExportProductsResponseSchema, { product: wireProductOf(product) })),
      );
    });
  }

  it('writes every field merx.v1.Product has, by the number the contract gives it', () => {
    assert.deepEqual(
      Object.fromEntries(ProductSchema.fields.map((field) => [field.localName, field.number])),
      ENCODED_PRODUCT_FIELDS,
      'a field was added to or changed in merx.v1.Product: the encoder must write it',
    );
  });

  it('frames export pages and single products as ExportProductsResponse', () => {
    const all = products.map(([, product]) => product);
    assert.deepEqual(
      new Uint8Array(encodeExportPage(all.map(sizeProduct))),
      toBinary(ExportProductsResponseSchema, create(ExportProductsResponseSchema, { products: all.map(wireProductOf) })),
    );
    assert.deepEqual(new Uint8Array(encodeExportPage([])), toBinary(ExportProductsResponseSchema, create(ExportProductsResponseSchema, { products: [] })));
    assert.deepEqual(
      new Uint8Array(encodeExportSingle(sizeProduct(all[1]!))),
      toBinary(ExportProductsResponseSchema, create(ExportProductsResponseSchema, { product: wireProductOf(all[1]!) })),
    );
  });

  it('answers written items as UpsertProductsResponse', () => {
    const outcomes: BulkOutcome[] = [
      { index: 0, sku: 'A-1', outcome: 'created', product: plain },
      { index: 1, sku: '', outcome: 'updated', product: { ...plain, sku: '' } },
      { index: 300, sku: 'SKU-é', outcome: 'unchanged', product: products[13]![1] },
      { index: 2_147_483_647, sku: 'Z', outcome: 'created', product: products[14]![1] },
    ];
    const numbers = { created: ProductResult_Outcome.CREATED, updated: ProductResult_Outcome.UPDATED, unchanged: ProductResult_Outcome.UNCHANGED };
    for (const outcome of outcomes) {
      if (outcome.outcome === 'failed') continue;
      assert.deepEqual(
        new Uint8Array(encodeProductResultResponse(outcome.index, outcome.sku, numbers[outcome.outcome], sizeProduct(outcome.product))),
        toBinary(UpsertProductsResponseSchema, create(UpsertProductsResponseSchema, { result: wireResultOf(outcome) })),
        `item ${outcome.index}`,
      );
    }
  });
});
