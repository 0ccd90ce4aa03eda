import { eventNames, eventTopics } from '@merx/contracts';
import { selectField, textField } from '../web/components.js';
import { localInputFromIso } from '../web/format.js';
import { html, type Child, type Html } from '../web/html.js';

/** A GET form of filters: the URL keeps them, so a filtered view can be bookmarked and shared. */
export function filterForm(action: string, fields: Child, clearHref: string): Html {
  return html`<form method="get" action="${action}" class="filters" role="search" aria-label="Filters">
  ${fields}
  <div class="actions"><button type="submit" class="secondary">Apply filters</button><a href="${clearHref}">Clear</a></div>
</form>`;
}

export const topicFilter = (value: string | undefined) =>
  selectField({
    name: 'topic',
    label: 'Topic or event',
    value,
    includeBlank: 'Any',
    choices: [...eventTopics, ...eventNames].map((name) => ({ value: name, label: name })),
  });

export const timeFilters = (since: string | undefined, until: string | undefined) => html`
  ${textField({ name: 'since', label: 'From (UTC)', type: 'datetime-local', value: localInputFromIso(since) })}
  ${textField({ name: 'until', label: 'Until (UTC)', type: 'datetime-local', value: localInputFromIso(until) })}`;
