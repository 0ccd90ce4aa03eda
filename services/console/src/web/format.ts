import { html, type Html } from './html.js';

/** Times in UTC, as the API gives them, in a form people read; the machine form stays in `datetime`. */
export function time(iso: string | null | undefined): Html | string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const shown = date
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, ' UTC');
  return html`<time datetime="${iso}">${shown}</time>`;
}

export const percent = (rate: number | null | undefined) =>
  rate === null || rate === undefined ? '—' : `${(rate * 100).toFixed(rate === 1 || rate === 0 ? 0 : 1)} %`;

export const milliseconds = (value: number | null | undefined) => (value === null || value === undefined ? '—' : `${Math.round(value)} ms`);

/** JSON as the merchant would read it: indented, escaped by the template. */
export const prettyJson = (value: unknown) => html`<pre class="json" tabindex="0">${JSON.stringify(value, null, 2)}</pre>`;

/** `2026-01-02T03:04` from a datetime-local input, read as UTC; undefined when empty or not a time. */
export function isoFromLocalInput(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const date = new Date(/[zZ]|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The other way: an ISO time for a datetime-local input's value. */
export const localInputFromIso = (iso: string | undefined) => (iso ? iso.slice(0, 16) : '');
