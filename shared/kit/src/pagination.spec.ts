import assert from 'node:assert/strict';
import { ValidationFailed } from './errors.js';
import { newId } from './ids.js';
import { DEFAULT_PAGE_SIZE, encodeCursor, MAX_PAGE_SIZE, parsePageRequest, toListPage } from './pagination.js';

function validationErrorOf(work: () => unknown): ValidationFailed {
  try {
    work();
  } catch (error) {
    assert.ok(error instanceof ValidationFailed, `expected ValidationFailed, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a ValidationFailed');
}

describe('pagination', () => {
  it('defaults to 20 rows from the start', () => {
    assert.equal(DEFAULT_PAGE_SIZE, 20);
    assert.equal(MAX_PAGE_SIZE, 100);
    assert.deepEqual(parsePageRequest({}), { limit: 20, after: undefined });
    assert.deepEqual(parsePageRequest({ cursor: '' }), { limit: 20, after: undefined });
  });

  it('accepts limits from 1 to 100', () => {
    assert.equal(parsePageRequest({ limit: '1' }).limit, 1);
    assert.equal(parsePageRequest({ limit: '55' }).limit, 55);
    assert.equal(parsePageRequest({ limit: '100' }).limit, 100);
  });

  it('refuses limits out of range or not plain integers, naming the field', () => {
    for (const limit of ['0', '101', '1000', '-1', '1.5', 'abc', '', ' 5', '1e1', ['5', '6']]) {
      const error = validationErrorOf(() => parsePageRequest({ limit }));
      assert.equal(error.code, 'validation_failed');
      assert.deepEqual(
        error.errors.map((e) => [e.field, e.code]),
        [['limit', 'out_of_range']],
        JSON.stringify(limit),
      );
      assert.deepEqual(error.extensions.errors, error.errors);
    }
  });

  it('decodes the cursors it encodes', () => {
    const id = newId('prod');
    assert.deepEqual(parsePageRequest({ limit: '5', cursor: encodeCursor(id) }), { limit: 5, after: id });
  });

  it('refuses a cursor it did not issue with a field error', () => {
    const forged = [
      'not-a-cursor',
      '!!!',
      Buffer.from('{"after":42}').toString('base64url'),
      Buffer.from('{"after":"prod_1; DROP TABLE products"}').toString('base64url'),
      Buffer.from('[]').toString('base64url'),
      Buffer.from('null').toString('base64url'),
    ];
    for (const cursor of forged) {
      const error = validationErrorOf(() => parsePageRequest({ cursor }));
      assert.deepEqual(
        error.errors.map((e) => [e.field, e.code]),
        [['cursor', 'invalid_cursor']],
        cursor,
      );
    }
    const both = validationErrorOf(() => parsePageRequest({ limit: '0', cursor: 'junk' }));
    assert.deepEqual(both.errors.map((e) => e.field).sort(), ['cursor', 'limit']);
  });

  it('builds a list page from limit + 1 rows', () => {
    const rows = Array.from({ length: 4 }, () => ({ id: newId('prod'), n: 1 }));
    const full = toListPage(rows, 3, (row) => ({ id: row.id }));
    assert.equal(full.object, 'list');
    assert.equal(full.has_more, true);
    assert.deepEqual(
      full.data.map((d) => d.id),
      rows.slice(0, 3).map((r) => r.id),
    );
    assert.ok(full.next_cursor);
    assert.equal(parsePageRequest({ cursor: full.next_cursor }).after, rows[2]!.id);

    const last = toListPage(rows.slice(0, 3), 3, (row) => row.id);
    assert.deepEqual(last, { object: 'list', data: rows.slice(0, 3).map((r) => r.id), has_more: false, next_cursor: null });

    assert.deepEqual(
      toListPage([], 20, (row: { id: string }) => row),
      { object: 'list', data: [], has_more: false, next_cursor: null },
    );
  });
});
