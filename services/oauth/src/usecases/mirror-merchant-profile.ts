import { handleEventOnce, trustedMerchantId, type Db, type MerxEvent } from '@merx/kit';
import { profileChangeOf } from '../domain/merchant.js';
import { updateMerchantProfile } from '../store/accounts-store.js';
import { OAUTH_SCHEMA } from '../store/migrations.js';

/** The inbox's name for this handler. */
export const PROFILE_MIRROR_CONSUMER = 'oauth.merchant_profile';

export type MirrorOutcome = 'mirrored' | 'not_a_profile_change' | 'duplicate' | 'unknown_merchant';

/**
 * Keeps oauth's copy of the merchant's profile (name, default currency, time zone) equal to the
 * merchants service's, which owns it: oauth shows the merchant in operator answers and in its own
 * merchants.updated. The copy and the inbox row commit together, so a redelivery changes nothing.
 */
export async function mirrorMerchantProfile(db: Db, event: MerxEvent): Promise<MirrorOutcome> {
  const change = profileChangeOf(event.data);
  if (!change) return 'not_a_profile_change';
  // The envelope's merchant is the one whose PATCH the merchants service authenticated.
  const merchantId = trustedMerchantId(event.merchant_id);
  let known = true;
  const handled = await handleEventOnce(db, OAUTH_SCHEMA, PROFILE_MIRROR_CONSUMER, event, async (tx) => {
    known = (await updateMerchantProfile(tx, merchantId, change)) !== undefined;
  });
  if (handled === 'duplicate') return 'duplicate';
  return known ? 'mirrored' : 'unknown_merchant';
}
