import Router, { type RouterContext } from '@koa/router';
import { authenticate, authOf, idempotencyMiddleware, requestBody, requireScope, type Db, type TokenVerifier } from '@merx/kit';
import { presentSubscription, presentSubscriptionWithSecret, subscriptionEtag } from '../domain/present.js';
import type { Subscription } from '../domain/subscription.js';
import { WEBHOOKS_SCHEMA } from '../store/migrations.js';
import type { DeliveryUseCases } from '../usecases/deliveries.js';
import type { Requester, SubscriptionUseCases } from '../usecases/subscriptions.js';

function respondWithSubscription(ctx: RouterContext, subscription: Subscription, options: { status?: number; withSecret?: boolean } = {}): void {
  ctx.status = options.status ?? 200;
  ctx.set('ETag', subscriptionEtag(subscription));
  ctx.body = options.withSecret ? presentSubscriptionWithSecret(subscription) : presentSubscription(subscription);
}

function requesterOf(ctx: RouterContext): Requester {
  const auth = authOf(ctx);
  return { merchantId: auth.merchantId, mode: auth.mode };
}

/** Thin routes: authenticate, name the scope, hand the request to a use case, shape the answer. */
export function webhookRoutes(subscriptions: SubscriptionUseCases, deliveries: DeliveryUseCases, verifier: TokenVerifier, db: Db): Router {
  const router = new Router({ prefix: '/api/v1/webhooks', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  const idempotent = idempotencyMiddleware(db, WEBHOOKS_SCHEMA);
  const read = requireScope('webhooks:read');
  const write = requireScope('webhooks:write');

  router.post('webhooks.subscriptions.create', '/subscriptions', write, idempotent, async (ctx) => {
    const subscription = await subscriptions.createSubscription(requesterOf(ctx), requestBody(ctx));
    ctx.set('Location', `/api/v1/webhooks/subscriptions/${subscription.id}`);
    respondWithSubscription(ctx, subscription, { status: 201, withSecret: true });
  });
  router.get('webhooks.subscriptions.list', '/subscriptions', read, async (ctx) => {
    ctx.body = await subscriptions.listSubscriptions(authOf(ctx).merchantId, ctx.query);
  });
  router.get('webhooks.subscriptions.retrieve', '/subscriptions/:id', read, async (ctx) => {
    respondWithSubscription(ctx, await subscriptions.getSubscription(authOf(ctx).merchantId, ctx.params.id!));
  });
  router.patch('webhooks.subscriptions.update', '/subscriptions/:id', write, async (ctx) => {
    respondWithSubscription(ctx, await subscriptions.updateSubscription(requesterOf(ctx), ctx.params.id!, requestBody(ctx), ctx.get('if-match') || undefined));
  });
  router.delete('webhooks.subscriptions.delete', '/subscriptions/:id', write, async (ctx) => {
    await subscriptions.deleteSubscription(authOf(ctx).merchantId, ctx.params.id!, ctx.get('if-match') || undefined);
    ctx.status = 204;
  });
  router.post('webhooks.subscriptions.rotate_secret', '/subscriptions/:id/rotate-secret', write, idempotent, async (ctx) => {
    respondWithSubscription(ctx, await subscriptions.rotateSecret(authOf(ctx).merchantId, ctx.params.id!), { withSecret: true });
  });
  router.get('webhooks.subscriptions.stats', '/subscriptions/:id/stats', read, async (ctx) => {
    ctx.body = await subscriptions.subscriptionStats(authOf(ctx).merchantId, ctx.params.id!);
  });

  router.get('webhooks.deliveries.list', '/deliveries', read, async (ctx) => {
    ctx.body = await deliveries.listDeliveries(authOf(ctx).merchantId, ctx.query);
  });
  router.get('webhooks.deliveries.retrieve', '/deliveries/:id', read, async (ctx) => {
    ctx.body = await deliveries.getDelivery(authOf(ctx).merchantId, ctx.params.id!);
  });

  router.get('webhooks.dead_letters.list', '/dead-letters', read, async (ctx) => {
    ctx.body = await deliveries.listDeadLetters(authOf(ctx).merchantId, ctx.query);
  });
  // Registered before /dead-letters/:id so "replay" is never read as an id.
  router.post('webhooks.dead_letters.replay_all', '/dead-letters/replay', write, idempotent, async (ctx) => {
    ctx.status = 202;
    ctx.body = await deliveries.replayDeadLetters(authOf(ctx).merchantId, requestBody(ctx));
  });
  router.get('webhooks.dead_letters.retrieve', '/dead-letters/:id', read, async (ctx) => {
    ctx.body = await deliveries.getDeadLetter(authOf(ctx).merchantId, ctx.params.id!);
  });
  router.post('webhooks.dead_letters.replay', '/dead-letters/:id/replay', write, idempotent, async (ctx) => {
    const replay = await deliveries.replayDeadLetter(authOf(ctx).merchantId, ctx.params.id!);
    ctx.status = 201;
    ctx.set('Location', `/api/v1/webhooks/deliveries/${replay.id}`);
    ctx.body = replay;
  });
  return router;
}

export function eventRoutes(deliveries: DeliveryUseCases, verifier: TokenVerifier): Router {
  const router = new Router({ prefix: '/api/v1/events', strict: false, sensitive: true });
  router.use(authenticate(verifier));
  router.get('events.list', '/', requireScope('webhooks:read'), async (ctx) => {
    ctx.body = await deliveries.listEvents(authOf(ctx).merchantId, ctx.query);
  });
  router.get('events.retrieve', '/:id', requireScope('webhooks:read'), async (ctx) => {
    ctx.body = await deliveries.getEvent(authOf(ctx).merchantId, ctx.params.id!);
  });
  return router;
}
