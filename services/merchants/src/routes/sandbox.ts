import Router from '@koa/router';
import { authenticate, authOf, idempotencyMiddleware, requestBody, requireScope, type Db, type TokenVerifier } from '@merx/kit';
import { presentReset } from '../domain/sandbox-reset.js';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import type { SandboxUseCases } from '../usecases/sandbox.js';
import { requesterOf } from './configuration.js';

export function sandboxRoutes(sandbox: SandboxUseCases, verifier: TokenVerifier, db: Db): Router {
  const router = new Router({ prefix: '/api/v1/sandbox', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  // 202: every service wipes its part asynchronously; the reset resource shows their progress.
  router.post('sandbox.reset', '/reset', requireScope('sandbox:reset'), idempotencyMiddleware(db, MERCHANTS_SCHEMA), async (ctx) => {
    const reset = await sandbox.requestReset(requesterOf(ctx), requestBody(ctx));
    ctx.status = 202;
    ctx.set('Location', `/api/v1/sandbox/resets/${reset.id}`);
    ctx.body = presentReset(reset);
  });
  router.get('sandbox.resets.retrieve', '/resets/:id', requireScope('merchant:read'), async (ctx) => {
    ctx.body = presentReset(await sandbox.getReset(authOf(ctx).merchantId, ctx.params.id!));
  });
  return router;
}
