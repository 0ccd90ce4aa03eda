import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataDirInUse, openPglite } from '../src/runtime.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');

describe('PGlite data directory after a crash', function () {
  this.timeout(60_000);

  for (const { name, writer } of [
    { name: 'on the main thread', writer: path.join(fixtures, 'pglite-writer.js') },
    { name: 'on its own thread (the embedded mode)', writer: path.join(fixtures, 'pglite-thread-writer.js') },
  ])
    it(`${name}: reopens after SIGKILL with every committed row, and refuses a second live process`, async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'merx-pglite-'));
      try {
        const child = spawn(process.execPath, [writer, dataDir], { stdio: ['ignore', 'pipe', 'inherit'] });
        let lastCommitted = 0;
        await new Promise<void>((resolve) => {
          child.stdout.on('data', (chunk: Buffer) => {
            lastCommitted = Number(chunk.toString().trim().split('\n').at(-1));
            if (lastCommitted >= 200) resolve();
          });
        });
        await assert.rejects(openPglite(dataDir), DataDirInUse);
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));

        const reopened = await openPglite(dataDir);
        const { rows } = await reopened.query<{ count: number; max: number }>('SELECT count(*)::int AS count, max(n) AS max FROM committed');
        await reopened.close();
        assert.ok(rows[0]!.count >= lastCommitted, `rows acknowledged before the kill survive (${rows[0]!.count} ≥ ${lastCommitted})`);
        assert.equal(rows[0]!.count, rows[0]!.max, 'no gaps');
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });
});
