import type { ListPage } from '../api/client.js';
import { actionButton, csrfField, dataTable, emptyState, errorSummary, pagination, textField, type FormErrors } from '../web/components.js';
import type { PageContent } from '../web/context.js';
import { prettyJson, time } from '../web/format.js';
import { html } from '../web/html.js';
import { filterForm, timeFilters } from './filters.js';

export interface Merchant {
  id: string;
  name: string;
  default_currency: string;
  timezone: string;
  mode: 'sandbox' | 'live';
  plan: string;
  status: string;
  version: number;
  created_at: string;
}

export const PROFILE_FIELDS = ['name', 'default_currency', 'timezone'];

export function overviewPage(options: { merchant: Merchant; keys: number; subscriptions: number; deadLetters: number; publicUrl: string }): PageContent {
  const { merchant } = options;
  const step = (done: boolean, text: ReturnType<typeof html>) => html`<li>${done ? html`<span class="badge badge-completed">done</span> ` : ''}${text}</li>`;
  return {
    title: `Welcome, ${merchant.name}`,
    section: 'overview',
    body: html`<div class="cards">
  <div class="card"><h2>API keys</h2><p>${options.keys} key${options.keys === 1 ? '' : 's'}.</p><a href="/console/api-keys">Manage API keys</a></div>
  <div class="card"><h2>Webhooks</h2><p>${options.subscriptions} endpoint${options.subscriptions === 1 ? '' : 's'}.</p><a href="/console/webhooks">Manage endpoints</a></div>
  <div class="card"><h2>Dead letters</h2><p>${options.deadLetters === 0 ? 'None: every delivery got through or is still retrying.' : html`<strong>${options.deadLetters}${options.deadLetters >= 100 ? '+' : ''}</strong> deliveries gave up.`}</p><a href="/console/webhooks/dead-letters">Inspect and replay</a></div>
</div>
<h2>Get started</h2>
<ol>
  ${step(options.keys > 0, html`<a href="/console/api-keys/new">Create an API key</a> for your server, with only the scopes it needs.`)}
  ${step(false, html`Exchange it for a token: <code>curl -u "$CLIENT_ID:$API_KEY" -d grant_type=client_credentials ${options.publicUrl}/oauth/token</code>.`)}
  ${step(options.subscriptions > 0, html`<a href="/console/webhooks/new">Add a webhook endpoint</a> to hear about every change.`)}
  ${step(false, html`Read the <a href="/docs">API reference</a>.`)}
</ol>
<h2>Account</h2>
<dl class="facts"><dt>Merchant id</dt><dd><code>${merchant.id}</code></dd><dt>Mode</dt><dd>${merchant.mode}</dd><dt>Plan</dt><dd>${merchant.plan}</dd><dt>Status</dt><dd>${merchant.status}</dd></dl>`,
  };
}

export function profilePage(options: {
  merchant: Merchant;
  csrf: string;
  notice: string | undefined;
  errors?: FormErrors;
  values?: Partial<Merchant>;
}): PageContent {
  const values = { ...options.merchant, ...options.values };
  const errors = options.errors;
  return {
    title: 'Profile',
    section: 'profile',
    notice: options.notice,
    body: html`${errors ? errorSummary(errors) : ''}
<form method="post" action="/console/profile" novalidate>
  ${csrfField(options.csrf)}
  <input type="hidden" name="version" value="${options.merchant.version}">
  ${textField({ name: 'name', label: 'Business name', value: values.name, required: true, ...(errors ? { errors } : {}) })}
  ${textField({ name: 'default_currency', label: 'Default currency', value: values.default_currency, hint: 'An ISO 4217 code, e.g. EUR or USD.', required: true, ...(errors ? { errors } : {}) })}
  ${textField({ name: 'timezone', label: 'Time zone', value: values.timezone, hint: 'An IANA time zone, e.g. Europe/Paris.', required: true, ...(errors ? { errors } : {}) })}
  <div class="actions"><button type="submit">Save profile</button></div>
</form>
<h2>Set by Merx</h2>
<dl class="facts"><dt>Mode</dt><dd>${options.merchant.mode}</dd><dt>Plan</dt><dd>${options.merchant.plan}</dd><dt>Status</dt><dd>${options.merchant.status}</dd><dt>Created</dt><dd>${time(options.merchant.created_at)}</dd></dl>`,
  };
}

