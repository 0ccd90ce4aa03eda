import { scopeDescriptions, scopeNames } from '@merx/contracts';
import type { ListPage } from '../api/client.js';
import {
  actionButton,
  checkboxGroup,
  csrfField,
  dataTable,
  emptyState,
  errorSummary,
  pagination,
  secretReveal,
  statusBadge,
  textField,
  type FormErrors,
} from '../web/components.js';
import { time } from '../web/format.js';
import { html } from '../web/html.js';
import type { PageContent } from '../web/context.js';

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  secret?: string;
}

export const API_KEY_FIELDS = ['name', 'scopes'];

export function apiKeysPage(keys: ListPage<ApiKey>, query: Record<string, string | undefined>, notice: string | undefined): PageContent {
  const list =
    keys.data.length === 0 && !query.cursor
      ? emptyState(
          'No API keys yet',
          "An API key lets your server call the Merx API. Create one, copy its secret into your server's configuration, and exchange it for tokens at /oauth/token.",
          html`<a class="button" href="/console/api-keys/new">Create your first API key</a>`,
        )
      : dataTable<ApiKey>(
          'API keys',
          [
            { header: 'Name', cell: (key) => key.name },
            { header: 'Client id', cell: (key) => html`<code>${key.prefix}</code>` },
            {
              header: 'Scopes',
              cell: (key) => (key.scopes.length === scopeNames.length ? 'All scopes' : html`${key.scopes.map((scope) => html`<code>${scope}</code> `)}`),
            },
            { header: 'Created', cell: (key) => time(key.created_at) },
            { header: 'Last used', cell: (key) => (key.last_used_at ? time(key.last_used_at) : 'Never') },
            { header: 'Status', cell: (key) => (key.revoked_at ? html`${statusBadge('revoked')} ${time(key.revoked_at)}` : statusBadge('active')) },
            {
              header: 'Actions',
              cell: (key) => (key.revoked_at ? '' : html`<a href="/console/api-keys/${key.id}/revoke" aria-label="Revoke ${key.name}">Revoke</a>`),
            },
          ],
          keys.data,
        );
  return {
    title: 'API keys',
    section: 'api-keys',
    notice,
    actions: html`<a class="button" href="/console/api-keys/new">Create API key</a>`,
    body: html`<p>Your servers call the API with these keys. A key holds only the scopes you give it; revoking one stops its tokens within a second everywhere.</p>
${list}
${pagination('/console/api-keys', query, keys.next_cursor)}`,
  };
}

export function newApiKeyPage(options: { csrf: string; idempotencyKey: string; name?: string; scopes?: string[]; errors?: FormErrors }): PageContent {
  return {
    title: 'Create an API key',
    section: 'api-keys',
    body: html`${options.errors ? errorSummary(options.errors) : ''}
<form method="post" action="/console/api-keys" novalidate>
  ${csrfField(options.csrf)}
  <input type="hidden" name="idempotency_key" value="${options.idempotencyKey}">
  ${textField({ name: 'name', label: 'Name', hint: 'What uses this key, e.g. "Storefront backend".', value: options.name, required: true, ...(options.errors ? { errors: options.errors } : {}) })}
  ${checkboxGroup({
    name: 'scopes',
    legend: 'Scopes',
    hint: 'Give the key only what it needs. You can make more keys later.',
    choices: scopeNames.map((scope) => ({ value: scope, label: scope, hint: scopeDescriptions[scope] })),
    checked: options.scopes ?? [],
    ...(options.errors ? { errors: options.errors } : {}),
  })}
  <div class="actions"><button type="submit">Create API key</button><a href="/console/api-keys">Cancel</a></div>
</form>`,
  };
}

export function createdApiKeyPage(key: ApiKey, publicUrl: string): PageContent {
  return {
    title: `API key "${key.name}" created`,
    section: 'api-keys',
    body: html`${secretReveal({ id: 'api-key-secret', label: 'Secret API key', secret: key.secret ?? '', warning: 'This is the only time Merx shows this key: it keeps only a hash. If you lose it, revoke it and create another.' })}
<h2>Use it</h2>
<p>Exchange the key for an access token (its client id is <code>${key.prefix}</code>):</p>
<pre class="json" tabindex="0">curl -u "${key.prefix}:$MERX_API_KEY" -d grant_type=client_credentials ${publicUrl}/oauth/token</pre>
<p><a class="button" href="/console/api-keys">Done, back to API keys</a></p>`,
  };
}

export function revokeApiKeyPage(key: ApiKey, csrf: string): PageContent {
  return {
    title: `Revoke "${key.name}"?`,
    section: 'api-keys',
    body: html`<p id="revoke-consequence">Every server using <code>${key.prefix}</code> stops getting tokens at once, and the tokens it holds are refused within a second. This cannot be undone.</p>
<div class="actions">${actionButton({ action: `/console/api-keys/${key.id}/revoke`, label: 'Revoke key', csrf, danger: true, describedBy: 'revoke-consequence' })}<a href="/console/api-keys">Cancel</a></div>`,
  };
}
