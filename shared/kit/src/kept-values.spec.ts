import assert from 'node:assert/strict';
import { KeptValues } from './kept-values.js';

describe('KeptValues', () => {
  it('makes a value once per key, and past its limit lets the least recently used go first', () => {
    const made: string[] = [];
    const kept = new KeptValues<string, string>(2);
    const upper = (key: string) => {
      made.push(key);
      return key.toUpperCase();
    };
    assert.equal(kept.get('a', upper), 'A');
    assert.equal(kept.get('a', upper), 'A');
    kept.get('b', upper);
    kept.get('c', upper);
    assert.equal(kept.size, 2);
    kept.get('b', upper);
    kept.get('a', upper);
    assert.deepEqual(made, ['a', 'b', 'c', 'a'], 'a was made again once it had gone; b was still kept');
    // Kept now: b, then a (most recent). Reading b makes a the least recently used.
    kept.get('b', upper);
    kept.get('d', upper);
    kept.get('b', upper);
    assert.deepEqual(made, ['a', 'b', 'c', 'a', 'd'], 'b, read just before d came, stayed; a went');
  });
});
