import { createHash, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import { bearerTokenOf, requestBody, validateRequest, Unauthenticated, updateContext, type Middleware, type Outbox } from '@merx/kit';
import { changeMerchantStanding } from '../usecases/merchant-standing.js';
import { provisionMerchant } from '../usecases/provision-merchant.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * The operator credential comes from configuration; comparing digests keeps the check constant-time
 * whatever the length. Once it holds, the request is checked against its operation in the OpenAPI document (validateRequest).
 */
export function requireOperator(operatorToken: string): Middleware {
  const expected = digest(operatorToken);
  return async function checkOperatorToken(ctx, next) {
    const presented = bearerTokenOf(ctx.get('authorization'));
    if (!presented || !timingSafeEqual(digest(presented), expected)) {
      throw new Unauthenticated('The operator credential is missing or wrong.');
    }
    updateContext({ actor: { type: 'operator', id: 'operator' } });
    return validateRequest(ctx, next);
  };
}

export function adminRoutes(outbox: Outbox, operatorToken: string): Router {
  const router = new Router({ prefix: '/admin/v1', strict: false, sensitive: true });
  router.use(requireOperator(operatorToken));
  router.post('merchants.admin.create', '/merchants', async (ctx) => {
    ctx.status = 201;
    ctx.body = await provisionMerchant(outbox, requestBody(ctx));
  });
  router.patch('merchants.admin.update', '/merchants/:id', async (ctx) => {
    ctx.body = await changeMerchantStanding(outbox, ctx.params.id!, requestBody(ctx));
  });
  return router;
}
