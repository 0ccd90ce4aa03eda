import { destinationKinds, destinationStatuses, recordEventNames, ruleActions, sourceKinds, sourceStatuses } from '@merx/contracts';
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
  selectField,
  statusBadge,
  textArea,
  textField,
  FormErrors,
  type Column,
} from '../web/components.js';
import type { PageContent } from '../web/context.js';
import type { Section } from '../web/layout.js';
import { prettyJson, time } from '../web/format.js';
import { html, type Html } from '../web/html.js';

/** A source, destination, rule or connection as the API shows it; each kind reads its own fields. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind's page reads its own fields
export type Resource = Record<string, any> & { id: string; name?: string; version: number; created_at: string };

/** What the connection form offers to pick from. */
export interface Lookups {
  sources: Resource[];
  destinations: Resource[];
  rules: Resource[];
}

export type FormValues = Record<string, string | string[] | undefined>;

export interface ResourceKind {
  collection: 'sources' | 'destinations' | 'rules' | 'connections';
  section: Section;
  title: string;
  singular: string;
  intro: string;
  empty: string;
  /** The API fields the form shows, for placing field errors. */
  fields: string[];
  columns: Column<Resource>[];
  form(values: FormValues, errors: FormErrors | undefined, lookups: Lookups, csrf: string): Html;
  /** The API body from the submitted form; a `FormErrors` when the form itself is malformed (JSON that does not parse). */
  body(form: URLSearchParams): Record<string, unknown> | FormErrors;
  valuesOf(resource: Resource): FormValues;
  /** The statuses a merchant may set, for the status control on the detail page; none for rules. */
  statuses?: readonly string[];
  needsLookups?: boolean;
}

const link = (kind: string) => (row: Resource) => html`<a href="/console/${kind}/${row.id}">${row.name ?? row.id}</a>`;
const text = (value: FormValues[string]) => (Array.isArray(value) ? value[0] : value) ?? '';
const list = (value: FormValues[string]) => (Array.isArray(value) ? value : value ? [value] : []);
const choices = (values: readonly string[]) => values.map((value) => ({ value, label: value }));

/** A JSON field of a form: an object, or a field error saying where it does not parse. */
function jsonField(raw: string | null, field: string, errors: FormErrors): Record<string, unknown> | undefined {
  if (!raw || raw.trim() === '') return undefined;
  try {
    const value = JSON.parse(raw) as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
    errors.add(field, 'Enter a JSON object, like {"key": "value"}.');
  } catch (error) {
    errors.add(field, `This is not valid JSON: ${(error as Error).message}.`);
  }
  return undefined;
}

const eventTypeChoices = recordEventNames.map((name) => ({ value: name, label: name }));

const sourcesKind: ResourceKind = {
  collection: 'sources',
  section: 'sources',
  title: 'Sources',
  singular: 'source',
  intro:
    'Where your commerce data comes from: a storefront, a marketplace, a point of sale, a review or ads platform. Each source ingests records through the API.',
  empty: 'Create a source for each system that sends you orders, reviews, campaign spend or alerts, then post its records to /api/v1/sources/{id}/records.',
  fields: ['name', 'kind', 'status', 'settings'],
  columns: [
    { header: 'Name', cell: link('sources') },
    { header: 'Kind', cell: (row) => row.kind },
    { header: 'Status', cell: (row) => statusBadge(row.status) },
    { header: 'Created', cell: (row) => time(row.created_at) },
  ],
  form: (values, errors) => html`
    ${textField({ name: 'name', label: 'Name', value: text(values.name), required: true, ...(errors ? { errors } : {}) })}
    ${selectField({ name: 'kind', label: 'Kind', value: text(values.kind), choices: choices(sourceKinds), required: true, ...(errors ? { errors } : {}) })}
    ${selectField({ name: 'status', label: 'Status', value: text(values.status) || 'active', choices: choices(sourceStatuses), hint: 'Only active sources accept records.', ...(errors ? { errors } : {}) })}
    ${textArea({ name: 'settings', label: 'Settings (JSON)', value: text(values.settings), hint: 'Free-form settings of this source, at most 50 keys.', ...(errors ? { errors } : {}) })}`,
  body: (form) => {
    const errors = new FormErrors();
    const settings = jsonField(form.get('settings'), 'settings', errors);
    if (!errors.empty) return errors;
    return { name: form.get('name') ?? '', kind: form.get('kind') ?? '', status: form.get('status') || undefined, ...(settings ? { settings } : {}) };
  },
  valuesOf: (row) => ({ name: row.name, kind: row.kind, status: row.status, settings: JSON.stringify(row.settings ?? {}, null, 2) }),
  statuses: sourceStatuses,
};

