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
    assert.deepEqual(writes, [
      ['a', [1]],
      ['b', [9]],
      ['a', [2, 3]],
    ]);
  });

  it('writes the items of a failed batch one by one: a bad item fails alone and the rest commit', async () => {
    const writes: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const submit = batchPerKey<number>(async (_key, items) => {
      writes.push(items);
      if (writes.length === 1) await gate;
      if (items.includes(3)) throw new Error('item 3 cannot be written');
    });
    const first = submit('a', 1);
    const batch = [2, 3, 4].map((n) => submit('a', n));
    release();
    await first;
    const outcomes = await Promise.allSettled(batch);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /item 3/);
    assert.deepEqual(writes, [[1], [2, 3, 4], [2], [3], [4]]);
  });

  it('with gatherMs, waits for more before writing a batch that is not full, and not for a full one', async () => {
    const writes: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const submit = batchPerKey<number>(
      async (_key, items) => {
        writes.push(items);
        if (writes.length === 1) await gate;
      },
      { maxBatch: 2, gatherMs: 50 },
    );
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
    // 1 alone would have been written at once; 2 comes in a later turn of the event loop, inside the wait.
    const first = [submit('a', 1)];
    await nextTurn();
    first.push(submit('a', 2));
    // 3 and 4 fill a batch while the first is written: it goes as soon as that write ends.
    await nextTurn();
    const full = [submit('a', 3), submit('a', 4)];
    while (writes.length === 0) await nextTurn();
    assert.deepEqual(writes, [[1, 2]]);
    release();
    await Promise.all(first);
    await nextTurn();
    // Already written, well inside the 50 ms a batch that is not full would have waited.
    assert.deepEqual(writes, [
      [1, 2],
      [3, 4],
    ]);
    await Promise.all(full);
  });

  it('rejects the item of a failed batch of one and carries on', async () => {
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
