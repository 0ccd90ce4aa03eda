import type { NewProduct, Product } from '../src/domain/product.js';

/** When the stored product was created and last changed: a time with milliseconds. */
export const storedAt = new Date('2026-11-22T10:04:05.123Z');

/** A product as the store returns it, for the wire and encoding specs; each test changes what it is about. */
export const storedProduct: Product = {
  id: 'prod_01m84wz4ntj32rt4qgsnft38ft',
  merchantId: 'mch_x',
  sku: 'A-1',
  title: 'A',
  description: null,
  price: '1.00',
  currency: 'EUR',
  status: 'active',
  inventoryQuantity: null,
  attributes: {},
  version: 1,
  createdAt: storedAt,
  updatedAt: storedAt,
};

/** A row for insertProductsForMerchant: a new active product at 1.00 USD with nothing optional set. */
export function newProductRow(id: string, sku: string, title: string): { id: string; product: NewProduct } {
  return {
    id,
    product: { sku, title, description: null, price: '1.00', currency: 'USD', status: 'active', inventoryQuantity: null, attributes: {} },
  };
}