const destinationsKind: ResourceKind = {
  collection: 'destinations',
  section: 'destinations',
  title: 'Destinations',
  singular: 'destination',
  intro: 'Where routed records go. Merx signs, retries, logs and dead-letters every delivery, exactly like webhooks.',
  empty: 'Create a destination for each system that should receive routed records (your ERP, a warehouse, an analytics pipeline), then connect a source to it.',
  fields: ['name', 'kind', 'url', 'status'],
  columns: [
    { header: 'Name', cell: link('destinations') },
    { header: 'URL', cell: (row) => html`<code>${row.url}</code>` },
    { header: 'Kind', cell: (row) => row.kind },
    { header: 'Status', cell: (row) => statusBadge(row.status) },
  ],
  form: (values, errors) => html`
    ${textField({ name: 'name', label: 'Name', value: text(values.name), required: true, ...(errors ? { errors } : {}) })}
    ${textField({ name: 'url', label: 'URL', type: 'url', value: text(values.url), required: true, hint: 'Where routed records are POSTed.', ...(errors ? { errors } : {}) })}
    ${selectField({
      name: 'kind',
      label: 'Kind',
      value: text(values.kind) || 'webhook',
      choices: [
        { value: 'webhook', label: 'webhook: the Merx envelope, signed' },
        { value: 'http', label: 'http: the routed record alone, signed' },
      ],
      hint: `One of ${destinationKinds.join(', ')}.`,
      ...(errors ? { errors } : {}),
    })}`,
  body: (form) => ({ name: form.get('name') ?? '', url: (form.get('url') ?? '').trim(), kind: form.get('kind') || undefined }),
  valuesOf: (row) => ({ name: row.name, url: row.url, kind: row.kind, status: row.status }),
  statuses: destinationStatuses,
};

const rulesKind: ResourceKind = {
  collection: 'rules',
  section: 'rules',
  title: 'Rules',
  singular: 'rule',
  intro: 'A CEL condition over a record and what to do with records that match: forward, drop or transform. Connections apply their rules in order.',
  empty: 'Create a rule, for example "forward orders over 100 EUR": condition data.total >= 100.0 && data.currency == "EUR", action forward.',
  fields: ['name', 'event_types', 'condition', 'action', 'transform', 'enabled'],
  columns: [
    { header: 'Name', cell: link('rules') },
    { header: 'Condition', cell: (row) => html`<code>${row.condition}</code>` },
    { header: 'Action', cell: (row) => row.action },
    { header: 'Enabled', cell: (row) => statusBadge(row.enabled ? 'enabled' : 'disabled') },
  ],
  form: (values, errors, _lookups, csrf) => html`
    ${textField({ name: 'name', label: 'Name', value: text(values.name), required: true, ...(errors ? { errors } : {}) })}
    ${textArea({
      name: 'condition',
      label: 'Condition (CEL)',
      rows: 3,
      value: text(values.condition),
      hint: 'Over type, external_id, occurred_at, source_id and data, e.g. data.total >= 100.0 && data.currency == "EUR". Checked as you type.',
      attributes: html` data-check-condition="/console/rules/check-condition" data-check-output="condition-check" data-csrf="${csrf}"`,
      ...(errors ? { errors } : {}),
    })}
    <p class="condition-check" id="condition-check" role="status" aria-live="polite"></p>
    ${selectField({ name: 'action', label: 'Action', value: text(values.action) || 'forward', choices: choices(ruleActions), required: true, ...(errors ? { errors } : {}) })}
    ${textArea({ name: 'transform', label: 'Transform (JSON, for the transform action)', value: text(values.transform), hint: 'keep, remove, rename and set on dotted paths of data, e.g. {"remove": ["customer.email"]}.', ...(errors ? { errors } : {}) })}
    ${checkboxGroup({ name: 'event_types', legend: 'Record events', choices: eventTypeChoices, checked: list(values.event_types), hint: 'Leave all unchecked to apply to every record event.', ...(errors ? { errors } : {}) })}
    ${selectField({
      name: 'enabled',
      label: 'Enabled',
      value: text(values.enabled) || 'true',
      choices: [
        { value: 'true', label: 'Enabled' },
        { value: 'false', label: 'Disabled: connections skip it' },
      ],
      ...(errors ? { errors } : {}),
    })}`,
  body: (form) => {
    const errors = new FormErrors();
    const transform = jsonField(form.get('transform'), 'transform', errors);
    if (!errors.empty) return errors;
    const eventTypes = form.getAll('event_types');
    return {
      name: form.get('name') ?? '',
      condition: (form.get('condition') ?? '').trim() || undefined,
      action: form.get('action') ?? '',
      transform: transform ?? null,
      enabled: form.get('enabled') !== 'false',
      ...(eventTypes.length > 0 ? { event_types: eventTypes } : {}),
    };
  },
  valuesOf: (row) => ({
    name: row.name,
    condition: row.condition,
    action: row.action,
    transform: row.transform ? JSON.stringify(row.transform, null, 2) : '',
    event_types: row.event_types,
    enabled: String(row.enabled),
  }),
};

