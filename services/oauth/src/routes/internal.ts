import Router from '@koa/router';
import {
  isId,
  NotFound,
  parseTimeFilter,
  requireServiceCredential,
  trustedMerchantId,
  ValidationFailed,
  type FieldError,
  type MerchantId,
  type RevocationSnapshot,
} from '@merx/kit';
import { presentMerchant, type Merchant } from '../domain/merchant.js';
import type { ThrottleOverrideSnapshot } from '../domain/throttle-override.js';

/**
 * Revoked credentials for the token verifiers of the other processes, loaded at their start.
 *
 * Protection: every route needs the service credential (MERX_SERVICE_TOKEN), on top of being
 * served on the oauth service's own port, which only the service network reaches, and never routed
 * by the gateway. The answers are read-only and hold nothing that authenticates.
 */
export function internalRoutes(
  serviceToken: string | undefined,
  loadRevocations: (since: Date) => Promise<RevocationSnapshot>,
  loadThrottleOverrides: () => Promise<ThrottleOverrideSnapshot>,
  loadMerchant: (merchantId: MerchantId) => Promise<Merchant | undefined>,
): Router {
  const router = new Router({ prefix: '/internal/v1', strict: false, sensitive: true });
  router.use(requireServiceCredential(serviceToken));
  router.get('internal.revocations.list', '/revocations', async (ctx) => {
    const errors: FieldError[] = [];
    const since = parseTimeFilter(ctx.query, 'since', errors) ?? new Date(0);
    if (errors.length > 0) throw new ValidationFailed(errors);
    ctx.body = await loadRevocations(since);
  });
  // One merchant as merchants.created announced it: how a service that missed that event (it did
  // not exist yet, or it has not arrived) catches up on a merchant it is asked about.
  router.get('internal.merchants.retrieve', '/merchants/:id', async (ctx) => {
    const id = ctx.params.id!;
    const merchant = isId(id, 'mch') ? await loadMerchant(trustedMerchantId(id)) : undefined;
    if (!merchant) throw new NotFound('merchant', id);
    ctx.body = presentMerchant(merchant);
  });
  // Every merchant's operator throttle override, for gateways starting (or restarting) with an empty limiter store.
  router.get('internal.throttle_overrides.list', '/throttle-overrides', async (ctx) => {
    ctx.body = await loadThrottleOverrides();
  });
  return router;
}
