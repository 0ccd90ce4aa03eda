import assert from 'node:assert/strict';
import { serialisePerKey } from './serialise.js';

describe('serialisePerKey', () => {
  it('runs one key in submission order even when earlier work is slower, and keys in parallel', async () => {
    const run = serialisePerKey();
    const order: string[] = [];
    let releaseFirst!: () => void;
    const gate = new Promise<void>((resolve) => (releaseFirst = resolve));
    const first = run('a', async () => {
      await gate;
      order.push('a1');
    });
    const second = run('a', async () => {
      order.push('a2');
    });
    await run('b', async () => {
      order.push('b1');
    });
    assert.deepEqual(order, ['b1'], 'b did not wait for a');
    releaseFirst();
    await Promise.all([first, second]);
    assert.deepEqual(order, ['b1', 'a1', 'a2']);
  });

  it('keeps going after a failure', async () => {
    const run = serialisePerKey();
    await assert.rejects(run('a', async () => { throw new Error('boom'); }), /boom/);
    assert.equal(await run('a', async () => 2), 2);
  });
});