const connectionsKind: ResourceKind = {
  collection: 'connections',
  section: 'connections',
  title: 'Connections',
  singular: 'connection',
  intro: 'A source routed to a destination through an ordered list of rules.',
  empty: 'Connect a source to a destination to start routing its records. You need at least one source and one destination.',
  fields: ['name', 'source_id', 'destination_id', 'rule_ids', 'event_types', 'status'],
  columns: [
    { header: 'Name', cell: link('connections') },
    { header: 'Source', cell: (row) => html`<a href="/console/sources/${row.source_id}"><code>${row.source_id}</code></a>` },
    { header: 'Destination', cell: (row) => html`<a href="/console/destinations/${row.destination_id}"><code>${row.destination_id}</code></a>` },
    { header: 'Rules', cell: (row) => row.rule_ids?.length ?? 0, numeric: true },
    { header: 'Status', cell: (row) => statusBadge(row.status) },
  ],
  form: (values, errors, lookups) => html`
    ${textField({ name: 'name', label: 'Name', value: text(values.name), ...(errors ? { errors } : {}) })}
    ${selectField({ name: 'source_id', label: 'Source', value: text(values.source_id), includeBlank: 'Choose a source', choices: lookups.sources.map((row) => ({ value: row.id, label: `${row.name} (${row.id})` })), required: true, ...(errors ? { errors } : {}) })}
    ${selectField({ name: 'destination_id', label: 'Destination', value: text(values.destination_id), includeBlank: 'Choose a destination', choices: lookups.destinations.map((row) => ({ value: row.id, label: `${row.name} (${row.id})` })), required: true, ...(errors ? { errors } : {}) })}
    ${lookups.rules.length > 0 ? checkboxGroup({ name: 'rule_ids', legend: 'Rules, applied in this order', choices: lookups.rules.map((row) => ({ value: row.id, label: row.name ?? row.id, hint: String(row.condition ?? '') })), checked: list(values.rule_ids), hint: 'Without rules every record is routed.', ...(errors ? { errors } : {}) }) : html`<p class="hint">No rules yet: every record will be routed. <a href="/console/rules/new">Create a rule</a>.</p>`}
    ${checkboxGroup({ name: 'event_types', legend: 'Record events', choices: eventTypeChoices, checked: list(values.event_types), hint: 'Leave all unchecked to route every record event.', ...(errors ? { errors } : {}) })}`,
  body: (form) => {
    const eventTypes = form.getAll('event_types');
    return {
      ...(form.get('name') ? { name: form.get('name') } : {}),
      source_id: form.get('source_id') ?? '',
      destination_id: form.get('destination_id') ?? '',
      rule_ids: form.getAll('rule_ids'),
      ...(eventTypes.length > 0 ? { event_types: eventTypes } : {}),
    };
  },
  valuesOf: (row) => ({
    name: row.name,
    source_id: row.source_id,
    destination_id: row.destination_id,
    rule_ids: row.rule_ids,
    event_types: row.event_types,
    status: row.status,
  }),
  statuses: ['active', 'paused'],
  needsLookups: true,
};

export const RESOURCE_KINDS = [sourcesKind, destinationsKind, rulesKind, connectionsKind];

