import type { ApiProblem, FieldProblem } from '../api/client.js';
import { html, type Child, type Html } from './html.js';

/** The problems of a failed form submission, sorted by the field they concern. */
export class FormErrors {
  readonly byField = new Map<string, string[]>();
  readonly general: string[] = [];

  /** `fields`: the API's field names this form shows; problems about other fields go to the summary. */
  static from(problem: ApiProblem | undefined, fields: readonly string[]): FormErrors {
    const errors = new FormErrors();
    if (!problem) return errors;
    const shown = new Set(fields);
    for (const entry of problem.errors) {
      const field = fieldOf(entry, shown);
      if (field) errors.add(field, plainWords(entry));
      else errors.general.push(`${entry.field === '(body)' ? '' : `${entry.field}: `}${plainWords(entry)}`);
    }
    if (problem.errors.length === 0) errors.general.push(problem.detail);
    return errors;
  }

  add(field: string, message: string): void {
    this.byField.set(field, [...(this.byField.get(field) ?? []), message]);
  }

  of(field: string): string[] {
    return this.byField.get(field) ?? [];
  }

  get empty(): boolean {
    return this.byField.size === 0 && this.general.length === 0;
  }
}

/** `scopes[2]` belongs to the `scopes` field, `topics[0]` to `topics`. */
function fieldOf(entry: FieldProblem, shown: Set<string>): string | undefined {
  if (shown.has(entry.field)) return entry.field;
  const head = /^[A-Za-z_]+/.exec(entry.field)?.[0];
  return head && shown.has(head) ? head : undefined;
}

/** The API's message, which already names the field, with a capital and a full stop. */
function plainWords(entry: FieldProblem): string {
  const message = entry.message.trim();
  const sentence = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
}

export const csrfField = (token: string) => html`<input type="hidden" name="_csrf" value="${token}">`;

/** Problems not tied to a field, and a count of the rest, at the top of the form; focus lands here. */
export function errorSummary(errors: FormErrors): Html | '' {
  if (errors.empty) return '';
  const fieldCount = [...errors.byField.values()].reduce((sum, list) => sum + list.length, 0);
  return html`<div class="error-summary" role="alert" tabindex="-1" id="error-summary">
  <h2>This could not be saved</h2>
  <ul>${errors.general.map((message) => html`<li>${message}</li>`)}${fieldCount > 0 ? html`<li>${fieldCount === 1 ? 'One field needs' : `${fieldCount} fields need`} your attention below.</li>` : ''}</ul>
</div>`;
}

export interface FieldOptions {
  name: string;
  label: string;
  value?: string | undefined;
  type?: 'text' | 'url' | 'email' | 'number' | 'datetime-local' | 'search';
  hint?: string;
  required?: boolean;
  errors?: FormErrors;
  /** The API's name for the field when the form's differs. */
  apiField?: string;
  attributes?: Html;
  autocomplete?: string;
}

function describedBy(id: string, hint: boolean, errors: string[]): string | undefined {
  const ids = [hint ? `${id}-hint` : '', errors.length > 0 ? `${id}-error` : ''].filter(Boolean);
  return ids.length > 0 ? ids.join(' ') : undefined;
}

function fieldMessages(id: string, hint: string | undefined, errors: string[]): Html {
  return html`${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}${errors.length > 0 ? html`<p class="field-error" id="${id}-error">${errors.join(' ')}</p>` : ''}`;
}

export function textField(options: FieldOptions): Html {
  const id = `field-${options.name}`;
  const errors = options.errors?.of(options.apiField ?? options.name) ?? [];
  const described = describedBy(id, !!options.hint, errors);
  return html`<div class="field${errors.length > 0 ? ' invalid' : ''}">
  <label for="${id}">${options.label}${options.required ? '' : html` <span class="optional">(optional)</span>`}</label>
  ${fieldMessages(id, options.hint, errors)}
  <input id="${id}" name="${options.name}" type="${options.type ?? 'text'}" value="${options.value ?? ''}"${options.required ? html` required` : ''}${described ? html` aria-describedby="${described}"` : ''}${errors.length > 0 ? html` aria-invalid="true"` : ''}${options.autocomplete ? html` autocomplete="${options.autocomplete}"` : ''}${options.attributes ?? ''}>
</div>`;
}

export function textArea(options: FieldOptions & { rows?: number }): Html {
  const id = `field-${options.name}`;
  const errors = options.errors?.of(options.apiField ?? options.name) ?? [];
  const described = describedBy(id, !!options.hint, errors);
  return html`<div class="field${errors.length > 0 ? ' invalid' : ''}">
  <label for="${id}">${options.label}${options.required ? '' : html` <span class="optional">(optional)</span>`}</label>
  ${fieldMessages(id, options.hint, errors)}
  <textarea id="${id}" name="${options.name}" rows="${options.rows ?? 4}" spellcheck="false"${options.required ? html` required` : ''}${described ? html` aria-describedby="${described}"` : ''}${errors.length > 0 ? html` aria-invalid="true"` : ''}${options.attributes ?? ''}>${options.value ?? ''}</textarea>
</div>`;
}

export interface Choice {
  value: string;
  label: string;
  hint?: string;
}

