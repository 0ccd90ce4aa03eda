import type { ListPage } from '../api/client.js';
import { dataTable, emptyState, pagination, selectField, statusBadge, textField } from '../web/components.js';
import type { PageContent } from '../web/context.js';
import { time } from '../web/format.js';
import { html } from '../web/html.js';
import { filterForm, timeFilters, topicFilter } from './filters.js';

export interface Delivery {
  id: string;
  event_id: string;
  topic: string;
  subscription_id: string | null;
  destination_id: string | null;
  status: 'pending' | 'succeeded' | 'failing' | 'dead';
  attempt_count: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  replay_of: string | null;
  replayed_by: string | null;
  created_at: string;
  completed_at: string | null;
}

export interface Attempt {
  number: number;
  started_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  error_message: string | null;
  response_excerpt: string | null;
}

export function deliveriesTable(deliveries: Delivery[]) {
  return dataTable<Delivery>(
    'Deliveries',
    [
      { header: 'Delivery', cell: (d) => html`<a href="/console/webhooks/deliveries/${d.id}"><code>${d.id}</code></a>` },
      { header: 'Event', cell: (d) => html`<code>${d.topic}</code>` },
      { header: 'Status', cell: (d) => statusBadge(d.status) },
      { header: 'Attempts', cell: (d) => d.attempt_count, numeric: true },
      { header: 'Last response', cell: (d) => d.last_status_code ?? d.last_error ?? '—' },
      { header: 'Created', cell: (d) => time(d.created_at) },
    ],
    deliveries,
  );
}

export interface DeliveryFilters {
  subscription_id?: string | undefined;
  destination_id?: string | undefined;
  event_id?: string | undefined;
  topic?: string | undefined;
  status?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  cursor?: string | undefined;
}

export function deliveriesPage(list: ListPage<Delivery>, filters: DeliveryFilters): PageContent {
  const filtered = Object.entries(filters).some(([name, value]) => name !== 'cursor' && value);
  const form = filterForm(
    '/console/webhooks/deliveries',
    html`
  ${textField({ name: 'subscription_id', label: 'Subscription id', value: filters.subscription_id })}
  ${textField({ name: 'event_id', label: 'Event id', value: filters.event_id })}
  ${topicFilter(filters.topic)}
  ${selectField({ name: 'status', label: 'Status', value: filters.status, includeBlank: 'Any', choices: ['pending', 'succeeded', 'failing', 'dead'].map((status) => ({ value: status, label: status })) })}
  ${timeFilters(filters.since, filters.until)}`,
    '/console/webhooks/deliveries',
  );
  const body =
    list.data.length === 0
      ? emptyState(
          filtered ? 'No deliveries match these filters' : 'No deliveries yet',
          filtered
            ? 'Clear or widen the filters.'
            : 'Each event your endpoints subscribe to becomes a delivery here, with every attempt. Add an endpoint to start.',
          filtered ? undefined : html`<a class="button" href="/console/webhooks/new">Add an endpoint</a>`,
        )
      : deliveriesTable(list.data);
  return {
    title: 'Delivery log',
    section: 'deliveries',
    body: html`${form}${body}${pagination('/console/webhooks/deliveries', { ...filters }, list.next_cursor)}`,
  };
}

export function deliveryPage(delivery: Delivery & { attempts: Attempt[] }): PageContent {
  const target = delivery.subscription_id
    ? html`<a href="/console/webhooks/${delivery.subscription_id}"><code>${delivery.subscription_id}</code></a>`
    : delivery.destination_id
      ? html`destination <a href="/console/destinations/${delivery.destination_id}"><code>${delivery.destination_id}</code></a>`
      : 'a deleted endpoint';
  return {
    title: `Delivery ${delivery.id}`,
    section: 'deliveries',
    body: html`<dl class="facts">
  <dt>Status</dt><dd>${statusBadge(delivery.status)}</dd>
  <dt>Event</dt><dd><a href="/console/events/${delivery.event_id}"><code>${delivery.event_id}</code></a> <code>${delivery.topic}</code></dd>
  <dt>To</dt><dd>${target}</dd>
  <dt>Created</dt><dd>${time(delivery.created_at)}</dd>
  <dt>Next attempt</dt><dd>${delivery.next_attempt_at ? time(delivery.next_attempt_at) : '—'}</dd>
  ${delivery.replay_of ? html`<dt>Replays</dt><dd><a href="/console/webhooks/deliveries/${delivery.replay_of}"><code>${delivery.replay_of}</code></a></dd>` : ''}
  ${delivery.replayed_by ? html`<dt>Replayed by</dt><dd><a href="/console/webhooks/deliveries/${delivery.replayed_by}"><code>${delivery.replayed_by}</code></a></dd>` : ''}
</dl>
${delivery.status === 'dead' && !delivery.replayed_by ? html`<p><a class="button" href="/console/webhooks/dead-letters/${delivery.id}">Inspect and replay this dead letter</a></p>` : ''}
<h2>Attempts</h2>
${
  delivery.attempts.length === 0
    ? html`<p>No attempt yet: the first is due ${delivery.next_attempt_at ? time(delivery.next_attempt_at) : 'soon'}.</p>`
    : dataTable<Attempt>(
        'Attempts, oldest first',
        [
          { header: '#', cell: (a) => a.number, numeric: true },
          { header: 'Started', cell: (a) => time(a.started_at) },
          { header: 'Status code', cell: (a) => a.status_code ?? '—', numeric: true },
          { header: 'Duration', cell: (a) => `${a.duration_ms} ms`, numeric: true },
          {
            header: 'Error',
            cell: (a) => (a.error ? html`<code>${a.error}</code>${a.error_message ? html`<br><span class="hint">${a.error_message}</span>` : ''}` : 'none'),
          },
          { header: 'Response excerpt', cell: (a) => (a.response_excerpt ? html`<pre class="json" tabindex="0">${a.response_excerpt}</pre>` : '—') },
        ],
        delivery.attempts,
      )
}`,
  };
}
