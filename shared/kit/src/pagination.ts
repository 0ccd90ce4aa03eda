import { ValidationFailed, type FieldError } from './errors.js';

export interface ListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface PageRequest {
  limit: number;
  /** The id to continue after (exclusive), decoded from the opaque cursor. */
  after: string | undefined;
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** Cursors are opaque to clients; inside they name the last id seen so ordering by id is stable under inserts. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId })).toString('base64url');
}

function decodeCursor(cursor: string): string | undefined {
  try {
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    return typeof decoded.after === 'string' && /^[a-z]+_[0-9a-z]{26}$/.test(decoded.after) ? decoded.after : undefined;
  } catch {
    return undefined;
  }
}

function single(value: unknown): string | undefined {
  return Array.isArray(value) ? undefined : (value as string | undefined);
}

export function parsePageRequest(query: Record<string, unknown>): PageRequest {
  const errors: FieldError[] = [];
  let limit = DEFAULT_PAGE_SIZE;
  const rawLimit = query.limit;
  if (rawLimit !== undefined) {
    const text = single(rawLimit);
    const parsed = text !== undefined && /^\d{1,4}$/.test(text) ? Number(text) : NaN;
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > MAX_PAGE_SIZE) {
      errors.push({ field: 'limit', code: 'out_of_range', message: `limit must be an integer from 1 to ${MAX_PAGE_SIZE}` });
    } else {
      limit = parsed;
    }
  }
  let after: string | undefined;
  if (query.cursor !== undefined && query.cursor !== '') {
    const text = single(query.cursor);
    after = text === undefined ? undefined : decodeCursor(text);
    if (!after) errors.push({ field: 'cursor', code: 'invalid_cursor', message: 'cursor is not one this API returned' });
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
  return { limit, after };
}

/** Stores fetch `limit + 1` rows; the extra row only tells whether another page exists. */
export function toListPage<Row extends { id: string }, T>(rows: Row[], limit: number, present: (row: Row) => T): ListPage<T> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    object: 'list',
    data: pageRows.map(present),
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor(last.id) : null,
  };
}
