import Router from '@koa/router';
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { checkCondition } from '@merx/merchants/conditions';
import { ApiProblem, type ApiClient } from '../api/client.js';
import {
  deleteResourcePage,
  RESOURCE_KINDS,
  resourceFormPage,
  resourcePage,
  resourcesPage,
  type Lookups,
  type Resource,
  type ResourceKind,
} from '../pages/configuration.js';
import { FormErrors } from '../web/components.js';
import { noticeOf, queryText, redirectWithNotice, renderPage, signedIn, type Console } from '../web/context.js';
import { formOf } from '../web/security.js';
import { formProblem } from './errors.js';

/** Form fields that are lists (checkbox groups). */
const LIST_FIELDS = new Set(['event_types', 'rule_ids']);

const NOTICES = {
  created: 'Created.',
  saved: 'Your changes were saved.',
  deleted: 'Deleted.',
  stale: 'It changed meanwhile; here is the latest version. Make your change again.',
};

async function lookupsFor(kind: ResourceKind, api: ApiClient): Promise<Lookups> {
  if (!kind.needsLookups) return { sources: [], destinations: [], rules: [] };
  const [sources, destinations, rules] = await Promise.all(
    ['sources', 'destinations', 'rules'].map((collection) => api.list<Resource>(`/api/v1/${collection}`, { limit: 100 })),
  );
  return { sources: sources!.data, destinations: destinations!.data, rules: rules!.data };
}

function kindRoutes(console: Console, router: Router, kind: ResourceKind): void {
  const base = `/${kind.collection}`;
  const apiPath = (ctx: Koa.Context) => `/api/v1/${kind.collection}/${encodeURIComponent(ctx.params.id!)}`;
  const detail = (ctx: Koa.Context) => `/console/${kind.collection}/${encodeURIComponent(ctx.params.id!)}`;

  async function showForm(ctx: Koa.Context, status: number, values: Record<string, string | string[] | undefined>, errors?: FormErrors, existing?: Resource) {
    const { api, viewer } = signedIn(ctx);
    renderPage(
      console,
      ctx,
      resourceFormPage(kind, {
        csrf: viewer.csrf,
        values,
        lookups: await lookupsFor(kind, api),
        ...(errors ? { errors } : {}),
        ...(existing ? { existing } : { idempotencyKey: randomUUID() }),
      }),
      status,
    );
  }

  const submitted = (form: URLSearchParams) => {
    const values: Record<string, string | string[]> = {};
    for (const name of new Set(form.keys())) values[name] = LIST_FIELDS.has(name) ? form.getAll(name) : form.get(name)!;
    return values;
  };

  router.get(base, async (ctx) => {
    const query = { cursor: queryText(ctx, 'cursor') || undefined };
    const page = await signedIn(ctx).api.list<Resource>(`/api/v1/${kind.collection}`, { limit: 20, cursor: query.cursor });
    renderPage(console, ctx, resourcesPage(kind, page, query, noticeOf(ctx, NOTICES)));
  });

  router.get(`${base}/new`, (ctx) => showForm(ctx, 200, {}));

  router.post(base, async (ctx) => {
    const form = await formOf(ctx);
    const body = kind.body(form);
    if (body instanceof FormErrors) return showForm(ctx, 422, submitted(form), body);
    try {
      const created = await signedIn(ctx).api.request<Resource & { secret?: string }>('POST', `/api/v1/${kind.collection}`, {
        // A create takes no nulls (an absent member is its default); the same form's PATCH sends them to clear a member.
        body: Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null)),
        idempotencyKey: form.get('idempotency_key') ?? undefined,
      });
      // A destination's secret exists only in this answer: shown here, not after a redirect.
      if (created.body.secret)
        return renderPage(console, ctx, resourcePage(kind, created.body, signedIn(ctx).viewer.csrf, 'Created.', created.body.secret), 201);
      redirectWithNotice(ctx, `/console/${kind.collection}/${created.body.id}`, 'created');
    } catch (error) {
      await showForm(ctx, 422, submitted(form), FormErrors.from(formProblem(error), kind.fields));
    }
  });

  router.get(`${base}/:id`, async (ctx) => {
    const resource = await signedIn(ctx).api.get<Resource>(apiPath(ctx));
    renderPage(console, ctx, resourcePage(kind, resource, signedIn(ctx).viewer.csrf, noticeOf(ctx, NOTICES)));
  });

  router.get(`${base}/:id/edit`, async (ctx) => {
    const resource = await signedIn(ctx).api.get<Resource>(apiPath(ctx));
    await showForm(ctx, 200, kind.valuesOf(resource), undefined, resource);
  });

  router.post(`${base}/:id`, async (ctx) => {
    const form = await formOf(ctx);
    const body = kind.body(form);
    const existing = await signedIn(ctx).api.get<Resource>(apiPath(ctx));
    if (body instanceof FormErrors) return showForm(ctx, 422, submitted(form), body, existing);
    try {
      await signedIn(ctx).api.request('PATCH', apiPath(ctx), { body, ifMatch: `"v${form.get('version') ?? ''}"` });
      redirectWithNotice(ctx, detail(ctx), 'saved');
    } catch (error) {
      if (error instanceof ApiProblem && error.status === 412) return redirectWithNotice(ctx, detail(ctx), 'stale');
      await showForm(ctx, 422, submitted(form), FormErrors.from(formProblem(error), kind.fields), existing);
    }
  });

  router.post(`${base}/:id/status`, async (ctx) => {
    const form = await formOf(ctx);
    try {
      await signedIn(ctx).api.request('PATCH', apiPath(ctx), { body: { status: form.get('status') ?? '' }, ifMatch: `"v${form.get('version') ?? ''}"` });
    } catch (error) {
      if (error instanceof ApiProblem && error.status === 412) return redirectWithNotice(ctx, detail(ctx), 'stale');
      throw error;
    }
    redirectWithNotice(ctx, detail(ctx), 'saved');
  });

  router.get(`${base}/:id/delete`, async (ctx) => {
    const resource = await signedIn(ctx).api.get<Resource>(apiPath(ctx));
    renderPage(console, ctx, deleteResourcePage(kind, resource, signedIn(ctx).viewer.csrf));
  });

  router.post(`${base}/:id/delete`, async (ctx) => {
    await signedIn(ctx).api.request('DELETE', apiPath(ctx));
    redirectWithNotice(ctx, `/console/${kind.collection}`, 'deleted');
  });
}

/**
 * Sources, destinations, rules and connections: one set of pages over the API's one set of
 * conventions (list, create with Idempotency-Key, PATCH with If-Match, delete).
 */
export function configurationRoutes(console: Console, router: Router): void {
  // Checked as the merchant types, by the function the merchants service runs when a rule is
  // saved: the same answer without a network round trip per keystroke, and without spending the
  // merchant's API rate limits on keystrokes. Saving still goes through the API, which checks again.
  router.post('/rules/check-condition', async (ctx) => {
    const form = await formOf(ctx);
    const problems = checkCondition(form.get('condition') ?? '');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = problems.length === 0 ? { valid: true } : { valid: false, message: problems.map((problem) => problem.message).join(' ') };
  });
  for (const kind of RESOURCE_KINDS) kindRoutes(console, router, kind);
}
