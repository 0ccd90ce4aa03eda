/**
 * What commands print. On a terminal: aligned tables and colours. Piped, or with `--json`: JSON
 * only on stdout, nothing decorative, so `merx products list | jq` and CI scripts read it as is.
 * Messages for people (progress, hints, warnings) go to stderr either way.
 */
import Table from 'cli-table3';
import pc from 'picocolors';
import { MerxError, UnprocessableEntityError } from '@merx/sdk';

export interface OutputOptions {
  json?: boolean;
  /** Comma-separated fields to keep (`id,sku,price`), at the top level of each object. */
  fields?: string;
}

export class Output {
  readonly json: boolean;
  private readonly fields: string[] | undefined;

  constructor(
    options: OutputOptions,
    readonly stdout: NodeJS.WriteStream = process.stdout,
    readonly stderr: NodeJS.WriteStream = process.stderr,
  ) {
    this.json = Boolean(options.json) || !stdout.isTTY;
    this.fields = options.fields
      ?.split(',')
      .map((field) => field.trim())
      .filter(Boolean);
  }

  get interactive(): boolean {
    return Boolean(this.stdout.isTTY) && !this.json;
  }

  /** A line for people on stderr; coloured only when stderr is a terminal. */
  note(message: string): void {
    this.stderr.write(`${message}\n`);
  }

  private select(value: unknown): unknown {
    if (!this.fields || value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const record = value as Record<string, unknown>;
    return Object.fromEntries(this.fields.filter((field) => field in record).map((field) => [field, record[field]]));
  }

  /** One object: JSON, or a two-column table of its fields. */
  object(value: unknown): void {
    const selected = this.select(value);
    // A text answer is printed as it came, JSON or not: quoting it would help no reader.
    if (typeof selected === 'string') {
      this.stdout.write(selected.endsWith('\n') ? selected : `${selected}\n`);
      return;
    }
    if (this.json || selected === null || typeof selected !== 'object') {
      this.stdout.write(`${JSON.stringify(selected, null, 2)}\n`);
      return;
    }
    const table = new Table({ style: { head: [], border: [] } });
    for (const [key, field] of Object.entries(selected as Record<string, unknown>)) table.push({ [pc.bold(key)]: cell(field, 100) });
    this.stdout.write(`${table.toString()}\n`);
  }

  /** Rows of one page (or all pages): a JSON page or array, or a table with one row per item. */
  rows(items: readonly unknown[], page?: { has_more: boolean; next_cursor: string | null }): void {
    const selected = items.map((item) => this.select(item));
    if (this.json) {
      const document = page ? { data: selected, has_more: page.has_more, next_cursor: page.next_cursor } : selected;
      this.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
      return;
    }
    if (selected.length === 0) {
      this.note(pc.dim('(none)'));
      return;
    }
    const columns = this.fields ?? defaultColumns(selected as Record<string, unknown>[]);
    const table = new Table({ head: columns.map((column) => pc.bold(column)), style: { head: [], border: [] } });
    for (const item of selected as Record<string, unknown>[]) table.push(columns.map((column) => cell(item[column], 40)));
    this.stdout.write(`${table.toString()}\n`);
    if (page?.has_more && page.next_cursor) this.note(pc.dim(`more: --cursor ${page.next_cursor} (or --all)`));
  }

  /** An API error on stderr: what went wrong, each field, and the request id to quote to support. */
  problem(error: MerxError): void {
    const colour = this.stderr.isTTY ? pc.red : (text: string) => text;
    const status = error.status === undefined ? '' : ` (${error.status}${error.code ? ` ${error.code}` : ''})`;
    const lines = [colour(`Error${status}: ${error.detail ?? error.title ?? error.message}`)];
    if (error instanceof UnprocessableEntityError) {
      for (const field of error.errors as { field?: string; pointer?: string; message?: string; code?: string }[]) {
        lines.push(`  ${field.field ?? field.pointer ?? ''}: ${field.message ?? field.code ?? ''}`);
      }
    }
    if (error.requestId) lines.push(`request id: ${error.requestId}`);
    if (this.json && error.problem) lines.push(JSON.stringify(error.problem));
    this.stderr.write(`${lines.join('\n')}\n`);
  }
}

/** Up to seven columns: `id` first, then the scalar fields of the first rows in their order. */
function defaultColumns(items: Record<string, unknown>[]): string[] {
  const columns: string[] = [];
  for (const item of items.slice(0, 5)) {
    for (const [key, value] of Object.entries(item)) {
      if (key === 'object' || columns.includes(key)) continue;
      if (value !== null && typeof value === 'object') continue;
      columns.push(key);
    }
  }
  columns.sort((a, b) => (a === 'id' ? -1 : b === 'id' ? 1 : 0));
  return columns.slice(0, 7);
}

function cell(value: unknown, width: number): string {
  if (value === null || value === undefined) return pc.dim('—');
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}
