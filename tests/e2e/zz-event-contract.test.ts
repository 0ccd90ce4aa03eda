import assert from 'node:assert/strict';
import { invalidEventsSoFar, sharedStack } from '../src/harness/index.js';

// Named to run last: by now every other file has caused its events.
describe('event contract', () => {
  it('every event published during the run matches its schema in the event catalogue', async function () {
    this.timeout(60_000);
    const stack = await sharedStack();
    assert.ok(stack.events.seen.length > 0, 'the run published events');
    assert.deepEqual(await invalidEventsSoFar(), []);
  });
});
