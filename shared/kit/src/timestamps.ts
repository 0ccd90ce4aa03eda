import type { FieldError } from './errors.js';

/** ISO 8601 date-time with seconds and a zone: `2026-11-22T10:04:05.123Z`, `2026-11-22T11:04:05+01:00`. */
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;

/**
 * A time a client sent, or undefined when it is not one. `Date` rolls 2026-02-30 into March and
 * takes year 0, which PostgreSQL refuses (a 500 from the database); a time that names no real
 * day, hour or minute, or falls outside years 1–9999, is refused here instead.
 */
export function parseTimestamp(value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined;
  const match = ISO_TIMESTAMP.exec(value);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !isLeapYear(year) ? 1 : 0);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return undefined;
  if (match[9] !== undefined && (Number(match[9]) > 23 || Number(match[10]) > 59)) return undefined;
  const time = new Date(value);
  return Number.isNaN(time.getTime()) ? undefined : time;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** A time filter of a list (`since`, `until`): undefined when absent, a field error when not a time. */
export function parseTimeFilter(query: Record<string, unknown>, name: string, errors: FieldError[]): Date | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  const time = parseTimestamp(value);
  if (!time)
    errors.push({ field: name, code: 'invalid_timestamp', message: `${name} must be an ISO 8601 timestamp with a zone, such as 2026-11-22T10:04:05.123Z` });
  return time;
}
