import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { Relay } from './relay.js';

describe('Relay', () => {
  /** A source that is flowing, and a target of one chunk that nobody reads yet: full after one write. */
  const streams = () => {
    const source = new PassThrough();
    source.resume();
    const target = new PassThrough({ highWaterMark: 1 });
    return { source, target, relay: new Relay(source, target) };
  };

  it('stops the source while the target is full, with one drain listener however many writes, and resumes it at drain', async () => {
    const { source, target, relay } = streams();
    const listenersBefore = target.listenerCount('drain');
    for (let index = 0; index < 20; index++) relay.write(Buffer.from(`message ${index}`));
    assert.equal(source.isPaused(), true);
    assert.equal(target.listenerCount('drain'), listenersBefore + 1);
    target.resume();
    await new Promise((resolve) => target.once('drain', resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(source.isPaused(), false);
  });

  it('keeps the source stopped until every hold is released: the bulk class letting a message go does not read past a full target', async () => {
    const { source, target, relay } = streams();
    relay.hold('bulk class');
    relay.write(Buffer.from('the message the bulk class let go'));
    relay.release('bulk class');
    // The target is still full: reading on now is what let messages pile up behind it.
    assert.equal(source.isPaused(), true);
    target.resume();
    await new Promise((resolve) => target.once('drain', resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(source.isPaused(), false);
    relay.hold('bulk class');
    assert.equal(source.isPaused(), true);
    relay.release('bulk class');
    assert.equal(source.isPaused(), false);
  });
});