export function resourcesPage(
  kind: ResourceKind,
  page: ListPage<Resource>,
  query: Record<string, string | undefined>,
  notice: string | undefined,
): PageContent {
  const body =
    page.data.length === 0 && !query.cursor
      ? emptyState(`No ${kind.collection} yet`, kind.empty, html`<a class="button" href="/console/${kind.collection}/new">Create a ${kind.singular}</a>`)
      : dataTable(kind.title, kind.columns, page.data);
  return {
    title: kind.title,
    section: kind.section,
    notice,
    actions: html`<a class="button" href="/console/${kind.collection}/new">Create a ${kind.singular}</a>`,
    body: html`<p>${kind.intro}</p>${body}${pagination(`/console/${kind.collection}`, query, page.next_cursor)}`,
  };
}

export function resourceFormPage(
  kind: ResourceKind,
  options: { csrf: string; values: FormValues; errors?: FormErrors; lookups: Lookups; idempotencyKey?: string; existing?: Resource },
): PageContent {
  const action = options.existing ? `/console/${kind.collection}/${options.existing.id}` : `/console/${kind.collection}`;
  return {
    title: options.existing ? `Edit ${kind.singular} ${options.existing.name ?? options.existing.id}` : `Create a ${kind.singular}`,
    section: kind.section,
    body: html`${options.errors ? errorSummary(options.errors) : ''}
<form method="post" action="${action}" novalidate>
  ${csrfField(options.csrf)}
  ${options.idempotencyKey ? html`<input type="hidden" name="idempotency_key" value="${options.idempotencyKey}">` : ''}
  ${options.existing ? html`<input type="hidden" name="version" value="${options.existing.version}">` : ''}
  ${kind.form(options.values, options.errors, options.lookups, options.csrf)}
  <div class="actions"><button type="submit">${options.existing ? 'Save changes' : `Create ${kind.singular}`}</button><a href="/console/${kind.collection}">Cancel</a></div>
</form>`,
  };
}

export function resourcePage(kind: ResourceKind, resource: Resource, csrf: string, notice: string | undefined, secret?: string): PageContent {
  const statusControl =
    kind.statuses && resource.status
      ? html`<form method="post" action="/console/${kind.collection}/${resource.id}/status" class="inline">${csrfField(csrf)}<input type="hidden" name="version" value="${resource.version}">
  <label for="status-select">Status</label> <select id="status-select" name="status">${kind.statuses.map((status) => html`<option value="${status}"${status === resource.status ? html` selected` : ''}>${status}</option>`)}</select>
  <button type="submit" class="secondary">Change status</button></form>`
      : '';
  return {
    title: resource.name ?? resource.id,
    section: kind.section,
    notice,
    body: html`${secret ? secretReveal({ id: 'destination-secret', label: 'Signing secret', secret, warning: 'This is the only time Merx shows this secret. The destination verifies every request with it.' }) : ''}
<dl class="facts"><dt>Id</dt><dd><code>${resource.id}</code></dd>${resource.status ? html`<dt>Status</dt><dd>${statusBadge(resource.status)}</dd>` : ''}<dt>Created</dt><dd>${time(resource.created_at)}</dd><dt>Version</dt><dd>${resource.version}</dd></dl>
<div class="actions">${statusControl}${kind.collection === 'connections' ? '' : html`<a class="button secondary" href="/console/${kind.collection}/${resource.id}/edit">Edit</a>`}<a class="button secondary" href="/console/${kind.collection}/${resource.id}/delete">Delete…</a></div>
${kind.collection === 'destinations' ? html`<p><a href="/console/webhooks/deliveries?destination_id=${resource.id}">Deliveries to this destination</a></p>` : ''}
<h2>As the API returns it</h2>
${prettyJson(resource)}`,
  };
}

export function deleteResourcePage(kind: ResourceKind, resource: Resource, csrf: string): PageContent {
  return {
    title: `Delete ${kind.singular} ${resource.name ?? resource.id}?`,
    section: kind.section,
    body: html`<p id="delete-consequence">This cannot be undone.${kind.collection === 'connections' ? '' : ` A ${kind.singular} that a connection uses cannot be deleted until the connection is.`}</p>
<div class="actions">${actionButton({ action: `/console/${kind.collection}/${resource.id}/delete`, label: `Delete ${kind.singular}`, csrf, danger: true, describedBy: 'delete-consequence' })}<a href="/console/${kind.collection}/${resource.id}">Cancel</a></div>`,
  };
}
