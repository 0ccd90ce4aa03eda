import Router from '@koa/router';
import { randomUUID } from 'node:crypto';
import { API_KEY_FIELDS, apiKeysPage, createdApiKeyPage, newApiKeyPage, revokeApiKeyPage, type ApiKey } from '../pages/api-keys.js';
import { FormErrors } from '../web/components.js';
import { noticeOf, queryText, redirectWithNotice, renderPage, signedIn, type Console } from '../web/context.js';
import { formOf } from '../web/security.js';
import { formProblem } from './errors.js';

const NOTICES = { revoked: 'The key was revoked.' };

export function apiKeyRoutes(console: Console, router: Router): void {
  router.get('/api-keys', async (ctx) => {
    const query = { cursor: queryText(ctx, 'cursor') || undefined };
    const keys = await signedIn(ctx).api.list<ApiKey>('/api/v1/api-keys', { limit: 20, cursor: query.cursor });
    renderPage(console, ctx, apiKeysPage(keys, query, noticeOf(ctx, NOTICES)));
  });

  router.get('/api-keys/new', (ctx) => {
    renderPage(console, ctx, newApiKeyPage({ csrf: signedIn(ctx).viewer.csrf, idempotencyKey: randomUUID() }));
  });

  router.post('/api-keys', async (ctx) => {
    const { api, viewer } = signedIn(ctx);
    const form = await formOf(ctx);
    const input = { name: form.get('name') ?? '', scopes: form.getAll('scopes') };
    try {
      const created = await api.request<ApiKey>('POST', '/api/v1/api-keys', { body: input, idempotencyKey: form.get('idempotency_key') ?? undefined });
      // Rendered, not redirected: the secret exists only in this answer.
      renderPage(console, ctx, createdApiKeyPage(created.body, console.settings.publicUrl), 201);
    } catch (error) {
      const errors = FormErrors.from(formProblem(error), API_KEY_FIELDS);
      renderPage(console, ctx, newApiKeyPage({ csrf: viewer.csrf, idempotencyKey: randomUUID(), ...input, errors }), 422);
    }
  });

  router.get('/api-keys/:id/revoke', async (ctx) => {
    const key = await signedIn(ctx).api.get<ApiKey>(`/api/v1/api-keys/${encodeURIComponent(ctx.params.id!)}`);
    renderPage(console, ctx, revokeApiKeyPage(key, signedIn(ctx).viewer.csrf));
  });

  router.post('/api-keys/:id/revoke', async (ctx) => {
    await signedIn(ctx).api.request('DELETE', `/api/v1/api-keys/${encodeURIComponent(ctx.params.id!)}`);
    redirectWithNotice(ctx, '/console/api-keys', 'revoked');
  });
}
