import assert from 'node:assert/strict';
import { idPrefixes, isId, newId } from './ids.js';

const CROCKFORD_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

describe('ids', () => {
  it('is the prefix, an underscore and a 26-character lower-case Crockford body', () => {
    for (const prefix of Object.values(idPrefixes)) {
      const id = newId(prefix);
      assert.ok(id.startsWith(`${prefix}_`), id);
      const body = id.slice(prefix.length + 1);
      assert.equal(body.length, 26);
      assert.match(body, CROCKFORD_BODY);
      assert.ok(isId(id, prefix));
    }
  });

  it('encodes the millisecond in the first ten characters', () => {
    const a = newId('prod', 1_700_000_000_000);
    const b = newId('prod', 1_700_000_000_000);
    assert.equal(a.slice(5, 15), b.slice(5, 15));
    assert.notEqual(newId('prod', 1_700_000_000_001).slice(5, 15), a.slice(5, 15));
    assert.equal(newId('prod', 0).slice(5, 15), '0000000000');
  });

  it('sorts strictly increasing within one millisecond', () => {
    const now = Date.now() + 10_000; // a millisecond no other test in this process mints in
    const ids = Array.from({ length: 1000 }, () => newId('evt', now));
    assert.equal(new Set(ids).size, ids.length);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} !< ${ids[i]}`);
  });

  it('sorts by time across milliseconds whatever the random part', () => {
    const base = Date.now() + 20_000;
    const ids: string[] = [];
    for (let ms = 0; ms < 200; ms++) {
      // Mint several per millisecond so a big random suffix is followed by a fresh, possibly smaller one.
      for (let k = 0; k < 3; k++) ids.push(newId('evt', base + ms));
    }
    const sorted = [...ids].sort();
    assert.deepEqual(sorted, ids);
  });

  it('orders ids minted in real time by creation', () => {
    const ids = Array.from({ length: 500 }, () => newId('req'));
    assert.deepEqual([...ids].sort(), ids);
  });

  it('isId checks the prefix, the separator and the body', () => {
    const id = newId('prod');
    assert.equal(isId(id, 'prod'), true);
    assert.equal(isId(id, 'mch'), false);
    assert.equal(isId(id, 'pro'), false);
    assert.equal(isId(id.toUpperCase(), 'prod'), false);
    assert.equal(isId(`${id}0`, 'prod'), false);
    assert.equal(isId(id.slice(0, -1), 'prod'), false);
    assert.equal(isId(`prod_${'u'.repeat(26)}`, 'prod'), false, 'u is not in the Crockford alphabet');
    assert.equal(isId(`prod_${'i'.repeat(26)}`, 'prod'), false);
    assert.equal(isId(`prod-${id.slice(5)}`, 'prod'), false);
    assert.equal(isId(undefined, 'prod'), false);
    assert.equal(isId(42, 'prod'), false);
    assert.equal(isId('', 'prod'), false);
  });
});
