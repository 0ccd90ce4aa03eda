import { buildEvent, checkIfMatch, trustedMerchantId, Unavailable, type Db, type MerchantId, type MerxEvent, type Outbox, type Queryable } from '@merx/kit';
import {
  merchantFromEvent,
  presentMerchant,
  standingOf,
  validateProfileChanges,
  type Merchant,
  type MerchantProfile,
  type MerchantResource,
} from '../domain/merchant.js';
import { effectiveChanges, resourceEtag } from '../domain/resource.js';
import { applyMerchantStanding, applyProvisionedMerchant, findMerchant, updateMerchantProfile } from '../store/merchants-store.js';
import type { MerchantLookup } from '../upstream/oauth-merchants.js';

/**
 * This service learns of a merchant from merchants.created, moments after the operator provisions
 * it. A merchant it has no row for (the event has not arrived, or the merchant predates this
 * service) is looked up in the oauth service and kept from its answer, as the event would have
 * been. Only when that too fails is there nothing to show: a 503 says "try again shortly", rather
 * than a 404 for the caller's own account.
 */
function notYetKnown(): Unavailable {
  return new Unavailable("The merchant's settings are being set up; retry in a moment.");
}

export function merchantProfileUseCases({ db, outbox, lookup, now = () => new Date() }: { db: Db; outbox: Outbox; lookup?: MerchantLookup; now?: () => Date }) {
  async function catchUp(merchantId: MerchantId): Promise<Merchant> {
    const known = await findMerchant(db, merchantId);
    if (known) return known;
    const resource = lookup ? await lookup(merchantId) : undefined;
    if (!resource || resource.id !== merchantId) throw notYetKnown();
    await applyProvisionedMerchant(db, merchantFromEvent(resource));
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
 * What the oauth service tells this service about a merchant: merchants.created (both halves, at
 * provisioning) and merchants.standing_changed (the standing alone). Each half is replaced whole
 * and only by a newer version of it, so deliveries in any order, and redeliveries, end on the
 * newest of each. The profile is this service's own: no event from elsewhere changes it after
 * provisioning, and this service's own merchants.updated (it hears them too) changes nothing.
 */
export async function applyMerchantEvent(tx: Queryable, event: MerxEvent): Promise<void> {
  if (event.topic === 'merchants.created') return applyProvisionedMerchant(tx, merchantFromEvent(event.data.object as MerchantResource));
  const standing = standingOf(event.topic, event.data);
  if (standing) await applyMerchantStanding(tx, trustedMerchantId(event.merchant_id), standing);
}
