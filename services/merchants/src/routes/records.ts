import Router from '@koa/router';
import { authenticate, authOf, idempotencyMiddleware, requestBody, requireScope, type Db, type TokenVerifier } from '@merx/kit';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import type { RecordUseCases } from '../usecases/records.js';

/** Batch ingestion answers 200 with a result per record: a rejected record does not fail the batch. */
export function recordRoutes(records: RecordUseCases, verifier: TokenVerifier, db: Db): Router {
  const router = new Router({ prefix: '/api/v1/sources/:id/records', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  router.post('sources.records.create', '/', requireScope('config:write'), idempotencyMiddleware(db, MERCHANTS_SCHEMA), async (ctx) => {
    ctx.body = await records.ingestRecords(authOf(ctx).merchantId, ctx.params.id!, requestBody(ctx));
  });
  router.get('sources.records.list', '/', requireScope('config:read'), async (ctx) => {
    ctx.body = await records.listRecords(authOf(ctx).merchantId, ctx.params.id!, ctx.query);
  });
  return router;
}
