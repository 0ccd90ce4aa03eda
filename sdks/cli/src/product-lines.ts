/**
 * Lines of a products file (CSV with a header row, or JSON lines) as gRPC ProductInputs, each
 * with its line number; a line that cannot become one is a failure of its own and never sent.
 * Columns and members are the REST fields (sku, title, description, price, currency, status,
 * inventory_quantity, attributes as a JSON object or `attributes.<key>` columns); others (id,
 * version, created_at, as `merx export products` writes them) are ignored.
 */
import { readFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import { create } from '@bufbuild/protobuf';
import { ProductInputSchema, ProductStatus, type ProductInput } from './gen/merx/v1/products_pb.js';
import { UsageError } from './errors.js';

export interface LineFailure {
  line: number;
  sku: string | null;
  code: string;
  detail: string;
}

export type ProductLine = { line: number; input: ProductInput } | { line: number; failure: LineFailure };

export type FileFormat = 'csv' | 'jsonl';

export function formatOf(file: string, given?: string): FileFormat {
  if (given) {
    if (given !== 'csv' && given !== 'jsonl') throw new UsageError('--format is csv or jsonl');
    return given;
  }
  if (/\.csv$/i.test(file)) return 'csv';
  if (/\.(jsonl|ndjson|json)$/i.test(file)) return 'jsonl';
  throw new UsageError(`cannot tell the format of ${file} from its name: pass --format csv or --format jsonl`);
}

const STATUS: Record<string, ProductStatus> = { draft: ProductStatus.DRAFT, active: ProductStatus.ACTIVE, archived: ProductStatus.ARCHIVED };

function lineFailure(line: number, sku: unknown, detail: string): { line: number; failure: LineFailure } {
  return { line, failure: { line, sku: typeof sku === 'string' && sku ? sku : null, code: 'invalid_line', detail } };
}

/** One record (a CSV row or a JSON object) as a ProductInput, or why it cannot be one. */
export function productLineOf(line: number, record: Record<string, unknown>): ProductLine {
  const text = (name: string): string | undefined => {
    const value = record[name];
    if (value === undefined || value === null || value === '') return undefined;
    return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
  };
  const sku = record.sku;
  for (const name of ['sku', 'title', 'description', 'price', 'currency', 'status']) {
    const value = record[name];
    if (value !== undefined && value !== null && typeof value !== 'string' && !(name === 'price' && typeof value === 'number'))
      return lineFailure(line, sku, `${name} must be a string`);
  }
  const status = text('status');
  if (status !== undefined && !(status in STATUS)) return lineFailure(line, sku, `status must be draft, active or archived, not ${status}`);
  let inventory: number | undefined;
  const rawInventory = record.inventory_quantity;
  if (rawInventory !== undefined && rawInventory !== null && rawInventory !== '') {
    inventory = typeof rawInventory === 'number' ? rawInventory : /^-?\d+$/.test(String(rawInventory)) ? Number(rawInventory) : Number.NaN;
    if (!Number.isInteger(inventory) || Math.abs(inventory) > 2_147_483_647)
      return lineFailure(line, sku, `inventory_quantity must be a whole number, not ${String(rawInventory)}`);
  }
  let attributes: Record<string, unknown> = {};
  const rawAttributes = record.attributes;
  if (typeof rawAttributes === 'string' && rawAttributes !== '') {
    try {
      attributes = JSON.parse(rawAttributes) as Record<string, unknown>;
    } catch {
      return lineFailure(line, sku, 'attributes must be a JSON object');
    }
  } else if (rawAttributes && typeof rawAttributes === 'object') attributes = rawAttributes as Record<string, unknown>;
  if (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes)) return lineFailure(line, sku, 'attributes must be a JSON object');
  for (const [key, value] of Object.entries(record))
    if (key.startsWith('attributes.') && value !== '' && value !== undefined) attributes[key.slice('attributes.'.length)] = value;
  const stringAttributes: Record<string, string> = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (typeof value !== 'string') return lineFailure(line, sku, `attribute ${key} must be a string`);
    stringAttributes[key] = value;
  }
  const input = create(ProductInputSchema, {
    sku: text('sku') ?? '',
    title: text('title') ?? '',
    price: text('price') ?? '',
    currency: text('currency') ?? '',
    status: status === undefined ? ProductStatus.UNSPECIFIED : STATUS[status]!,
    attributes: stringAttributes,
    ...(text('description') !== undefined ? { description: text('description')! } : {}),
    ...(inventory !== undefined ? { inventoryQuantity: inventory } : {}),
  });
  return { line, input };
}

/** Every product line of the file, in order, from `fromLine` on (line numbers are the file's own, 1-based). */
export function readProductLines(file: string, format: FileFormat, fromLine = 1): ProductLine[] {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const lines: ProductLine[] = [];
  if (format === 'jsonl') {
    for (const [index, raw] of text.split(/\r?\n/).entries()) {
      const line = index + 1;
      if (line < fromLine || raw.trim() === '') continue;
      let record: unknown;
      try {
        record = JSON.parse(raw);
      } catch {
        lines.push(lineFailure(line, undefined, 'not a JSON object (bad JSON)'));
        continue;
      }
      if (record === null || typeof record !== 'object' || Array.isArray(record)) lines.push(lineFailure(line, undefined, 'not a JSON object'));
      else lines.push(productLineOf(line, record as Record<string, unknown>));
    }
    return lines;
  }
  let rows: { record: Record<string, string>; info: { lines: number } }[];
  try {
    rows = parseCsv(text, { columns: true, skip_empty_lines: true, trim: true, bom: true, info: true, relax_column_count: true }) as typeof rows;
  } catch (error) {
    throw new UsageError(`${file} is not CSV with a header row: ${(error as Error).message}`);
  }
  for (const { record, info } of rows) {
    if (info.lines < fromLine) continue;
    lines.push(productLineOf(info.lines, record));
  }
  return lines;
}
