import {
  buildEvent,
  checkIfMatch,
  newId,
  NotFound,
  parsePageRequest,
  toListPage,
  ValidationFailed,
  type Db,
  type FieldError,
  type MerchantId,
  type Outbox,
} from '@merx/kit';
import { checkEndpointUrl, type TargetPolicy } from '@merx/kit';
import { generateWebhookSecret } from '../delivery/signing.js';
import {
  effectiveSubscriptionChanges,
  SUBSCRIPTION_STATUSES,
  validateNewSubscription,
  validateSubscriptionChanges,
  type Subscription,
  type SubscriptionStatus,
} from '../domain/subscription.js';
import { presentSubscription, presentSubscriptionPrevious, subscriptionEtag } from '../domain/present.js';
import { deleteDeliveriesOfEndpoint, subscriptionStats } from '../store/deliveries-store.js';
import {
  deleteSubscriptionForMerchant,
  findSubscriptionForMerchant,
  insertSubscriptionForMerchant,
  listSubscriptionsForMerchant,
  rotateSubscriptionSecret,
  updateSubscriptionForMerchant,
} from '../store/subscriptions-store.js';
import type { WebhookSettings } from '../settings.js';

export interface SubscriptionUseCaseDeps {
  db: Db;
  outbox: Outbox;
  settings: WebhookSettings;
  now?: () => Date;
  /** DNS for the save-time address check; tests inject one. */
  lookup?: Parameters<typeof checkEndpointUrl>[2];
}

/** Who is asking: live merchants may only subscribe https endpoints. */
export interface Requester {
  merchantId: MerchantId;
  mode: 'sandbox' | 'live' | undefined;
}

const STATS_WINDOW_MS = 24 * 3_600_000;