export interface InstalledApp {
  id: string;
  name: string;
  client_id: string;
  scopes: string[];
  installed_at: string;
}

export function appsPage(list: ListPage<InstalledApp>, query: Record<string, string | undefined>, notice: string | undefined): PageContent {
  return {
    title: 'Installed apps',
    section: 'apps',
    notice,
    body: html`<p>Third-party apps you allowed to act for your account. Uninstalling one ends its access at once.</p>
${
  list.data.length === 0 && !query.cursor
    ? emptyState('No apps installed', 'When you allow an app on the Merx consent page, it appears here with the scopes you granted.')
    : dataTable<InstalledApp>(
        'Installed apps',
        [
          { header: 'App', cell: (app) => app.name },
          { header: 'Client id', cell: (app) => html`<code>${app.client_id}</code>` },
          { header: 'Scopes', cell: (app) => app.scopes.map((scope) => html`<code>${scope}</code> `) },
          { header: 'Installed', cell: (app) => time(app.installed_at) },
          { header: 'Actions', cell: (app) => html`<a href="/console/apps/${app.id}/uninstall" aria-label="Uninstall ${app.name}">Uninstall</a>` },
        ],
        list.data,
      )
}
${pagination('/console/apps', query, list.next_cursor)}`,
  };
}

export function uninstallPage(app: InstalledApp, csrf: string): PageContent {
  return {
    title: `Uninstall ${app.name}?`,
    section: 'apps',
    body: html`<p id="uninstall-consequence">${app.name} loses access at once: its refresh tokens die and its access tokens are refused within a second. You can install it again later.</p>
<div class="actions">${actionButton({ action: `/console/apps/${app.id}/uninstall`, label: 'Uninstall app', csrf, danger: true, describedBy: 'uninstall-consequence' })}<a href="/console/apps">Cancel</a></div>`,
  };
}

/** The words a merchant types to confirm a sandbox reset. */
export const RESET_CONFIRMATION = 'reset sandbox';

export function sandboxPage(options: {
  merchant: Merchant;
  csrf: string;
  error?: string;
  reset?: { id: string; status: string; services: Array<{ service: string; status: string }> };
}): PageContent {
  const live = options.merchant.mode === 'live';
  return {
    title: 'Sandbox',
    section: 'sandbox',
    body: html`${options.reset ? html`<div class="notice" role="status">Reset <code>${options.reset.id}</code> is ${options.reset.status}: ${options.reset.services.map((service) => `${service.service} ${service.status}`).join(', ')}.</div>` : ''}
${
  live
    ? html`<p>This is a <strong>live</strong> account: its data cannot be reset. Use a sandbox account to experiment.</p>`
    : html`<p>Erase this sandbox account's data in every service: products; sources, destinations, rules, connections and records; webhook subscriptions, deliveries and events. API keys and the audit log stay.</p>
${options.error ? html`<div class="error-summary" role="alert" id="error-summary" tabindex="-1"><h2>The reset did not start</h2><p>${options.error}</p></div>` : ''}
<form method="post" action="/console/sandbox/reset" novalidate>
  ${csrfField(options.csrf)}
  <div class="field"><div class="checkbox"><input type="checkbox" id="field-seed" name="seed" value="true"><label for="field-seed">Create sample data afterwards (three products, a source, a rule, a paused destination and a connection)</label></div></div>
  ${textField({ name: 'confirmation', label: `Type "${RESET_CONFIRMATION}" to confirm`, required: true, autocomplete: 'off', attributes: html` data-confirm-text="${RESET_CONFIRMATION}"` })}
  <div class="actions"><button type="submit" class="danger">Reset sandbox data</button></div>
</form>`
}`,
  };
}

