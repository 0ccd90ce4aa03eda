import { handleEventOnce, trustedMerchantId, type Db, type MerxEvent } from '@merx/kit';
import { profileChangeOf } from '../domain/merchant.js';
import { replaceMerchantProfileCopy, type ProfileCopyOutcome } from '../store/accounts-store.js';
import { OAUTH_SCHEMA } from '../store/migrations.js';

/** The inbox's name for this handler. */
export const PROFILE_MIRROR_CONSUMER = 'oauth.merchant_profile';

export type MirrorOutcome = 'mirrored' | 'stale' | 'not_a_profile_change' | 'duplicate' | 'unknown_merchant';

/**
 * Keeps oauth's read-only copy of the merchant's profile (name, default currency, time zone), which
 * the merchants service owns: oauth shows it in operator answers and in merchants.created. The
 * copy is replaced whole, and only by a newer profile version, so deliveries in any order end on
 * the newest profile; the copy and the inbox row commit together, so a redelivery changes nothing.
 */
export async function mirrorMerchantProfile(db: Db, event: MerxEvent): Promise<MirrorOutcome> {
  const change = profileChangeOf(event.data);
  if (!change) return 'not_a_profile_change';
  // The envelope's merchant is the one whose PATCH the merchants service authenticated.
  const merchantId = trustedMerchantId(event.merchant_id);
  let outcome: ProfileCopyOutcome = 'replaced';
  const handled = await handleEventOnce(db, OAUTH_SCHEMA, PROFILE_MIRROR_CONSUMER, event, async (tx) => {
    outcome = await replaceMerchantProfileCopy(tx, merchantId, change);
  });
  if (handled === 'duplicate') return 'duplicate';
  return outcome === 'replaced' ? 'mirrored' : outcome;
}
