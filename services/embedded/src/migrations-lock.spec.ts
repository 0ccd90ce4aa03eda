import assert from 'node:assert/strict';
import { readLock } from './migrations-lock.js';
import { compareWithLock, currentChecksums } from './schemas.js';

describe('migrations.lock.json', () => {
  it('freezes every shipped migration: none changed, none gone, every new one locked', () => {
    const { changed, missing, added } = compareWithLock(readLock());
    assert.deepEqual(changed, [], 'shipped migrations are frozen: restore them and put the change in a new migration');
    assert.deepEqual(missing, [], 'shipped migrations cannot be deleted or renamed');
    assert.deepEqual(added, [], 'new migrations: run `npm run migrations:lock` and commit migrations.lock.json');
  });

  it('notices an edit, a deletion and an addition', () => {
    const current = currentChecksums();
    const [first, second] = Object.keys(current);
    const lock = { ...current, [first!]: '0'.repeat(64), 'catalog/999_gone': '1'.repeat(64) };
    delete lock[second!];
    assert.deepEqual(compareWithLock(lock, current), { changed: [first], missing: ['catalog/999_gone'], added: [second] });
  });
});
