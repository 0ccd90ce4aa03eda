import assert from 'node:assert/strict';
import { stackMode, stopSharedStack } from '../src/harness/index.js';

// A root-level hook (outside any describe) runs once after every file of the run.
after(async function stopStack() {
  this.timeout(60_000);
  await stopSharedStack();
});

describe(`end-to-end suite (${stackMode()} mode)`, () => {
  it('runs against the mode it was asked for', () => {
    assert.ok(['embedded', 'distributed'].includes(stackMode()));
  });
});