export function subscriptionUseCases({ db, outbox, settings, now = () => new Date(), lookup }: SubscriptionUseCaseDeps) {
  const policyFor = (requester: Requester): TargetPolicy => ({
    allowPrivateAddresses: settings.allowPrivateAddresses,
    allowedPrivateHosts: settings.allowedPrivateHosts,
    // A token that does not say which mode its merchant is in gets the live rules.
    requireHttps: requester.mode !== 'sandbox',
  });

  /** Shape errors and address errors together, so one response lists everything wrong. */
  async function rejectUnless(errors: FieldError[], url: unknown, requester: Requester): Promise<void> {
    // A URL the schema already refused (not a string, not http(s)) is named once, without a DNS look-up.
    const urlErrors = url === undefined || errors.some((error) => error.field === 'url') ? [] : await checkEndpointUrl(url, policyFor(requester), lookup);
    const all = [...errors.filter((error) => error.field !== 'url'), ...urlErrors, ...errors.filter((error) => error.field === 'url')];
    if (all.length > 0) throw new ValidationFailed(all);
  }

  async function findOrFail(
    merchantId: MerchantId,
    id: string,
    options: { forUpdate?: boolean } = {},
    tx: Parameters<typeof findSubscriptionForMerchant>[0] = db,
  ) {
    const subscription = await findSubscriptionForMerchant(tx, merchantId, id, options);
    if (!subscription) throw new NotFound('webhook subscription', id);
    return subscription;
  }

  return {
    async createSubscription(requester: Requester, body: unknown): Promise<Subscription> {
      const { input, errors } = validateNewSubscription(body);
      await rejectUnless(errors, (body as { url?: unknown }).url ?? undefined, requester);
      const id = newId('wh');
      const created = now();
      const subscription: Subscription = {
        id,
        merchantId: requester.merchantId,
        ...input,
        disabledReason: input.status === 'disabled' ? 'by_merchant' : null,
        secret: generateWebhookSecret(),
        previousSecret: null,
        previousSecretExpiresAt: null,
        secretRotatedAt: null,
        enabledAt: created,
        version: 1,
        createdAt: created,
        updatedAt: created,
      };
      const event = buildEvent('webhooks.subscription_created', requester.merchantId, { object: presentSubscription(subscription) });
      return insertSubscriptionForMerchant(outbox.withEvents(db, [event]), requester.merchantId, id, input, subscription.secret, created);
    },

    getSubscription: (merchantId: MerchantId, id: string) => findOrFail(merchantId, id),

    async listSubscriptions(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      let status: SubscriptionStatus | undefined;
      if (query.status !== undefined) {
        if (typeof query.status !== 'string' || !(SUBSCRIPTION_STATUSES as readonly string[]).includes(query.status)) {
          throw new ValidationFailed([{ field: 'status', code: 'invalid_value', message: `status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}` }]);
        }
        status = query.status as SubscriptionStatus;
      }
      const rows = await listSubscriptionsForMerchant(db, merchantId, page, status ? { status } : {});
      return toListPage(rows, page.limit, presentSubscription);
    },

    async updateSubscription(requester: Requester, id: string, body: unknown, ifMatch: string | undefined): Promise<Subscription> {
      const { changes, errors } = validateSubscriptionChanges(body);
      await rejectUnless(errors, changes.url, requester);
      const { merchantId } = requester;
      return outbox.transaction(async (tx, emit) => {
        const current = await findOrFail(merchantId, id, { forUpdate: true }, tx);
        checkIfMatch(ifMatch, subscriptionEtag(current));
        const effective = effectiveSubscriptionChanges(current, changes);
        if (Object.keys(effective).length === 0) return current;
        const withReason = effective.status === 'disabled' ? { ...effective, disabledReason: 'by_merchant' as const } : effective;
        const updated = await updateSubscriptionForMerchant(tx, merchantId, id, withReason, now());
        const previous = presentSubscriptionPrevious(current, effective.status ? { ...effective, disabledReason: null } : effective);
        emit(buildEvent('webhooks.subscription_updated', merchantId, { object: presentSubscription(updated), previous }));
        return updated;
      });
    },

    async deleteSubscription(merchantId: MerchantId, id: string, ifMatch: string | undefined): Promise<void> {
      await outbox.transaction(async (tx, emit) => {
        const current = await findOrFail(merchantId, id, { forUpdate: true }, tx);
        checkIfMatch(ifMatch, subscriptionEtag(current));
        // Its log and dead letters go with it: nothing could replay them to an endpoint that is gone.
        await deleteDeliveriesOfEndpoint(tx, merchantId, id);
        await deleteSubscriptionForMerchant(tx, merchantId, id);
        emit(buildEvent('webhooks.subscription_deleted', merchantId, { object: presentSubscription(current) }));
      });
    },

    /** A new secret signs from now on; the old one keeps signing alongside it for the overlap. */
    async rotateSecret(merchantId: MerchantId, id: string): Promise<Subscription> {
      return outbox.transaction(async (tx, emit) => {
        await findOrFail(merchantId, id, { forUpdate: true }, tx);
        const rotatedAt = now();
        const rotated = await rotateSubscriptionSecret(
          tx,
          merchantId,
          id,
          generateWebhookSecret(),
          new Date(rotatedAt.getTime() + settings.secretOverlapMs),
          rotatedAt,
        );
        emit(buildEvent('webhooks.secret_rotated', merchantId, { object: presentSubscription(rotated) }));
        return rotated;
      });
    },

    async subscriptionStats(merchantId: MerchantId, id: string) {
      await findOrFail(merchantId, id);
      const windowEnd = now();
      const windowStart = new Date(windowEnd.getTime() - STATS_WINDOW_MS);
      const stats = await subscriptionStats(db, merchantId, id, windowStart);
      return {
        object: 'webhook_subscription_stats' as const,
        subscription_id: id,
        window_start: windowStart.toISOString(),
        window_end: windowEnd.toISOString(),
        attempts: stats.attempts,
        succeeded: stats.succeeded,
        failed: stats.attempts - stats.succeeded,
        success_rate: stats.attempts === 0 ? null : stats.succeeded / stats.attempts,
        latency_ms: { p50: stats.p50, p99: stats.p99 },
        deliveries: { pending: stats.pending, failing: stats.failing, dead: stats.dead },
      };
    },
  };
}

export type SubscriptionUseCases = ReturnType<typeof subscriptionUseCases>;