export interface AuditEntry {
  id: string;
  sequence: number;
  occurred_at: string;
  actor: { type: string; id: string };
  action: string;
  resource: { type: string; id: string };
  changes: { before: unknown; after: unknown };
  request_id: string | null;
  ip: string | null;
}

export interface AuditVerification {
  valid: boolean;
  from_sequence: number;
  to_sequence: number;
  entries_checked: number;
  head_hash: string;
  broken_at: { id: string | null; sequence: number; reason: string } | null;
}

export type AuditFilters = Partial<Record<'resource_id' | 'resource_type' | 'action' | 'actor_id' | 'since' | 'until' | 'cursor', string>>;

export function auditPage(list: ListPage<AuditEntry>, filters: AuditFilters, verification: AuditVerification | undefined): PageContent {
  const filtered = Object.entries(filters).some(([name, value]) => name !== 'cursor' && value);
  const result = verification
    ? html`<div class="verify-result ${verification.valid ? 'valid' : 'broken'}" role="status" id="verify-result">
  <h2>${verification.valid ? 'The audit chain verifies' : 'The audit chain is broken'}</h2>
  ${
    verification.valid
      ? html`<p>${verification.entries_checked} entries checked (sequence ${verification.from_sequence} to ${verification.to_sequence}); every hash matches. Head hash <code>${verification.head_hash}</code>.</p>`
      : html`<p>It breaks at sequence ${verification.broken_at?.sequence} (${verification.broken_at?.reason.replace(/_/g, ' ')})${verification.broken_at?.id ? html`, entry <code>${verification.broken_at.id}</code>` : ''}. Contact Merx support with this page.</p>`
  }
</div>`
    : '';
  return {
    title: 'Audit log',
    section: 'audit',
    actions: html`<form method="get" action="/console/audit/verify" class="inline"><button type="submit" class="secondary">Verify chain</button></form>`,
    body: html`<p>Every change in your account, who made it and from where, in an append-only hash chain nobody can rewrite.</p>
${result}
${filterForm(
  '/console/audit',
  html`
  ${textField({ name: 'action', label: 'Action', value: filters.action, hint: 'e.g. api_keys.created' })}
  ${textField({ name: 'actor_id', label: 'Actor id', value: filters.actor_id })}
  ${textField({ name: 'resource_type', label: 'Resource type', value: filters.resource_type })}
  ${textField({ name: 'resource_id', label: 'Resource id', value: filters.resource_id })}
  ${timeFilters(filters.since, filters.until)}`,
  '/console/audit',
)}
${
  list.data.length === 0
    ? emptyState(
        filtered ? 'No entries match these filters' : 'No entries yet',
        filtered ? 'Clear or widen the filters.' : 'Entries appear as soon as anything changes in your account.',
      )
    : dataTable<AuditEntry>(
        'Audit entries',
        [
          { header: '#', cell: (entry) => entry.sequence, numeric: true },
          { header: 'When', cell: (entry) => time(entry.occurred_at) },
          { header: 'Action', cell: (entry) => html`<code>${entry.action}</code>` },
          { header: 'Actor', cell: (entry) => html`${entry.actor.type} <code>${entry.actor.id}</code>` },
          { header: 'Resource', cell: (entry) => html`${entry.resource.type} <code>${entry.resource.id}</code>` },
          {
            header: 'Details',
            cell: (entry) =>
              html`<details><summary>Changes</summary>${prettyJson({ changes: entry.changes, request_id: entry.request_id, ip: entry.ip })}</details>`,
          },
        ],
        list.data,
      )
}
${pagination('/console/audit', { ...filters }, list.next_cursor)}`,
  };
}