export function selectField(options: FieldOptions & { choices: Choice[]; includeBlank?: string }): Html {
  const id = `field-${options.name}`;
  const errors = options.errors?.of(options.apiField ?? options.name) ?? [];
  const described = describedBy(id, !!options.hint, errors);
  return html`<div class="field${errors.length > 0 ? ' invalid' : ''}">
  <label for="${id}">${options.label}${options.required ? '' : html` <span class="optional">(optional)</span>`}</label>
  ${fieldMessages(id, options.hint, errors)}
  <select id="${id}" name="${options.name}"${options.required ? html` required` : ''}${described ? html` aria-describedby="${described}"` : ''}${errors.length > 0 ? html` aria-invalid="true"` : ''}>
    ${options.includeBlank !== undefined ? html`<option value="">${options.includeBlank}</option>` : ''}
    ${options.choices.map((choice) => html`<option value="${choice.value}"${choice.value === options.value ? html` selected` : ''}>${choice.label}</option>`)}
  </select>
</div>`;
}

/** A group of checkboxes with a legend: scopes, topics, event types. */
export function checkboxGroup(options: {
  name: string;
  legend: string;
  choices: Choice[];
  checked: readonly string[];
  errors?: FormErrors;
  hint?: string;
  apiField?: string;
}): Html {
  const id = `field-${options.name}`;
  const errors = options.errors?.of(options.apiField ?? options.name) ?? [];
  const described = describedBy(id, !!options.hint, errors);
  return html`<fieldset class="field checkboxes${errors.length > 0 ? ' invalid' : ''}"${described ? html` aria-describedby="${described}"` : ''}>
  <legend>${options.legend}</legend>
  ${fieldMessages(id, options.hint, errors)}
  ${options.choices.map(
    (
      choice,
      index,
    ) => html`<div class="checkbox"><input type="checkbox" id="${id}-${index}" name="${options.name}" value="${choice.value}"${options.checked.includes(choice.value) ? html` checked` : ''}>
    <label for="${id}-${index}"><code>${choice.label}</code>${choice.hint ? html` <span class="hint">${choice.hint}</span>` : ''}</label></div>`,
  )}
</fieldset>`;
}

/** A one-button form: every action that changes something is a POST with the CSRF token. */
export function actionButton(options: {
  action: string;
  label: string;
  csrf: string;
  danger?: boolean;
  fields?: Record<string, string>;
  describedBy?: string;
}): Html {
  return html`<form method="post" action="${options.action}" class="inline">${csrfField(options.csrf)}${Object.entries(options.fields ?? {}).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}<button type="submit" class="${options.danger ? 'danger' : 'secondary'}"${options.describedBy ? html` aria-describedby="${options.describedBy}"` : ''}>${options.label}</button></form>`;
}

/** What an empty list says: what this is, and what to do next. */
export function emptyState(title: string, text: Child, action?: Html): Html {
  return html`<div class="empty-state"><h2>${title}</h2><p>${text}</p>${action ?? ''}</div>`;
}

export interface Column<Row> {
  header: string;
  cell(row: Row): Child;
  /** Numbers line up on the right. */
  numeric?: boolean;
}

export function dataTable<Row>(caption: string, columns: Column<Row>[], rows: Row[]): Html {
  return html`<div class="table-wrap"><table>
  <caption class="visually-hidden">${caption}</caption>
  <thead><tr>${columns.map((column) => html`<th scope="col"${column.numeric ? html` class="numeric"` : ''}>${column.header}</th>`)}</tr></thead>
  <tbody>${rows.map((row) => html`<tr>${columns.map((column) => html`<td${column.numeric ? html` class="numeric"` : ''}>${column.cell(row)}</td>`)}</tr>`)}</tbody>
</table></div>`;
}

/** Cursor pages: back to the first page, on to the next; the filters stay in the links. */
export function pagination(basePath: string, query: Record<string, string | undefined>, nextCursor: string | null | undefined): Html | '' {
  const { cursor, ...filters } = query;
  if (!nextCursor && !cursor) return '';
  const link = (extra: Record<string, string>) => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries({ ...filters, ...extra })) if (value) params.set(name, value);
    const search = params.toString();
    return search ? `${basePath}?${search}` : basePath;
  };
  return html`<nav class="pagination" aria-label="Pages">
  ${cursor ? html`<a href="${link({})}">First page</a>` : ''}
  ${nextCursor ? html`<a href="${link({ cursor: nextCursor })}" rel="next">Next page</a>` : ''}
</nav>`;
}

export function statusBadge(status: string): Html {
  return html`<span class="badge badge-${status.replace(/[^a-z_]/g, '')}">${status.replace(/_/g, ' ')}</span>`;
}

/** A one-time secret with its copy button (the button appears with script; the field is selectable without). */
export function secretReveal(options: { id: string; label: string; secret: string; warning: string }): Html {
  return html`<div class="secret" role="region" aria-labelledby="${options.id}-label">
  <p class="warning" id="${options.id}-warning"><strong>Copy it now.</strong> ${options.warning}</p>
  <label for="${options.id}" id="${options.id}-label">${options.label}</label>
  <div class="secret-row">
    <input id="${options.id}" type="text" readonly value="${options.secret}" class="secret-value" aria-describedby="${options.id}-warning" spellcheck="false" autocomplete="off">
    <button type="button" class="copy" data-copy="${options.id}" hidden>Copy</button>
  </div>
  <p class="copy-status" role="status" aria-live="polite" data-copy-status="${options.id}"></p>
</div>`;
}
