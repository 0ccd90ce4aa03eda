import assert from 'node:assert/strict';
import { validateNewProduct } from './product.js';
import { presentServiceReset, readSandboxReset, SANDBOX_PRODUCTS } from './sandbox.js';

const RESET_ID = 'rst_01jd3k7q8m2x4v6b9c0d1e2f3g';

describe('sandbox reset domain', () => {
  it('reads the reset id and seed flag of a SandboxReset object', () => {
    assert.deepEqual(readSandboxReset({ id: RESET_ID, object: 'sandbox_reset', status: 'running', seed: true, services: [] }), { id: RESET_ID, seed: true });
    assert.deepEqual(readSandboxReset({ id: RESET_ID, seed: false }), { id: RESET_ID, seed: false });
  });

  for (const [name, object] of [
    ['no id', { seed: true }],
    ['an id of another kind', { id: 'prod_01jd3k7q8m2x4v6b9c0d1e2f3g', seed: true }],
    ['no seed flag', { id: RESET_ID }],
    ['a seed flag that is not a boolean', { id: RESET_ID, seed: 'yes' }],
  ] as const) {
    it(`refuses a reset with ${name} rather than guessing`, () => {
      assert.throws(() => readSandboxReset(object), /sandbox.reset carries no usable reset/);
    });
  }

  it('has three fixture products, each one the API itself would accept as it is', () => {
    assert.equal(SANDBOX_PRODUCTS.length, 3);
    for (const product of SANDBOX_PRODUCTS) {
      assert.match(product.sku, /^SANDBOX-/);
      const { inventoryQuantity, ...rest } = product;
      assert.deepEqual(validateNewProduct({ ...rest, inventory_quantity: inventoryQuantity }), product);
    }
    assert.deepEqual(
      SANDBOX_PRODUCTS.map((p) => `${p.currency} ${p.price}`),
      ['USD 19.99', 'USD 12.50', 'USD 24.00'],
    );
  });

  it('reports the catalog part in the internal.sandbox_service_reset shape', () => {
    assert.deepEqual(presentServiceReset({ id: RESET_ID, seed: true }, { products: 2 }, { products: 3 }, new Date('2026-11-22T10:04:05.123Z')), {
      id: RESET_ID,
      object: 'sandbox_service_reset',
      service: 'catalog',
      removed: { products: 2 },
      seeded: { products: 3 },
      completed_at: '2026-11-22T10:04:05.123Z',
    });
  });
});
