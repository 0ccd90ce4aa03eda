import type { Queryable } from '@merx/kit';
import { OAUTH_SCHEMA } from './migrations.js';

/**
 * What oidc-provider's own grant revocation removes (the Grant and every code and refresh token
 * issued under it), done in the caller's transaction. JWT access tokens are not stored; the
 * `apps.grant_revoked` event is what stops them.
 */
export async function deleteGrantArtefacts(tx: Queryable, grantId: string): Promise<void> {
  await tx.query(`DELETE FROM ${OAUTH_SCHEMA}.oidc_payloads WHERE grant_id = $1 OR (model = 'Grant' AND id = $1)`, [grantId]);
}
