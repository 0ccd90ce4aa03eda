import assert from 'node:assert/strict';
import { batchPerKey } from './batch.js';

describe('batchPerKey', () => {
  it('writes what arrives during a write as the next batch, in order, per key', async () => {
    const writes: Array<[string, number[]]> = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const submit = batchPerKey<number>(async (key, items) => {
      writes.push([key, items]);
      if (writes.length === 1) await gate;
    });
    const first = submit('a', 1);
    const later = [submit('a', 2), submit('a', 3), submit('b', 9)];
    await later[2];
    release();
    await Promise.all([first, ...later]);
    assert.deepEqual(writes, [['a', [1]], ['b', [9]], ['a', [2, 3]]]);
  });

  it('rejects every item of a failed batch and carries on', async () => {
    let fail = true;
    const submit = batchPerKey<number>(async () => {
      if (fail) {
        fail = false;
        throw new Error('boom');
      }
    });
    await assert.rejects(submit('a', 1), /boom/);
    await submit('a', 2);
  });
});
