import type { NewProduct } from './product.js';

/** What the catalog needs of a `sandbox.reset`: the reset it reports on, and whether to seed. */
export interface SandboxReset {
  id: string;
  seed: boolean;
}

/** How many things of each kind a service removed or seeded, in wire names (`products`). */
export type ResetCounts = Record<string, number>;

const RESET_ID = /^rst_[0-9a-z]{26}$/;

/**
 * Reads the reset out of the event's object. The merchants service publishes it checked against
 * the catalogue, so a bad one is a publisher's bug: throwing lets the bus retry it and then park
 * it on the poison queue, where an operator sees it, rather than wiping data on a guess.
 */
export function readSandboxReset(object: Record<string, unknown>): SandboxReset {
  const { id, seed } = object;
  if (typeof id !== 'string' || !RESET_ID.test(id) || typeof seed !== 'boolean') {
    throw new Error(`sandbox.reset carries no usable reset (id ${JSON.stringify(id)}, seed ${JSON.stringify(seed)})`);
  }
  return { id, seed };
}

/** The fixture set a reset with `seed: true` creates: enough to try listing, filtering and changing. */
export const SANDBOX_PRODUCTS: readonly NewProduct[] = [
  {
    sku: 'SANDBOX-TSHIRT',
    title: 'Sandbox T-shirt',
    description: 'A cotton T-shirt from the sandbox fixtures.',
    price: '19.99',
    currency: 'USD',
    status: 'active',
    inventoryQuantity: 100,
    attributes: { size: 'M', color: 'black' },
  },
  {
    sku: 'SANDBOX-MUG',
    title: 'Sandbox mug',
    description: 'A ceramic mug from the sandbox fixtures.',
    price: '12.50',
    currency: 'USD',
    status: 'active',
    inventoryQuantity: 40,
    attributes: { capacity: '350ml' },
  },
  {
    sku: 'SANDBOX-POSTER',
    title: 'Sandbox poster',
    description: 'A printed poster from the sandbox fixtures.',
    price: '24.00',
    currency: 'USD',
    status: 'active',
    inventoryQuantity: null,
    attributes: { format: 'A2' },
  },
];

/** The `internal.sandbox_service_reset` object: the catalog's part of the reset, done. */
export function presentServiceReset(reset: SandboxReset, removed: ResetCounts, seeded: ResetCounts, completedAt: Date) {
  return {
    id: reset.id,
    object: 'sandbox_service_reset' as const,
    service: 'catalog' as const,
    removed,
    seeded,
    completed_at: completedAt.toISOString(),
  };
}
