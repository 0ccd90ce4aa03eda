// How bulk writes frame items: what the iterable has ready goes in one page, what trickles goes alone.
import assert from 'node:assert/strict';
import { PageReader } from '../../src/grpc/page-reader.js';

async function* fromArray<T>(items: T[]): AsyncGenerator<T> {
  yield* items;
}

describe('PageReader', () => {
  it('fills pages from a source whose items are ready at once, up to the limit, then says the source ended', async () => {
    const reader = new PageReader<number>(fromArray(Array.from({ length: 1_203 }, (_, index) => index)));
    const sizes: number[] = [];
    const seen: number[] = [];
    for (let page = await reader.page(500); page.length > 0; page = await reader.page(500)) {
      sizes.push(page.length);
      seen.push(...page);
    }
    assert.deepEqual(sizes, [500, 500, 203]);
    assert.deepEqual(
      seen,
      Array.from({ length: 1_203 }, (_, index) => index),
    );
    assert.deepEqual(await reader.page(500), [], 'an ended source stays ended');
  });

  it('sends an item that comes alone at once instead of waiting to fill a page, and loses none it was waiting for', async () => {
    async function* trickle() {
      for (let index = 0; index < 3; index += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        yield index;
      }
    }
    const reader = new PageReader(trickle());
    const pages: number[][] = [];
    for (let page = await reader.page(500); page.length > 0; page = await reader.page(500)) pages.push(page);
    assert.deepEqual(pages, [[0], [1], [2]]);
  });

  it('throws what the source throws, at the page that reaches it, after the items before it', async () => {
    async function* failing() {
      yield 1;
      yield 2;
      throw new Error('the CSV is truncated');
    }
    const reader = new PageReader(failing());
    assert.deepEqual(await reader.page(1), [1]);
    await assert.rejects(
      (async () => {
        for (;;) if ((await reader.page(10)).length === 0) return;
      })(),
      /the CSV is truncated/,
    );
  });

  it('lets an unfinished source clean up (its finally runs) when the reader is returned', async () => {
    let cleaned = false;
    async function* endless() {
      try {
        for (let index = 0; ; index += 1) yield index;
      } finally {
        cleaned = true;
      }
    }
    const reader = new PageReader(endless());
    assert.equal((await reader.page(10)).length, 10);
    await reader.return();
    assert.ok(cleaned);
  });
});
