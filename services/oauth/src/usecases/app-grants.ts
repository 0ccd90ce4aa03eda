import { buildEvent, NotFound, type MerchantId, type Outbox, type Queryable } from '@merx/kit';
import { presentInstallation, presentRevokedGrant, type AppInstallation } from '../domain/app.js';
import { deleteInstallationByGrantId, deleteInstallationForMerchant, listInstallationsForMerchant } from '../store/apps-store.js';
import { deleteGrantArtefacts } from '../store/grants-store.js';
import { parsePageRequest, toListPage } from '@merx/kit';

export async function listInstalledApps(db: Queryable, merchantId: MerchantId, query: Record<string, unknown>) {
  const page = parsePageRequest(query);
  const rows = await listInstallationsForMerchant(db, merchantId, page);
  return toListPage(
    rows.map((row) => ({ ...row, id: row.appId })),
    page.limit,
    presentInstallation,
  );
}

function revokedEvent(installation: AppInstallation, now: Date) {
  const event = buildEvent('apps.grant_revoked', installation.merchantId, { object: presentRevokedGrant(installation, now) }, now);
  // The token endpoint has no authenticated Merx actor: the app whose replayed token caused the revocation is the actor.
  if (!event.context?.actor) event.context = { ...event.context, actor: { type: 'app', id: installation.clientId } };
  return event;
}

/** The merchant uninstalls an app: its grant, codes and refresh tokens go at once; the event stops its access tokens. */
export async function revokeAppGrant(outbox: Outbox, merchantId: MerchantId, appId: string, now: Date = new Date()): Promise<void> {
  await outbox.transaction(async (tx, emit) => {
    const installation = await deleteInstallationForMerchant(tx, merchantId, appId);
    if (!installation) throw new NotFound('app');
    await deleteGrantArtefacts(tx, installation.grantId);
    emit(revokedEvent(installation, now));
  });
}

/** oidc-provider revoked a grant itself (a refresh token or code used twice): the installation ends too. */
export async function recordGrantRevokedByProvider(outbox: Outbox, grantId: string, now: Date = new Date()): Promise<void> {
  await outbox.transaction(async (tx, emit) => {
    const installation = await deleteInstallationByGrantId(tx, grantId);
    if (installation) emit(revokedEvent(installation, now));
  });
}
