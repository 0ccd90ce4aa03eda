import { buildEvent, checkIfMatch, Unavailable, type Db, type MerchantId, type MerxEvent, type Outbox, type Queryable } from '@merx/kit';
import { merchantFromEvent, presentMerchant, STANDING_FIELDS, validateProfileChanges, type Merchant, type MerchantProfile, type MerchantResource } from '../domain/merchant.js';
import { effectiveChanges, resourceEtag } from '../domain/resource.js';
import { applyMerchantStanding, findMerchant, insertMerchantFromProvisioning, updateMerchantProfile } from '../store/merchants-store.js';
import type { MerchantLookup } from '../upstream/oauth-merchants.js';

/**
 * This service learns of a merchant from merchants.created, moments after the operator provisions
 * it. A merchant it has no row for (the event has not arrived, or the merchant predates this
 * service) is looked up in the oauth service and kept from its answer, as the event would have
 * been. Only when that too fails is there nothing to show: a 503 says "try again shortly", rather
 * than a 404 for the caller's own account.
 */
function notYetKnown(): Unavailable {
  return new Unavailable('The merchant\'s settings are being set up; retry in a moment.');
}

export function merchantProfileUseCases({ db, outbox, lookup, now = () => new Date() }: { db: Db; outbox: Outbox; lookup?: MerchantLookup; now?: () => Date }) {
  async function catchUp(merchantId: MerchantId): Promise<Merchant> {
    const known = await findMerchant(db, merchantId);
    if (known) return known;
    const resource = lookup ? await lookup(merchantId) : undefined;
    if (!resource || resource.id !== merchantId) throw notYetKnown();
    await insertMerchantFromProvisioning(db, merchantFromEvent(resource));
    const caughtUp = await findMerchant(db, merchantId);
    if (!caughtUp) throw notYetKnown();
    return caughtUp;
  }

  return {
    getMerchant: catchUp,

    async updateMerchant(merchantId: MerchantId, body: unknown, ifMatch: string | undefined): Promise<Merchant> {
      const requested = validateProfileChanges(body);
      await catchUp(merchantId);
      return outbox.transaction(async (tx, emit) => {
        const current = await findMerchant(tx, merchantId, { forUpdate: true });
        if (!current) throw notYetKnown();
        checkIfMatch(ifMatch, resourceEtag(current));
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
