import Router, { type RouterContext } from '@koa/router';
import { authenticate, authOf, idempotencyMiddleware, requestBody, requireScope, type Db, type TokenVerifier } from '@merx/kit';
import { resourceEtag, type Resource } from '../domain/resource.js';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import type { ConfigResourceUseCases, Requester } from '../usecases/config-resources.js';

export function requesterOf(ctx: RouterContext): Requester {
  const auth = authOf(ctx);
  return { merchantId: auth.merchantId, mode: auth.mode };
}

/**
 * The five routes of one configuration resource (`/api/v1/sources`, ...), all alike: create
 * (Idempotency-Key, 201 + Location), list, retrieve, update (If-Match), delete. `presentCreated`
 * lets a destination show its secret on creation, and only then.
 */
export function configurationRoutes<F extends object>(
  options: { path: string; topic: string; presentCreated?: (resource: Resource<F>) => unknown },
  resources: ConfigResourceUseCases<F>,
  verifier: TokenVerifier,
  db: Db,
): Router {
  const router = new Router({ prefix: `/api/v1/${options.path}`, strict: false, sensitive: true });
  router.use(authenticate(verifier));
  const idempotent = idempotencyMiddleware(db, MERCHANTS_SCHEMA);
  const read = requireScope('config:read');
  const write = requireScope('config:write');
  const respond = (ctx: RouterContext, resource: Resource<F>, status = 200, body: unknown = resources.present(resource)) => {
    ctx.status = status;
    ctx.set('ETag', resourceEtag(resource));
    ctx.body = body;
  };

  router.post(`${options.topic}.create`, '/', write, idempotent, async (ctx) => {
    const created = await resources.create(requesterOf(ctx), requestBody(ctx));
    ctx.set('Location', `/api/v1/${options.path}/${created.id}`);
    respond(ctx, created, 201, options.presentCreated ? options.presentCreated(created) : undefined);
  });
  router.get(`${options.topic}.list`, '/', read, async (ctx) => {
    ctx.body = await resources.list(authOf(ctx).merchantId, ctx.query);
  });
  router.get(`${options.topic}.retrieve`, '/:id', read, async (ctx) => {
    respond(ctx, await resources.get(authOf(ctx).merchantId, ctx.params.id!));
  });
  router.patch(`${options.topic}.update`, '/:id', write, async (ctx) => {
    respond(ctx, await resources.update(requesterOf(ctx), ctx.params.id!, requestBody(ctx), ctx.get('if-match') || undefined));
  });
  router.delete(`${options.topic}.delete`, '/:id', write, async (ctx) => {
    await resources.delete(authOf(ctx).merchantId, ctx.params.id!, ctx.get('if-match') || undefined);
    ctx.status = 204;
  });
  return router;
}
