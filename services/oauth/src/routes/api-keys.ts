import Router from '@koa/router';
import { authenticate, authOf, idempotencyMiddleware, requestBody, requireScope, type Db, type TokenVerifier } from '@merx/kit';
import { presentApiKey } from '../domain/api-key.js';
import { OAUTH_SCHEMA } from '../store/migrations.js';
import type { ApiKeyUseCases } from '../usecases/api-keys.js';

/** There is no read scope for keys: whoever may see them may also mint and revoke them. */
const SCOPE = 'api_keys:write';

export function apiKeyRoutes(apiKeys: ApiKeyUseCases, verifier: TokenVerifier, db: Db): Router {
  const router = new Router({ prefix: '/api/v1/api-keys', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  const idempotent = idempotencyMiddleware(db, OAUTH_SCHEMA);

  router.post('api_keys.create', '/', requireScope(SCOPE), idempotent, async (ctx) => {
    const auth = authOf(ctx);
    const key = await apiKeys.createApiKey(auth.merchantId, auth.scopes, requestBody(ctx));
    ctx.status = 201;
    ctx.set('Location', `/api/v1/api-keys/${key.id}`);
    ctx.body = key;
  });

  router.get('api_keys.list', '/', requireScope(SCOPE), async (ctx) => {
    ctx.body = await apiKeys.listApiKeys(authOf(ctx).merchantId, ctx.query);
  });

  router.get('api_keys.retrieve', '/:id', requireScope(SCOPE), async (ctx) => {
    ctx.body = presentApiKey(await apiKeys.getApiKey(authOf(ctx).merchantId, ctx.params.id!));
  });

  router.delete('api_keys.revoke', '/:id', requireScope(SCOPE), async (ctx) => {
    await apiKeys.revokeApiKey(authOf(ctx).merchantId, ctx.params.id!);
    ctx.status = 204;
  });

  return router;
}
