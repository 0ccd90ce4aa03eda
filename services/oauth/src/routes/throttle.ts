import Router from '@koa/router';
import { buildEvent, NotFound, requestBody, type Db, type Outbox, type Queryable } from '@merx/kit';
import {
  presentThrottleOverride,
  validateThrottleOverrides,
  type ThrottleOverrideRecord,
  type ThrottleOverrides,
  type ThrottleOverrideSnapshot,
} from '../domain/throttle-override.js';
import { OAUTH_SCHEMA } from '../store/migrations.js';
import { requireOperator } from './admin.js';

interface Row {
  id: string;
  plan: string;
  overrides: ThrottleOverrides | null;
  version: number | null;
  updated_at: Date | null;
}

async function findOverride(db: Queryable, merchantId: string, forUpdate = false): Promise<Row | undefined> {
  const { rows } = await db.query<Row>(
    `SELECT m.id, m.plan, t.overrides, t.version, t.updated_at
       FROM ${OAUTH_SCHEMA}.merchants m LEFT JOIN ${OAUTH_SCHEMA}.throttle_overrides t ON t.merchant_id = m.id
      WHERE m.id = $1${forUpdate ? ' FOR UPDATE OF m' : ''}`,
    [merchantId],
  );
  return rows[0];
}

const recordOf = (row: Row): ThrottleOverrideRecord => ({
  merchantId: row.id,
  plan: row.plan,
  overrides: row.overrides ?? {},
  version: row.version ?? 0,
  updatedAt: row.updated_at ?? new Date(0),
});

export async function listThrottleOverrides(db: Queryable): Promise<ThrottleOverrideSnapshot> {
  const { rows } = await db.query<{ merchant_id: string; overrides: ThrottleOverrides; version: number }>(
    `SELECT merchant_id, overrides, version FROM ${OAUTH_SCHEMA}.throttle_overrides ORDER BY merchant_id`,
  );
  return { overrides: rows };
}

/** The merchant's plan and mode for the `plan` and `merchant_mode` claims of its access tokens. */
export async function merchantPlanOf(db: Queryable, merchantId: string): Promise<{ plan: string; mode: string } | undefined> {
  const { rows } = await db.query<{ plan: string; mode: string }>(`SELECT plan, mode FROM ${OAUTH_SCHEMA}.merchants WHERE id = $1`, [merchantId]);
  return rows[0];
}

/** `PUT /admin/v1/merchants/{id}/throttle`: the operator's per-merchant throttle numbers. */
export function throttleAdminRoutes(db: Db, outbox: Outbox, operatorToken: string): Router {
  const router = new Router({ prefix: '/admin/v1', strict: false, sensitive: true });
  router.use(requireOperator(operatorToken));
  router.get('merchants.admin.throttle.retrieve', '/merchants/:id/throttle', async (ctx) => {
    const row = await findOverride(db, ctx.params.id!);
    if (!row) throw new NotFound('merchant', ctx.params.id);
    ctx.body = presentThrottleOverride(recordOf(row));
  });
  router.put('merchants.admin.throttle.update', '/merchants/:id/throttle', async (ctx) => {
    const overrides = validateThrottleOverrides(requestBody(ctx));
    const merchantId = ctx.params.id!;
    ctx.body = await outbox.transaction(async (tx, emit) => {
      const row = await findOverride(tx, merchantId, true);
      if (!row) throw new NotFound('merchant', merchantId);
      const record: ThrottleOverrideRecord = { merchantId, plan: row.plan, overrides, version: (row.version ?? 0) + 1, updatedAt: new Date() };
      await tx.query(
        `INSERT INTO ${OAUTH_SCHEMA}.throttle_overrides (merchant_id, overrides, version, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (merchant_id) DO UPDATE SET overrides = EXCLUDED.overrides, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at`,
        [merchantId, JSON.stringify(overrides), record.version, record.updatedAt],
      );
      const presented = presentThrottleOverride(record);
      emit(buildEvent('merchants.throttle_updated', merchantId, { object: presented }));
      return presented;
    });
  });
  return router;
}
