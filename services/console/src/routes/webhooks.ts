import Router from '@koa/router';
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { ApiProblem } from '../api/client.js';
import type { SubscriptionStats } from '../pages/chart.js';
import { deadLetterPage, deadLettersPage, type DeadLetter, type DeadLetterFilters } from '../pages/dead-letters.js';
import { deliveriesPage, deliveryPage, type Attempt, type Delivery, type DeliveryFilters } from '../pages/deliveries.js';
import { eventPage, eventsPage, type MerxEventView } from '../pages/events.js';
import {
  deleteSubscriptionPage,
  newSubscriptionPage,
  secretPage,
  SUBSCRIPTION_FIELDS,
  subscriptionPage,
  subscriptionsPage,
  type Subscription,
  type SubscriptionFormValues,
} from '../pages/webhooks.js';
import { FormErrors } from '../web/components.js';
import { noticeOf, queryText, redirectWithNotice, renderPage, signedIn, type Console } from '../web/context.js';
import { isoFromLocalInput } from '../web/format.js';
import { formOf } from '../web/security.js';
import { formProblem } from './errors.js';
import { safeReturnPath } from '../domain/session.js';

const NOTICES = {
  saved: 'Your changes were saved.',
  enabled: 'The endpoint is enabled; waiting deliveries resume.',
  disabled: 'The endpoint is disabled; its deliveries wait until you enable it.',
  deleted: 'The endpoint was deleted.',
  stale: 'Someone changed this endpoint meanwhile; here is the latest version. Make your change again.',
};

const id = (ctx: Koa.Context) => encodeURIComponent(ctx.params.id!);
const subscriptionPath = (ctx: Koa.Context) => `/api/v1/webhooks/subscriptions/${id(ctx)}`;

/** Filters as the API takes them: times from the form's UTC inputs, empty ones left out. */
function filtersOf(ctx: Koa.Context, names: string[]): Record<string, string | undefined> {
  const filters: Record<string, string | undefined> = {};
  for (const name of [...names, 'cursor']) {
    const value = queryText(ctx, name);
    filters[name] = (name === 'since' || name === 'until' ? isoFromLocalInput(value) : value) || undefined;
  }
  return filters;
}

function subscriptionInput(form: URLSearchParams): SubscriptionFormValues {
  return { url: (form.get('url') ?? '').trim(), description: (form.get('description') ?? '').trim(), topics: form.getAll('topics') };
}

