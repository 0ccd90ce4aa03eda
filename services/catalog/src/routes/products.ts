import Router, { type RouterContext } from '@koa/router';
import { authenticate, authOf, idempotencyMiddleware, requestBody, requireScope, type Db, type TokenVerifier } from '@merx/kit';
import { presentProduct, productEtag } from '../domain/present.js';
import type { Product } from '../domain/product.js';
import type { ProductUseCases } from '../usecases/products.js';
import { CATALOG_SCHEMA } from '../store/migrations.js';

function respondWithProduct(ctx: RouterContext, product: Product, status = 200): void {
  ctx.status = status;
  ctx.set('ETag', productEtag(product));
  ctx.body = presentProduct(product);
}

/** Thin routes: authenticate, name the scope, hand the request to a use case, shape the answer. */
export function productRoutes(products: ProductUseCases, verifier: TokenVerifier, db: Db): Router {
  const router = new Router({ prefix: '/api/v1/products', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  const idempotent = idempotencyMiddleware(db, CATALOG_SCHEMA);

  router.post('products.create', '/', requireScope('products:write'), idempotent, async (ctx) => {
    const product = await products.createProduct(authOf(ctx).merchantId, requestBody(ctx));
    ctx.set('Location', `/api/v1/products/${product.id}`);
    respondWithProduct(ctx, product, 201);
  });

  router.get('products.list', '/', requireScope('products:read'), async (ctx) => {
    ctx.body = await products.listProducts(authOf(ctx).merchantId, ctx.query);
  });

  router.get('products.retrieve', '/:id', requireScope('products:read'), async (ctx) => {
    respondWithProduct(ctx, await products.getProduct(authOf(ctx).merchantId, ctx.params.id!));
  });

  router.patch('products.update', '/:id', requireScope('products:write'), async (ctx) => {
    const product = await products.updateProduct(authOf(ctx).merchantId, ctx.params.id!, requestBody(ctx), ctx.get('if-match') || undefined);
    respondWithProduct(ctx, product);
  });

  router.delete('products.delete', '/:id', requireScope('products:write'), async (ctx) => {
    await products.deleteProduct(authOf(ctx).merchantId, ctx.params.id!, ctx.get('if-match') || undefined);
    ctx.status = 204;
  });

  return router;
}
