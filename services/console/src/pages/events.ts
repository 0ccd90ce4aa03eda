import type { ListPage } from '../api/client.js';
import { dataTable, emptyState, pagination } from '../web/components.js';
import type { PageContent } from '../web/context.js';
import { prettyJson, time } from '../web/format.js';
import { html } from '../web/html.js';
import { filterForm, timeFilters, topicFilter } from './filters.js';

export interface MerxEventView {
  id: string;
  topic: string;
  created_at: string;
  data: Record<string, unknown>;
}

export function eventsPage(
  list: ListPage<MerxEventView>,
  filters: { topic?: string | undefined; since?: string | undefined; until?: string | undefined; cursor?: string | undefined },
): PageContent {
  const filtered = !!(filters.topic || filters.since || filters.until);
  const body =
    list.data.length === 0
      ? emptyState(
          filtered ? 'No events match these filters' : 'No events yet',
          filtered
            ? 'Clear or widen the filters.'
            : 'Every change in your account (a product created, a key revoked, an order ingested) is an event, kept here for 30 days. Create something through the API to see its event.',
        )
      : dataTable<MerxEventView>(
          'Events',
          [
            { header: 'Event', cell: (e) => html`<a href="/console/events/${e.id}"><code>${e.id}</code></a>` },
            { header: 'Topic', cell: (e) => html`<code>${e.topic}</code>` },
            { header: 'Object', cell: (e) => html`<code>${String((e.data.object as { id?: unknown } | undefined)?.id ?? '—')}</code>` },
            { header: 'Created', cell: (e) => time(e.created_at) },
          ],
          list.data,
        );
  return {
    title: 'Events',
    section: 'events',
    body: html`${filterForm('/console/events', html`${topicFilter(filters.topic)}${timeFilters(filters.since, filters.until)}`, '/console/events')}${body}${pagination('/console/events', { ...filters }, list.next_cursor)}`,
  };
}

export function eventPage(event: MerxEventView): PageContent {
  return {
    title: `Event ${event.id}`,
    section: 'events',
    body: html`<dl class="facts"><dt>Topic</dt><dd><code>${event.topic}</code></dd><dt>Created</dt><dd>${time(event.created_at)}</dd></dl>
<p><a href="/console/webhooks/deliveries?event_id=${event.id}">Deliveries of this event</a></p>
<h2>Payload</h2>
${prettyJson(event)}`,
  };
}
