import Router from '@koa/router';
import { authenticate, authOf, requireScope, type Db, type Outbox, type TokenVerifier } from '@merx/kit';
import { listInstalledApps, revokeAppGrant } from '../usecases/app-grants.js';

/**
 * The merchant's view of the third-party apps it installed. Removing one is an account setting
 * (like changing the account itself), hence `merchant:write`; listing them needs `merchant:read`.
 */
export function installedAppRoutes(outbox: Outbox, db: Db, verifier: TokenVerifier): Router {
  const router = new Router({ prefix: '/api/v1/apps', strict: false, sensitive: true });
  router.use(authenticate(verifier));

  router.get('apps.list', '/', requireScope('merchant:read'), async (ctx) => {
    ctx.body = await listInstalledApps(db, authOf(ctx).merchantId, ctx.query);
  });

  router.delete('apps.uninstall', '/:id/grant', requireScope('merchant:write'), async (ctx) => {
    await revokeAppGrant(outbox, authOf(ctx).merchantId, ctx.params.id!);
    ctx.status = 204;
  });
  return router;
}
