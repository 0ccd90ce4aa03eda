import Router from '@koa/router';
import { authenticate, authOf, idempotencyMiddleware, requireScope, type Db, type MerchantId, type TokenVerifier } from '@merx/kit';
import { presentDestinationWithSecret, type Destination } from '../domain/destination.js';
import { resourceEtag } from '../domain/resource.js';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';

/** `POST /api/v1/destinations/{id}/rotate-secret`: the new secret, shown in this answer only. */
export function destinationSecretRoutes(rotateSecret: (merchantId: MerchantId, id: string) => Promise<Destination>, verifier: TokenVerifier, db: Db): Router {
  const router = new Router({ prefix: '/api/v1/destinations', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  router.post('destinations.rotate_secret', '/:id/rotate-secret', requireScope('config:write'), idempotencyMiddleware(db, MERCHANTS_SCHEMA), async (ctx) => {
    const rotated = await rotateSecret(authOf(ctx).merchantId, ctx.params.id!);
    ctx.set('ETag', resourceEtag(rotated));
    ctx.body = presentDestinationWithSecret(rotated);
  });
  return router;
}
