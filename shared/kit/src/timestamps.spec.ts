import assert from 'node:assert/strict';
import { parseTimeFilter, parseTimestamp } from './timestamps.js';
import type { FieldError } from './errors.js';

describe('timestamps clients send', () => {
  it('takes ISO 8601 times with seconds and a zone', () => {
    assert.equal(parseTimestamp('2026-11-22T10:04:05.123Z')?.toISOString(), '2026-11-22T10:04:05.123Z');
    assert.equal(parseTimestamp('2026-11-22T11:04:05+01:00')?.toISOString(), '2026-11-22T10:04:05.000Z');
    assert.equal(parseTimestamp('2024-02-29T00:00:00Z')?.toISOString(), '2024-02-29T00:00:00.000Z');
    assert.equal(parseTimestamp('0001-01-01T00:00:00Z')?.toISOString(), '0001-01-01T00:00:00.000Z');
  });

  it('refuses what names no real time, year 0, no zone, and anything but a string', () => {
    for (const value of [
      '0000-01-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-11-22T24:00:00Z',
      '2026-11-22T10:60:00Z',
      '2026-11-22T10:00:00',
      '2026-11-22',
      'yesterday',
      '2026-11-22T10:00:00+25:00',
      1_700_000_000,
      null,
    ]) {
      assert.equal(parseTimestamp(value), undefined, String(value));
    }
  });

  it('reports a bad filter as a field error and leaves an absent one alone', () => {
    const errors: FieldError[] = [];
    assert.equal(parseTimeFilter({}, 'since', errors), undefined);
    assert.equal(parseTimeFilter({ since: '0000-01-01T00:00:00Z' }, 'since', errors), undefined);
    assert.deepEqual(
      errors.map((error) => [error.field, error.code]),
      [['since', 'invalid_timestamp']],
    );
  });
});
