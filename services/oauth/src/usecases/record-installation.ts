import { trustedMerchantId, type Db } from '@merx/kit';
import { deleteGrantArtefacts } from '../store/grants-store.js';
import { upsertInstallationForMerchant } from '../store/apps-store.js';
import { findUserWithMerchantStatus } from '../store/users-store.js';

/**
 * Consent makes the app installed for the consenting user's merchant. A merchant holds one grant
 * per app: if a consent produced a new grant, the one it replaces dies with its refresh tokens.
 */
export async function recordInstallation(
  db: Db,
  input: { userId: string; appId: string; grantId: string; scopes: string[] },
  now: Date = new Date(),
): Promise<void> {
  const user = await findUserWithMerchantStatus(db, input.userId);
  if (!user) throw new Error(`consent recorded for unknown user ${input.userId}`);
  const merchantId = trustedMerchantId(user.merchantId);
  await db.transaction(async (tx) => {
    const replaced = await upsertInstallationForMerchant(tx, merchantId, { ...input, installedAt: now });
    if (replaced) await deleteGrantArtefacts(tx, replaced);
  });
}
