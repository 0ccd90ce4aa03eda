import assert from 'node:assert/strict';
import { createContractValidator } from '@merx/contracts';
import { presentPrevious, presentProduct, productEtag } from './present.js';
import type { Product } from './product.js';

const product: Product = {
  id: 'prod_01jd3k7q8m2x4v6b9c0d1e2f3g',
  merchantId: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g',
  sku: 'TSHIRT-BLK-M',
  title: 'Black T-shirt',
  description: null,
  price: '19.99',
  currency: 'USD',
  status: 'active',
  inventoryQuantity: 7,
  attributes: { size: 'M' },
  version: 3,
  createdAt: new Date('2026-11-22T10:04:05.123Z'),
  updatedAt: new Date('2026-11-22T10:05:00.000Z'),
};

describe('product presentation', () => {
  const contract = createContractValidator();

  it('renders the wire shape of the Product schema, without the merchant id', () => {
    const wire = presentProduct(product);
    assert.deepEqual(wire, {
      id: product.id,
      object: 'product',
      sku: 'TSHIRT-BLK-M',
      title: 'Black T-shirt',
      description: null,
      price: '19.99',
      currency: 'USD',
      status: 'active',
      inventory_quantity: 7,
      attributes: { size: 'M' },
      version: 3,
      created_at: '2026-11-22T10:04:05.123Z',
      updated_at: '2026-11-22T10:05:00.000Z',
    });
    assert.deepEqual(contract.validateComponent('Product', wire), []);
  });

  it('puts only the changed fields, as they were, in wire names into previous', () => {
    const previous = presentPrevious(product, { inventoryQuantity: 0, title: 'New', description: 'x' });
    assert.deepEqual(previous, { inventory_quantity: 7, title: 'Black T-shirt', description: null });
    assert.deepEqual(presentPrevious(product, {}), {});
  });

  it('makes a strong ETag of the version', () => {
    assert.equal(productEtag(product), '"v3"');
    assert.equal(productEtag({ version: 1 }), '"v1"');
  });
});