export function webhookRoutes(console: Console, router: Router): void {
  router.get('/webhooks', async (ctx) => {
    const query = { cursor: queryText(ctx, 'cursor') || undefined };
    const list = await signedIn(ctx).api.list<Subscription>('/api/v1/webhooks/subscriptions', { limit: 20, cursor: query.cursor });
    renderPage(console, ctx, subscriptionsPage(list, query, noticeOf(ctx, NOTICES)));
  });

  router.get('/webhooks/new', (ctx) => renderPage(console, ctx, newSubscriptionPage({ csrf: signedIn(ctx).viewer.csrf, idempotencyKey: randomUUID() })));

  router.post('/webhooks', async (ctx) => {
    const { api, viewer } = signedIn(ctx);
    const form = await formOf(ctx);
    const values = subscriptionInput(form);
    try {
      const created = await api.request<Subscription>('POST', '/api/v1/webhooks/subscriptions', {
        body: { url: values.url, topics: values.topics, ...(values.description ? { description: values.description } : {}) },
        idempotencyKey: form.get('idempotency_key') ?? undefined,
      });
      renderPage(console, ctx, secretPage(created.body, true), 201);
    } catch (error) {
      const errors = FormErrors.from(formProblem(error), SUBSCRIPTION_FIELDS);
      renderPage(console, ctx, newSubscriptionPage({ csrf: viewer.csrf, idempotencyKey: randomUUID(), values, errors }), 422);
    }
  });

  // Fixed paths before /webhooks/:id.
  router.get('/webhooks/deliveries', async (ctx) => {
    const filters: DeliveryFilters = filtersOf(ctx, ['subscription_id', 'event_id', 'topic', 'status', 'since', 'until']);
    const list = await signedIn(ctx).api.list<Delivery>('/api/v1/webhooks/deliveries', { limit: 25, ...filters });
    renderPage(console, ctx, deliveriesPage(list, filters));
  });

  router.get('/webhooks/deliveries/:id', async (ctx) => {
    const delivery = await signedIn(ctx).api.get<Delivery & { attempts: Attempt[] }>(`/api/v1/webhooks/deliveries/${id(ctx)}`);
    renderPage(console, ctx, deliveryPage(delivery));
  });

  router.get('/webhooks/dead-letters', async (ctx) => {
    const filters: DeadLetterFilters = filtersOf(ctx, ['subscription_id', 'topic', 'since', 'until']);
    const list = await signedIn(ctx).api.list<DeadLetter>('/api/v1/webhooks/dead-letters', { limit: 25, ...filters });
    const replayed = queryText(ctx, 'replayed');
    const notice = /^\d+$/.test(replayed)
      ? `${replayed} dead letter${replayed === '1' ? ' was' : 's were'} sent again as new deliveries.${queryText(ctx, 'more') === '1' ? ' More matched: replay again for the next batch.' : ''}`
      : noticeOf(ctx, {});
    renderPage(console, ctx, deadLettersPage(list, filters, signedIn(ctx).viewer.csrf, notice));
  });

  router.post('/webhooks/dead-letters/replay', async (ctx) => {
    const form = await formOf(ctx);
    const filter: Record<string, string> = {};
    for (const name of ['subscription_id', 'topic', 'since', 'until']) {
      const value = form.get(name);
      if (value) filter[name] = value;
    }
    const answer = await signedIn(ctx).api.request<{ replayed: number; has_more: boolean }>('POST', '/api/v1/webhooks/dead-letters/replay', { body: filter });
    ctx.status = 303;
    ctx.redirect(
      `/console/webhooks/dead-letters?${new URLSearchParams({ ...filter, replayed: String(answer.body.replayed), ...(answer.body.has_more ? { more: '1' } : {}) })}`,
    );
  });

  router.get('/webhooks/dead-letters/:id', async (ctx) => {
    const { api, viewer } = signedIn(ctx);
    const letter = await api.get<DeadLetter>(`/api/v1/webhooks/dead-letters/${id(ctx)}`);
    const target = letter.subscription_id
      ? await api.get<Subscription>(`/api/v1/webhooks/subscriptions/${encodeURIComponent(letter.subscription_id)}`).catch(() => undefined)
      : undefined;
    renderPage(console, ctx, deadLetterPage(letter, viewer.csrf, target, noticeOf(ctx, NOTICES)));
  });

  router.post('/webhooks/dead-letters/:id/replay', async (ctx) => {
    const replay = await signedIn(ctx).api.request<Delivery>('POST', `/api/v1/webhooks/dead-letters/${id(ctx)}/replay`);
    ctx.status = 303;
    ctx.redirect(`/console/webhooks/deliveries/${replay.body.id}`);
  });

  router.get('/webhooks/:id', async (ctx) => {
    const { api, viewer } = signedIn(ctx);
    const [sub, stats, recent] = await Promise.all([
      api.get<Subscription>(subscriptionPath(ctx)),
      api.get<SubscriptionStats>(`${subscriptionPath(ctx)}/stats`),
      api.list<Delivery>('/api/v1/webhooks/deliveries', { subscription_id: ctx.params.id!, limit: 5 }),
    ]);
    renderPage(console, ctx, subscriptionPage({ sub, stats, recent: recent.data, csrf: viewer.csrf, notice: noticeOf(ctx, NOTICES) }));
  });

  router.post('/webhooks/:id', async (ctx) => {
    const { api, viewer } = signedIn(ctx);
    const form = await formOf(ctx);
    const values = subscriptionInput(form);
    try {
      await api.request('PATCH', subscriptionPath(ctx), {
        body: { url: values.url, topics: values.topics, description: values.description || null },
        ifMatch: `"v${form.get('version') ?? ''}"`,
      });
      redirectWithNotice(ctx, `/console/webhooks/${id(ctx)}`, 'saved');
    } catch (error) {
      if (error instanceof ApiProblem && error.status === 412) return redirectWithNotice(ctx, `/console/webhooks/${id(ctx)}`, 'stale');
      const errors = FormErrors.from(formProblem(error), SUBSCRIPTION_FIELDS);
      const [sub, stats, recent] = await Promise.all([
        api.get<Subscription>(subscriptionPath(ctx)),
        api.get<SubscriptionStats>(`${subscriptionPath(ctx)}/stats`),
        api.list<Delivery>('/api/v1/webhooks/deliveries', { subscription_id: ctx.params.id!, limit: 5 }),
      ]);
      renderPage(console, ctx, subscriptionPage({ sub, stats, recent: recent.data, csrf: viewer.csrf, notice: undefined, errors, values }), 422);
    }
  });

  router.post('/webhooks/:id/status', async (ctx) => {
    const form = await formOf(ctx);
    const status = form.get('status') === 'enabled' ? 'enabled' : 'disabled';
    try {
      await signedIn(ctx).api.request('PATCH', subscriptionPath(ctx), { body: { status }, ifMatch: `"v${form.get('version') ?? ''}"` });
    } catch (error) {
      if (error instanceof ApiProblem && error.status === 412) return redirectWithNotice(ctx, `/console/webhooks/${id(ctx)}`, 'stale');
      throw error;
    }
    // The dead letter page switches its endpoint back on and returns there.
    const returnTo = safeReturnPath(form.get('return_to') ?? `/console/webhooks/${id(ctx)}`);
    redirectWithNotice(ctx, returnTo, status);
  });

  router.post('/webhooks/:id/rotate-secret', async (ctx) => {
    const rotated = await signedIn(ctx).api.request<Subscription>('POST', `${subscriptionPath(ctx)}/rotate-secret`);
    renderPage(console, ctx, secretPage(rotated.body, false));
  });

  router.get('/webhooks/:id/delete', async (ctx) => {
    const sub = await signedIn(ctx).api.get<Subscription>(subscriptionPath(ctx));
    renderPage(console, ctx, deleteSubscriptionPage(sub, signedIn(ctx).viewer.csrf));
  });

  router.post('/webhooks/:id/delete', async (ctx) => {
    await signedIn(ctx).api.request('DELETE', subscriptionPath(ctx));
    redirectWithNotice(ctx, '/console/webhooks', 'deleted');
  });

  router.get('/events', async (ctx) => {
    const filters = filtersOf(ctx, ['topic', 'since', 'until']);
    const list = await signedIn(ctx).api.list<MerxEventView>('/api/v1/events', { limit: 25, ...filters });
    renderPage(console, ctx, eventsPage(list, filters));
  });

  router.get('/events/:id', async (ctx) => {
    renderPage(console, ctx, eventPage(await signedIn(ctx).api.get<MerxEventView>(`/api/v1/events/${id(ctx)}`)));
  });
}
