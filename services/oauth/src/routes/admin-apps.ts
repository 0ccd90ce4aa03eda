import Router from '@koa/router';
import { requestBody, type Db } from '@merx/kit';
import { registerApp } from '../usecases/register-app.js';
import { requireOperator } from './admin.js';

export interface AppAdminDeps {
  db: Db;
  operatorToken: string;
  /** Promotes the next signing key and answers the published key ids. */
  rotateSigningKeys(): Promise<{ object: 'signing_key_rotation'; current_kid: string; next_kid: string; published_kids: string[] }>;
}

/** Operator-only: registering third-party apps and rotating the token signing keys. */
export function appAdminRoutes(deps: AppAdminDeps): Router {
  const router = new Router({ prefix: '/admin/v1', strict: false, sensitive: true });
  router.use(requireOperator(deps.operatorToken));
  router.post('apps.admin.create', '/apps', async (ctx) => {
    ctx.status = 201;
    ctx.body = await registerApp(deps.db, requestBody(ctx));
  });
  router.post('signing_keys.admin.rotate', '/signing-keys/rotate', async (ctx) => {
    ctx.body = await deps.rotateSigningKeys();
  });
  return router;
}
