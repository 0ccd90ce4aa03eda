import { resealSecretColumns, type Db, type SealedColumns, type SecretKeyRing } from '@merx/kit';
import { SEALED_DESTINATION_SECRETS } from '@merx/merchants';
import { SEALED_ENDPOINT_SECRETS } from '@merx/webhooks';

/** Every column of the deployment holding a signing secret, sealed with MERX_SECRETS_KEYS. */
export const SEALED_SECRET_COLUMNS: SealedColumns[] = [SEALED_ENDPOINT_SECRETS, SEALED_DESTINATION_SECRETS];

/**
 * Seals every signing secret under the ring's active key: plaintext rows from before sealing and
 * rows sealed under an older key. How an operator finishes a key rotation (new key first in
 * MERX_SECRETS_KEYS, reseal, then drop the old key). Answers the rows changed per table.
 */
export async function resealSigningSecrets(db: Db, ring: SecretKeyRing): Promise<Record<string, number>> {
  const changed: Record<string, number> = {};
  for (const target of SEALED_SECRET_COLUMNS) changed[target.table] = await resealSecretColumns(db, ring, target);
  return changed;
}
