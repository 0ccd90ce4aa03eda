import { buildEvent, Unavailable, type Db, type MerchantId, type MerxEvent, type Outbox, type Queryable } from '@merx/kit';
import { merchantFromEvent, presentMerchant, STANDING_FIELDS, validateProfileChanges, type Merchant, type MerchantProfile, type MerchantResource } from '../domain/merchant.js';
import { effectiveChanges } from '../domain/resource.js';
import { applyMerchantStanding, findMerchant, insertMerchantFromProvisioning, updateMerchantProfile } from '../store/merchants-store.js';
import { checkIfMatch } from './config-resources.js';

/**
 * This service learns of a merchant from merchants.created, moments after the operator provisions
 * it. Until then there is nothing to show: a 503 says "try again shortly", which is what it is,
 * rather than a 404 for the caller's own account.
 */
function notYetKnown(): Unavailable {
  return new Unavailable('The merchant\'s settings are being set up; retry in a moment.');
}

export function merchantProfileUseCases({ db, outbox, now = () => new Date() }: { db: Db; outbox: Outbox; now?: () => Date }) {
  return {
    async getMerchant(merchantId: MerchantId): Promise<Merchant> {
      const merchant = await findMerchant(db, merchantId);
      if (!merchant) throw notYetKnown();
      return merchant;
    },

    async updateMerchant(merchantId: MerchantId, body: unknown, ifMatch: string | undefined): Promise<Merchant> {
      const requested = validateProfileChanges(body);
      return outbox.transaction(async (tx, emit) => {
        const current = await findMerchant(tx, merchantId, { forUpdate: true });
        if (!current) throw notYetKnown();
        checkIfMatch(ifMatch, current);
        const changes = effectiveChanges<MerchantProfile>(current, requested);
        if (Object.keys(changes).length === 0) return current;
        const updated = await updateMerchantProfile(tx, merchantId, changes, now());
        const before = presentMerchant(current);
        const previous = Object.fromEntries(Object.keys(changes).map((key) => [key, before[key as keyof MerchantProfile]]));
        emit(buildEvent('merchants.updated', merchantId, { object: presentMerchant(updated), previous }));
        return updated;
      });
    },
  };
}

/**
 * merchants.created, and the standing fields an operator's merchants.updated names in `previous`.
 * This service hears its own profile changes too (same topic): those name no standing field and
 * change nothing here, so an older profile event can never undo a newer plan or suspension.
 */
export async function applyMerchantEvent(tx: Queryable, event: MerxEvent): Promise<void> {
  const merchant = merchantFromEvent(event.data.object as MerchantResource);
  if (event.topic === 'merchants.created') return insertMerchantFromProvisioning(tx, merchant);
  const changed = STANDING_FIELDS.filter((field) => field in ((event.data.previous as Record<string, unknown> | undefined) ?? {}));
  if (changed.length > 0) await applyMerchantStanding(tx, merchant, changed);
}
