import { buildEvent, recordInInbox, trustedMerchantId, type Emit, type MerchantId, type MerxEvent, type Outbox, type Queryable } from '@merx/kit';
import { presentServiceReset, readSandboxReset, SANDBOX_PRODUCTS, type ResetCounts } from '../domain/sandbox.js';
import { CATALOG_SCHEMA } from '../store/migrations.js';
import { deleteAllProductsForMerchant, insertProductForMerchant } from '../store/products-store.js';
import { newProductWithEvent } from './products.js';

/** The inbox's name for this handler: its rows say which resets the catalog has done. */
export const SANDBOX_RESET_CONSUMER = 'catalog.sandbox_reset';

export interface SandboxResetDeps {
  outbox: Outbox;
  now?: () => Date;
}

export interface CatalogResetReport {
  resetId: string;
  removed: ResetCounts;
  seeded: ResetCounts;
}

async function seedSandboxProducts(tx: Queryable, merchantId: MerchantId, emit: Emit, now: Date): Promise<number> {
  for (const input of SANDBOX_PRODUCTS) {
    const { product, event } = newProductWithEvent(merchantId, input, now);
    await insertProductForMerchant(tx, merchantId, product.id, input, product.createdAt);
    emit(event);
  }
  return SANDBOX_PRODUCTS.length;
}

/**
 * The catalog's part of a sandbox reset: every product of the merchant goes, the fixtures come if
 * asked, and the merchants service hears that this part is done. All of it commits with the
 * inbox row, so a redelivered reset (the same event id) finds the row and changes nothing: it
 * neither seeds twice nor wipes what the merchant created since. Returns undefined for such a
 * duplicate.
 *
 * Deleted products emit no products.deleted: `sandbox.reset` already tells subscribers that all
 * of the merchant's data went. Idempotency keys stay: a retry of a request answered before the
 * reset gets that answer again rather than a second product.
 */
export function sandboxResetUseCase({ outbox, now = () => new Date() }: SandboxResetDeps) {
  return async function resetSandboxProducts(event: MerxEvent): Promise<CatalogResetReport | undefined> {
    const reset = readSandboxReset(event.data.object);
    // The envelope's merchant is the one the merchants service checked the reset request for.
    const merchantId = trustedMerchantId(event.merchant_id);
    return outbox.transaction(async (tx, emit) => {
      if (!(await recordInInbox(tx, CATALOG_SCHEMA, SANDBOX_RESET_CONSUMER, event))) return undefined;
      const removed = { products: await deleteAllProductsForMerchant(tx, merchantId) };
      const seeded = { products: reset.seed ? await seedSandboxProducts(tx, merchantId, emit, now()) : 0 };
      emit(buildEvent('internal.sandbox_service_reset', merchantId, { object: presentServiceReset(reset, removed, seeded, now()) }));
      return { resetId: reset.id, removed, seeded };
    });
  };
}

export type ResetSandboxProducts = ReturnType<typeof sandboxResetUseCase>;
