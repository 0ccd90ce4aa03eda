import Router from '@koa/router';
import { authenticate, authOf, requireScope, type TokenVerifier } from '@merx/kit';
import { presentEntry } from '../domain/entry.js';
import type { AuditLog } from '../usecases/audit-log.js';

/** Read-only by construction: no route writes, so PATCH, PUT and DELETE are 405 with `Allow: GET, HEAD`. */
export function auditRoutes(log: AuditLog, verifier: TokenVerifier): Router {
  const router = new Router({ prefix: '/api/v1/audit', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  router.get('audit.list', '/', requireScope('audit:read'), async (ctx) => {
    ctx.body = await log.listEntries(authOf(ctx).merchantId, ctx.query);
  });
  router.get('audit.verify', '/verify', requireScope('audit:read'), async (ctx) => {
    ctx.body = await log.verifyChain(authOf(ctx).merchantId, ctx.query);
  });
  router.get('audit.retrieve', '/:id', requireScope('audit:read'), async (ctx) => {
    ctx.body = presentEntry(await log.getEntry(authOf(ctx).merchantId, ctx.params.id!));
  });
  return router;
}
