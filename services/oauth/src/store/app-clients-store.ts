import type { Queryable } from '@merx/kit';
import type { AppClient, MerxAccount } from '../provider/index.js';
import { findAppByClientId } from './apps-store.js';
import { OAUTH_SCHEMA } from './migrations.js';
import { findUserWithMerchantStatus } from './users-store.js';

/** The provider's view of an app, looked up on every request that names it. */
export async function findAppClient(db: Queryable, clientId: string): Promise<AppClient | undefined> {
  const app = await findAppByClientId(db, clientId);
  return app && { clientId: app.clientId, secretHash: app.secretHash, name: app.name, redirectUris: app.redirectUris, scopes: app.scopes };
}

/** A user can sign in and keep an app's tokens coming only while their merchant is active. */
export async function findMerxAccount(db: Queryable, userId: string): Promise<MerxAccount | undefined> {
  const user = await findUserWithMerchantStatus(db, userId);
  return user && user.merchantStatus === 'active' ? { userId: user.id, merchantId: user.merchantId } : undefined;
}

/** The grant the user's merchant gave the app, if it is installed. */
export async function findInstalledGrantId(db: Queryable, userId: string, clientId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ grant_id: string }>(
    `SELECT i.grant_id FROM ${OAUTH_SCHEMA}.app_installations i
       JOIN ${OAUTH_SCHEMA}.users u ON u.merchant_id = i.merchant_id
       JOIN ${OAUTH_SCHEMA}.apps a ON a.id = i.app_id
      WHERE u.id = $1 AND a.client_id = $2`,
    [userId, clientId],
  );
  return rows[0]?.grant_id;
}
