import type { ListPage } from '../api/client.js';
import { actionButton, csrfField, dataTable, emptyState, pagination, textField } from '../web/components.js';
import type { PageContent } from '../web/context.js';
import { prettyJson, time } from '../web/format.js';
import { html } from '../web/html.js';
import { filterForm, timeFilters, topicFilter } from './filters.js';

export interface DeadLetter {
  id: string;
  event_id: string;
  topic: string;
  subscription_id: string | null;
  destination_id: string | null;
  payload: Record<string, unknown>;
  last_status_code: number | null;
  last_error: string | null;
  attempt_count: number;
  dead_at: string;
  created_at: string;
}

export interface DeadLetterFilters {
  subscription_id?: string | undefined;
  topic?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  cursor?: string | undefined;
}

export function deadLettersPage(list: ListPage<DeadLetter>, filters: DeadLetterFilters, csrf: string, notice: string | undefined): PageContent {
  const filtered = Object.entries(filters).some(([name, value]) => name !== 'cursor' && value);
  const form = filterForm(
    '/console/webhooks/dead-letters',
    html`
  ${textField({ name: 'subscription_id', label: 'Subscription id', value: filters.subscription_id })}
  ${topicFilter(filters.topic)}
  ${timeFilters(filters.since, filters.until)}`,
    '/console/webhooks/dead-letters',
  );
  const replayAll =
    list.data.length === 0
      ? ''
      : html`<form method="post" action="/console/webhooks/dead-letters/replay" class="actions">
  ${csrfField(csrf)}
  ${Object.entries(filters)
    .filter(([name, value]) => name !== 'cursor' && value)
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value ?? ''}">`)}
  <button type="submit" aria-describedby="replay-all-scope">Replay ${filtered ? 'all matching' : 'all'} dead letters</button>
  <span class="hint" id="replay-all-scope">${filtered ? 'Every dead letter matching the filters above, not only this page.' : 'Every dead letter of your account, not only this page.'} Each is sent again as a new delivery; disabled endpoints are skipped.</span>
</form>`;
  const body =
    list.data.length === 0
      ? emptyState(
          filtered ? 'No dead letters match these filters' : 'No dead letters',
          filtered
            ? 'Clear or widen the filters.'
            : 'A delivery lands here when its endpoint failed every attempt for 72 hours. Nothing has failed that long: your endpoints are keeping up.',
        )
      : dataTable<DeadLetter>(
          'Dead letters',
          [
            { header: 'Delivery', cell: (d) => html`<a href="/console/webhooks/dead-letters/${d.id}"><code>${d.id}</code></a>` },
            { header: 'Event', cell: (d) => html`<code>${d.topic}</code>` },
            { header: 'Last response', cell: (d) => d.last_status_code ?? d.last_error ?? '—' },
            { header: 'Attempts', cell: (d) => d.attempt_count, numeric: true },
            { header: 'Died', cell: (d) => time(d.dead_at) },
          ],
          list.data,
        );
  return {
    title: 'Dead letters',
    section: 'dead-letters',
    notice,
    body: html`${form}${replayAll}${body}${pagination('/console/webhooks/dead-letters', { ...filters }, list.next_cursor)}`,
  };
}

/** The subscription a dead letter belongs to, as far as replaying needs it. */
export interface ReplayTarget {
  id: string;
  status: 'enabled' | 'disabled';
  version: number;
}

export function deadLetterPage(letter: DeadLetter, csrf: string, target: ReplayTarget | undefined, notice: string | undefined): PageContent {
  const disabled =
    target?.status === 'disabled'
      ? html`<div class="error-summary" id="endpoint-disabled"><h2>The endpoint is disabled</h2><p>A replay is refused while its endpoint is disabled. Fix the endpoint, then switch it back on.</p>
${actionButton({ action: `/console/webhooks/${target.id}/status`, label: 'Enable endpoint', csrf, fields: { status: 'enabled', version: String(target.version), return_to: `/console/webhooks/dead-letters/${letter.id}` } })}</div>`
      : '';
  return {
    title: `Dead letter ${letter.id}`,
    section: 'dead-letters',
    notice,
    body: html`${disabled}<dl class="facts">
  <dt>Event</dt><dd><a href="/console/events/${letter.event_id}"><code>${letter.event_id}</code></a> <code>${letter.topic}</code></dd>
  <dt>Endpoint</dt><dd>${letter.subscription_id ? html`<a href="/console/webhooks/${letter.subscription_id}"><code>${letter.subscription_id}</code></a>` : letter.destination_id ? html`<code>${letter.destination_id}</code>` : 'deleted'}</dd>
  <dt>Last response code</dt><dd><strong>${letter.last_status_code ?? 'no answer'}</strong>${letter.last_error ? html` (<code>${letter.last_error}</code>)` : ''}</dd>
  <dt>Attempts</dt><dd>${letter.attempt_count}</dd>
  <dt>Died</dt><dd>${time(letter.dead_at)}</dd>
</dl>
<div class="actions">${actionButton({ action: `/console/webhooks/dead-letters/${letter.id}/replay`, label: 'Replay', csrf })}<a href="/console/webhooks/deliveries/${letter.id}">See every attempt</a></div>
<h2>Payload</h2>
<p class="hint">The body that was sent (a replay sends it again under the same event id, with a fresh signature).</p>
${prettyJson(letter.payload)}`,
  };
}
