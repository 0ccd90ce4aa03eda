import Router, { type RouterContext } from '@koa/router';
import { authenticate, authOf, requestBody, requireScope, type TokenVerifier } from '@merx/kit';
import { presentMerchant, type Merchant } from '../domain/merchant.js';
import { resourceEtag } from '../domain/resource.js';
import type { merchantProfileUseCases } from '../usecases/merchant-profile.js';

function respondWithMerchant(ctx: RouterContext, merchant: Merchant): void {
  ctx.set('ETag', resourceEtag(merchant));
  ctx.body = presentMerchant(merchant);
}

export function merchantRoutes(merchants: ReturnType<typeof merchantProfileUseCases>, verifier: TokenVerifier): Router {
  const router = new Router({ prefix: '/api/v1/merchant', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  router.get('merchant.retrieve', '/', requireScope('merchant:read'), async (ctx) => {
    respondWithMerchant(ctx, await merchants.getMerchant(authOf(ctx).merchantId));
  });
  router.patch('merchant.update', '/', requireScope('merchant:write'), async (ctx) => {
    respondWithMerchant(ctx, await merchants.updateMerchant(authOf(ctx).merchantId, requestBody(ctx), ctx.get('if-match') || undefined));
  });
  return router;
}
