import type { ListPage } from '../api/client.js';
import {
  actionButton,
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
import type { PageContent } from '../web/context.js';
import { milliseconds, percent, time } from '../web/format.js';
import { html } from '../web/html.js';
import { statsChart, type SubscriptionStats } from './chart.js';
import { deliveriesTable, type Delivery } from './deliveries.js';
import { topicPicker } from './topics.js';

export interface Subscription {
  id: string;
  url: string;
  topics: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  secret_rotated_at: string | null;
  previous_secret_expires_at: string | null;
  version: number;
  created_at: string;
  secret?: string;
}

export const SUBSCRIPTION_FIELDS = ['url', 'topics', 'description'];

const REASONS: Record<string, string> = {
  by_merchant: 'disabled by you',
  endpoint_gone: 'the endpoint answered 410 Gone',
  endpoint_failing: 'the endpoint failed for a whole retry window',
};

export function subscriptionsPage(list: ListPage<Subscription>, query: Record<string, string | undefined>, notice: string | undefined): PageContent {
  const body =
    list.data.length === 0 && !query.cursor
      ? emptyState(
          'No webhook endpoints yet',
          'Add an endpoint to receive a signed POST for every change in your account: orders, products, configuration and more. Deliveries are retried for 72 hours and you can replay any that fail.',
          html`<a class="button" href="/console/webhooks/new">Add an endpoint</a>`,
        )
      : dataTable<Subscription>(
          'Webhook subscriptions',
          [
            {
              header: 'Endpoint',
              cell: (sub) =>
                html`<a href="/console/webhooks/${sub.id}">${sub.url}</a>${sub.description ? html`<br><span class="hint">${sub.description}</span>` : ''}`,
            },
            { header: 'Topics', cell: (sub) => sub.topics.map((topic) => html`<code>${topic}</code> `) },
            {
              header: 'Status',
              cell: (sub) =>
                html`${statusBadge(sub.status)}${sub.disabled_reason ? html` <span class="hint">${REASONS[sub.disabled_reason] ?? sub.disabled_reason}</span>` : ''}`,
            },
            { header: 'Created', cell: (sub) => time(sub.created_at) },
          ],
          list.data,
        );
  return {
    title: 'Webhook subscriptions',
    section: 'webhooks',
    notice,
    actions: html`<a class="button" href="/console/webhooks/new">Add an endpoint</a>`,
    body: html`${body}${pagination('/console/webhooks', query, list.next_cursor)}`,
  };
}

export interface SubscriptionFormValues {
  url?: string;
  description?: string;
  topics?: string[];
}

export function subscriptionForm(options: {
  action: string;
  submit: string;
  csrf: string;
  values: SubscriptionFormValues;
  errors?: FormErrors;
  idempotencyKey?: string;
  version?: number;
}) {
  const errors = options.errors;
  return html`${errors ? errorSummary(errors) : ''}
<form method="post" action="${options.action}" novalidate>
  ${csrfField(options.csrf)}
  ${options.idempotencyKey ? html`<input type="hidden" name="idempotency_key" value="${options.idempotencyKey}">` : ''}
  ${options.version !== undefined ? html`<input type="hidden" name="version" value="${options.version}">` : ''}
  ${textField({ name: 'url', label: 'Endpoint URL', type: 'url', hint: 'Where Merx POSTs each event, e.g. https://example.com/merx/webhooks.', value: options.values.url, required: true, ...(errors ? { errors } : {}) })}
  ${textField({ name: 'description', label: 'Description', value: options.values.description, ...(errors ? { errors } : {}) })}
  ${topicPicker(options.values.topics ?? [], errors)}
  <div class="actions"><button type="submit">${options.submit}</button><a href="/console/webhooks">Cancel</a></div>
</form>`;
}

export function newSubscriptionPage(options: { csrf: string; idempotencyKey: string; values?: SubscriptionFormValues; errors?: FormErrors }): PageContent {
  return {
    title: 'Add a webhook endpoint',
    section: 'webhooks',
    body: subscriptionForm({
      action: '/console/webhooks',
      submit: 'Add endpoint',
      csrf: options.csrf,
      values: options.values ?? { topics: ['*'] },
      idempotencyKey: options.idempotencyKey,
      ...(options.errors ? { errors: options.errors } : {}),
    }),
  };
}

export function secretPage(sub: Subscription, created: boolean): PageContent {
  return {
    title: created ? 'Endpoint added' : 'New signing secret',
    section: 'webhooks',
    body: html`${secretReveal({
      id: 'signing-secret',
      label: 'Signing secret',
      secret: sub.secret ?? '',
      warning: created
        ? 'This is the only time Merx shows this secret. Your endpoint verifies every request with it (Standard Webhooks).'
        : 'This is the only time Merx shows this secret. The previous secret keeps signing for 24 hours, so update your endpoint before then.',
    })}
<p><a class="button" href="/console/webhooks/${sub.id}">Go to the endpoint</a></p>`,
  };
}

export function subscriptionPage(options: {
  sub: Subscription;
  stats: SubscriptionStats;
  recent: Delivery[];
  csrf: string;
  notice: string | undefined;
  errors?: FormErrors;
  values?: SubscriptionFormValues;
}): PageContent {
  const { sub, stats, csrf } = options;
  const toggle =
    sub.status === 'enabled'
      ? actionButton({ action: `/console/webhooks/${sub.id}/status`, label: 'Disable', csrf, fields: { status: 'disabled', version: String(sub.version) } })
      : actionButton({ action: `/console/webhooks/${sub.id}/status`, label: 'Enable', csrf, fields: { status: 'enabled', version: String(sub.version) } });
  return {
    title: sub.url,
    section: 'webhooks',
    notice: options.notice,
    body: html`<dl class="facts">
  <dt>Status</dt><dd>${statusBadge(sub.status)}${sub.disabled_reason ? html` ${REASONS[sub.disabled_reason] ?? sub.disabled_reason}` : ''}</dd>
  <dt>Topics</dt><dd>${sub.topics.map((topic) => html`<code>${topic}</code> `)}</dd>
  <dt>Id</dt><dd><code>${sub.id}</code></dd>
  <dt>Created</dt><dd>${time(sub.created_at)}</dd>
  <dt>Secret rotated</dt><dd>${sub.secret_rotated_at ? time(sub.secret_rotated_at) : 'Never'}${sub.previous_secret_expires_at ? html` (the previous secret signs until ${time(sub.previous_secret_expires_at)})` : ''}</dd>
</dl>
<div class="actions">${toggle}${actionButton({ action: `/console/webhooks/${sub.id}/rotate-secret`, label: 'Rotate secret', csrf })}<a class="button secondary" href="/console/webhooks/${sub.id}/delete">Delete…</a></div>
<h2>Last 24 hours</h2>
<div class="stats-grid">
  <div class="card">${statsChart(stats)}</div>
  <div class="card"><dl class="facts">
    <dt>Attempts</dt><dd>${stats.attempts}</dd>
    <dt>Success rate</dt><dd>${percent(stats.success_rate)}</dd>
    <dt>Latency p50</dt><dd>${milliseconds(stats.latency_ms.p50)}</dd>
    <dt>Latency p99</dt><dd>${milliseconds(stats.latency_ms.p99)}</dd>
    <dt>Waiting</dt><dd>${stats.deliveries.pending} pending, ${stats.deliveries.failing} failing</dd>
    <dt>Dead letters</dt><dd><a href="/console/webhooks/dead-letters?subscription_id=${sub.id}">${stats.deliveries.dead}</a></dd>
  </dl></div>
</div>
<h2>Recent deliveries</h2>
${options.recent.length === 0 ? html`<p>No deliveries yet. They appear here as soon as an event this endpoint subscribes to happens.</p>` : deliveriesTable(options.recent)}
<p><a href="/console/webhooks/deliveries?subscription_id=${sub.id}">All deliveries of this endpoint</a></p>
<h2>Edit</h2>
${subscriptionForm({ action: `/console/webhooks/${sub.id}`, submit: 'Save changes', csrf, version: sub.version, values: options.values ?? { url: sub.url, description: sub.description ?? '', topics: sub.topics }, ...(options.errors ? { errors: options.errors } : {}) })}`,
  };
}

export function deleteSubscriptionPage(sub: Subscription, csrf: string): PageContent {
  return {
    title: 'Delete this endpoint?',
    section: 'webhooks',
    body: html`<p id="delete-consequence"><code>${sub.url}</code> stops receiving events at once. Its delivery log and dead letters are deleted with it. This cannot be undone.</p>
<div class="actions">${actionButton({ action: `/console/webhooks/${sub.id}/delete`, label: 'Delete endpoint', csrf, danger: true, describedBy: 'delete-consequence' })}<a href="/console/webhooks/${sub.id}">Cancel</a></div>`,
  };
}
