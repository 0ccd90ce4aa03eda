import Router from '@koa/router';
import type Koa from 'koa';
import { ApiProblem } from '../api/client.js';
import {
  appsPage,
  auditPage,
  overviewPage,
  PROFILE_FIELDS,
  profilePage,
  RESET_CONFIRMATION,
  sandboxPage,
  uninstallPage,
  type AuditEntry,
  type AuditFilters,
  type AuditVerification,
  type InstalledApp,
  type Merchant,
} from '../pages/account.js';
import { FormErrors } from '../web/components.js';
import { noticeOf, queryText, redirectWithNotice, renderPage, signedIn, type Console } from '../web/context.js';
import { isoFromLocalInput } from '../web/format.js';
import { formOf } from '../web/security.js';
import { formProblem } from './errors.js';
import { forgetMerchantSummary } from './merchant-summary.js';

const NOTICES = {
  saved: 'Your profile was saved.',
  uninstalled: 'The app was uninstalled.',
  stale: 'Your profile changed meanwhile; here is the latest version.',
};

const AUDIT_FILTERS = ['resource_id', 'resource_type', 'action', 'actor_id', 'since', 'until', 'cursor'] as const;

function auditFilters(ctx: Koa.Context): AuditFilters {
  const filters: AuditFilters = {};
  for (const name of AUDIT_FILTERS) {
    const value = queryText(ctx, name);
    const normalised = name === 'since' || name === 'until' ? isoFromLocalInput(value) : value;
    if (normalised) filters[name] = normalised;
  }
  return filters;
}

export function accountRoutes(console: Console, router: Router): void {
  router.get('/', async (ctx) => {
    const { api } = signedIn(ctx);
    const [merchant, keys, subscriptions, deadLetters] = await Promise.all([
      api.get<Merchant>('/api/v1/merchant'),
      api.list('/api/v1/api-keys', { limit: 100 }),
      api.list('/api/v1/webhooks/subscriptions', { limit: 100 }),
      api.list('/api/v1/webhooks/dead-letters', { limit: 100 }),
    ]);
    const active = keys.data.filter((key: { revoked_at: string | null }) => !key.revoked_at).length;
    renderPage(
      console,
      ctx,
      overviewPage({
        merchant,
        keys: active,
        subscriptions: subscriptions.data.length,
        deadLetters: deadLetters.data.length,
        publicUrl: console.settings.publicUrl,
      }),
    );
  });

  router.get('/profile', async (ctx) => {
    const merchant = await signedIn(ctx).api.get<Merchant>('/api/v1/merchant');
    renderPage(console, ctx, profilePage({ merchant, csrf: signedIn(ctx).viewer.csrf, notice: noticeOf(ctx, NOTICES) }));
  });

  router.post('/profile', async (ctx) => {
    const { api, session, viewer } = signedIn(ctx);
    const form = await formOf(ctx);
    const values = {
      name: form.get('name') ?? '',
      default_currency: (form.get('default_currency') ?? '').trim(),
      timezone: (form.get('timezone') ?? '').trim(),
    };
    try {
      await api.request('PATCH', '/api/v1/merchant', { body: values, ifMatch: `"v${form.get('version') ?? ''}"` });
      forgetMerchantSummary(session.merchantId);
      redirectWithNotice(ctx, '/console/profile', 'saved');
    } catch (error) {
      if (error instanceof ApiProblem && error.status === 412) return redirectWithNotice(ctx, '/console/profile', 'stale');
      const errors = FormErrors.from(formProblem(error), PROFILE_FIELDS);
      const merchant = await api.get<Merchant>('/api/v1/merchant');
      renderPage(console, ctx, profilePage({ merchant, csrf: viewer.csrf, notice: undefined, errors, values }), 422);
    }
  });

  router.get('/apps', async (ctx) => {
    const query = { cursor: queryText(ctx, 'cursor') || undefined };
    const list = await signedIn(ctx).api.list<InstalledApp>('/api/v1/apps', { limit: 20, cursor: query.cursor });
    renderPage(console, ctx, appsPage(list, query, noticeOf(ctx, NOTICES)));
  });

  /** The API has no single-app read: the app is found on the merchant's own list, so another merchant's id is a 404. */
  async function installedApp(ctx: Koa.Context): Promise<InstalledApp> {
    let cursor: string | undefined;
    for (;;) {
      const page = await signedIn(ctx).api.list<InstalledApp>('/api/v1/apps', { limit: 100, cursor });
      const app = page.data.find((candidate) => candidate.id === ctx.params.id);
      if (app) return app;
      if (!page.has_more || !page.next_cursor) throw new ApiProblem(404, 'not_found', 'Not found', 'No such app is installed.', [], undefined, undefined);
      cursor = page.next_cursor;
    }
  }

  router.get('/apps/:id/uninstall', async (ctx) => {
    renderPage(console, ctx, uninstallPage(await installedApp(ctx), signedIn(ctx).viewer.csrf));
  });

  router.post('/apps/:id/uninstall', async (ctx) => {
    await signedIn(ctx).api.request('DELETE', `/api/v1/apps/${encodeURIComponent(ctx.params.id!)}/grant`);
    redirectWithNotice(ctx, '/console/apps', 'uninstalled');
  });

  router.get('/sandbox', async (ctx) => {
    const { api, viewer } = signedIn(ctx);
    const merchant = await api.get<Merchant>('/api/v1/merchant');
    const resetId = queryText(ctx, 'reset');
    const reset = /^[a-z]+_[0-9a-z]+$/.test(resetId) ? await api.get(`/api/v1/sandbox/resets/${encodeURIComponent(resetId)}`) : undefined;
    renderPage(console, ctx, sandboxPage({ merchant, csrf: viewer.csrf, ...(reset ? { reset } : {}) }));
  });

  router.post('/sandbox/reset', async (ctx) => {
    const { api, viewer } = signedIn(ctx);
    const form = await formOf(ctx);
    const merchant = await api.get<Merchant>('/api/v1/merchant');
    if ((form.get('confirmation') ?? '').trim() !== RESET_CONFIRMATION) {
      return renderPage(
        console,
        ctx,
        sandboxPage({ merchant, csrf: viewer.csrf, error: `Type "${RESET_CONFIRMATION}" exactly to confirm; nothing was reset.` }),
        422,
      );
    }
    try {
      const reset = await api.request<{ id: string }>('POST', '/api/v1/sandbox/reset', { body: { seed: form.get('seed') === 'true' } });
      ctx.status = 303;
      ctx.redirect(`/console/sandbox?reset=${encodeURIComponent(reset.body.id)}`);
    } catch (error) {
      // A live merchant is refused by the API (409): said in plain words on the same page.
      const problem = formProblem(error);
      renderPage(console, ctx, sandboxPage({ merchant, csrf: viewer.csrf, error: problem.detail }), problem.status);
    }
  });

  router.get('/audit', async (ctx) => {
    const filters = auditFilters(ctx);
    const list = await signedIn(ctx).api.list<AuditEntry>('/api/v1/audit', { limit: 25, ...filters });
    renderPage(console, ctx, auditPage(list, filters, undefined));
  });

  router.get('/audit/verify', async (ctx) => {
    const { api } = signedIn(ctx);
    const [verification, list] = await Promise.all([api.get<AuditVerification>('/api/v1/audit/verify'), api.list<AuditEntry>('/api/v1/audit', { limit: 25 })]);
    renderPage(console, ctx, auditPage(list, {}, verification));
  });
}
