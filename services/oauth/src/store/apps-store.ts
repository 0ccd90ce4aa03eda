import type { MerchantId, Queryable } from '@merx/kit';
import type { App, AppInstallation } from '../domain/app.js';
import { OAUTH_SCHEMA } from './migrations.js';

interface AppRow {
  id: string;
  name: string;
  client_id: string;
  secret_hash: string;
  redirect_uris: string[];
  scopes: string[];
  created_at: Date;
}

const toApp = (row: AppRow): App => ({
  id: row.id,
  name: row.name,
  clientId: row.client_id,
  secretHash: row.secret_hash,
  redirectUris: row.redirect_uris,
  scopes: row.scopes,
  createdAt: new Date(row.created_at),
});

export async function insertApp(db: Queryable, app: App): Promise<App> {
  const { rows } = await db.query<AppRow>(
    `INSERT INTO ${OAUTH_SCHEMA}.apps (id, name, client_id, secret_hash, redirect_uris, scopes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [app.id, app.name, app.clientId, app.secretHash, app.redirectUris, app.scopes, app.createdAt],
  );
  return toApp(rows[0]!);
}

/** Apps are platform-wide (registered by the operator), so this lookup has no tenant. */
export async function findAppByClientId(db: Queryable, clientId: string): Promise<App | undefined> {
  const { rows } = await db.query<AppRow>(`SELECT * FROM ${OAUTH_SCHEMA}.apps WHERE client_id = $1`, [clientId]);
  return rows[0] ? toApp(rows[0]) : undefined;
}

interface InstallationRow {
  merchant_id: string;
  app_id: string;
  app_name: string;
  client_id: string;
  grant_id: string;
  user_id: string;
  scopes: string[];
  installed_at: Date;
}

const toInstallation = (row: InstallationRow): AppInstallation => ({
  merchantId: row.merchant_id,
  appId: row.app_id,
  appName: row.app_name,
  clientId: row.client_id,
  grantId: row.grant_id,
  userId: row.user_id,
  scopes: row.scopes,
  installedAt: new Date(row.installed_at),
});

const SELECT_INSTALLATION = `SELECT i.*, a.name AS app_name, a.client_id FROM ${OAUTH_SCHEMA}.app_installations i JOIN ${OAUTH_SCHEMA}.apps a ON a.id = i.app_id`;

/** Records (or replaces) the merchant's grant to the app; returns the grant it replaced, if any. */
export async function upsertInstallationForMerchant(
  tx: Queryable,
  merchantId: MerchantId,
  installation: Pick<AppInstallation, 'appId' | 'grantId' | 'userId' | 'scopes' | 'installedAt'>,
): Promise<string | undefined> {
  const { rows: before } = await tx.query<{ grant_id: string }>(
    `SELECT grant_id FROM ${OAUTH_SCHEMA}.app_installations WHERE merchant_id = $1 AND app_id = $2 FOR UPDATE`,
    [merchantId, installation.appId],
  );
  await tx.query(
    `INSERT INTO ${OAUTH_SCHEMA}.app_installations (merchant_id, app_id, grant_id, user_id, scopes, installed_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (merchant_id, app_id) DO UPDATE SET grant_id = EXCLUDED.grant_id, user_id = EXCLUDED.user_id, scopes = EXCLUDED.scopes`,
    [merchantId, installation.appId, installation.grantId, installation.userId, installation.scopes, installation.installedAt],
  );
  const previous = before[0]?.grant_id;
  return previous && previous !== installation.grantId ? previous : undefined;
}

export async function findInstallationForMerchant(db: Queryable, merchantId: MerchantId, appId: string): Promise<AppInstallation | undefined> {
  const { rows } = await db.query<InstallationRow>(`${SELECT_INSTALLATION} WHERE i.merchant_id = $1 AND i.app_id = $2`, [merchantId, appId]);
  return rows[0] ? toInstallation(rows[0]) : undefined;
}

export async function findInstallationForMerchantAndClient(db: Queryable, merchantId: MerchantId, clientId: string): Promise<AppInstallation | undefined> {
  const { rows } = await db.query<InstallationRow>(`${SELECT_INSTALLATION} WHERE i.merchant_id = $1 AND a.client_id = $2`, [merchantId, clientId]);
  return rows[0] ? toInstallation(rows[0]) : undefined;
}

/** Ordered by app id, newest app first (ids are time-sortable); `after` is the last app id of the previous page. */
export async function listInstallationsForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  page: { limit: number; after: string | undefined },
): Promise<AppInstallation[]> {
  const params: unknown[] = [merchantId, page.limit + 1];
  if (page.after) params.push(page.after);
  const { rows } = await db.query<InstallationRow>(
    `${SELECT_INSTALLATION} WHERE i.merchant_id = $1 ${page.after ? 'AND i.app_id < $3' : ''} ORDER BY i.app_id DESC LIMIT $2`,
    params,
  );
  return rows.map(toInstallation);
}

/** Removes the merchant's installation; returns it, or undefined if there was none. */
export async function deleteInstallationForMerchant(tx: Queryable, merchantId: MerchantId, appId: string): Promise<AppInstallation | undefined> {
  const installation = await findInstallationForMerchant(tx, merchantId, appId);
  if (!installation) return undefined;
  await tx.query(`DELETE FROM ${OAUTH_SCHEMA}.app_installations WHERE merchant_id = $1 AND app_id = $2`, [merchantId, appId]);
  return installation;
}

/** A grant revoked by oidc-provider itself (refresh token or code reuse): which merchant's installation it was. */
export async function deleteInstallationByGrantId(tx: Queryable, grantId: string): Promise<AppInstallation | undefined> {
  const { rows } = await tx.query<InstallationRow>(`${SELECT_INSTALLATION} WHERE i.grant_id = $1`, [grantId]);
  if (!rows[0]) return undefined;
  await tx.query(`DELETE FROM ${OAUTH_SCHEMA}.app_installations WHERE grant_id = $1`, [grantId]);
  return toInstallation(rows[0]);
}
