import assert from 'node:assert/strict';
import { BULK_CHUNK_SIZE, chunksOf, type BulkItem } from './bulk-products.js';

const item = (index: number, sku: string): BulkItem => ({ index, body: { sku } });

describe('chunks of a bulk write', () => {
  it('cuts at the chunk size and keeps the order', () => {
    const items = Array.from({ length: BULK_CHUNK_SIZE * 2 + 1 }, (_, index) => item(index, `S-${index}`));
    const chunks = chunksOf(items);
    assert.deepEqual(
      chunks.map((chunk) => chunk.length),
      [BULK_CHUNK_SIZE, BULK_CHUNK_SIZE, 1],
    );
    assert.deepEqual(chunks.flat(), items);
  });

  it('starts a new chunk when a sku comes again, so the second sees what the first made', () => {
    const chunks = chunksOf([item(0, 'A'), item(1, 'B'), item(2, 'A'), item(3, 'C')]);
    assert.deepEqual(
      chunks.map((chunk) => chunk.map((i) => i.index)),
      [
        [0, 1],
        [2, 3],
      ],
    );
  });
});
