import { eventNames, eventTopics } from '@merx/contracts';
import { html, type Html } from '../web/html.js';
import type { FormErrors } from '../web/components.js';

/**
 * Topics from the event catalogue: everything, whole topics, or single events (folded away, as
 * most merchants subscribe by topic). Field errors on `topics[n]` show on the group.
 */
export function topicPicker(checked: readonly string[], errors?: FormErrors, name = 'topics'): Html {
  const problems = errors?.of(name) ?? [];
  const box = (value: string, index: string, hint?: string) =>
    html`<div class="checkbox"><input type="checkbox" id="topic-${index}" name="${name}" value="${value}"${checked.includes(value) ? html` checked` : ''}><label for="topic-${index}"><code>${value}</code>${hint ? html` <span class="hint">${hint}</span>` : ''}</label></div>`;
  const singles = checked.some((value) => eventNames.includes(value as (typeof eventNames)[number]));
  return html`<fieldset class="field checkboxes${problems.length > 0 ? ' invalid' : ''}"${problems.length > 0 ? html` aria-describedby="topics-error"` : ''}>
  <legend>Topics</legend>
  <p class="hint">What this endpoint receives. A topic includes all its events.</p>
  ${problems.length > 0 ? html`<p class="field-error" id="topics-error">${problems.join(' ')}</p>` : ''}
  ${box('*', 'all', 'every event')}
  ${eventTopics.map((topic) => box(topic, `t-${topic}`))}
  <details${singles ? html` open` : ''}><summary>Single events</summary>
  ${eventNames.map((event) => box(event, `e-${event.replace(/\W/g, '-')}`))}
  </details>
</fieldset>`;
}
