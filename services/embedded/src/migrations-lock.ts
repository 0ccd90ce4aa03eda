import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compareWithLock, currentChecksums } from './schemas.js';

/**
 * `npm run migrations:lock`: adds new migrations to `migrations.lock.json`. It never rewrites an
 * entry: a shipped migration whose SQL changed, or that disappeared, stops it with the names, and
 * the fix is to restore the file and put the change in a new migration.
 */
export const LOCK_FILE = fileURLToPath(new URL('../../migrations.lock.json', import.meta.url));

export function readLock(): Record<string, string> {
  return JSON.parse(readFileSync(LOCK_FILE, 'utf8')) as Record<string, string>;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let lock: Record<string, string> = {};
  try {
    lock = readLock();
  } catch {
    // First lock: every migration in the code is what shipped.
  }
  const current = currentChecksums();
  const { changed, missing, added } = compareWithLock(lock, current);
  if (changed.length > 0 || missing.length > 0) {
    for (const key of changed) process.stderr.write(`migrations:lock: ${key} changed after it shipped; restore it and add a new migration\n`);
    for (const key of missing) process.stderr.write(`migrations:lock: ${key} shipped but is gone; restore it\n`);
    process.exit(1);
  }
  const next = { ...lock };
  for (const key of added) next[key] = current[key]!;
  writeFileSync(LOCK_FILE, `${JSON.stringify(next, null, 2)}\n`);
  process.stdout.write(added.length > 0 ? `migrations:lock: added ${added.join(', ')}\n` : 'migrations:lock: up to date\n');
}
