import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot, repoRoot } from './support/server.js';

const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');
const fixtures = path.join(packageRoot, 'test/fixtures');

function typecheck(dir: string): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { cwd: dir, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('the types catch mistakes at compile time (tsc --noEmit over a usage file)', function () {
  this.timeout(120_000);

  it('the usage files compile, through the import and the require typings, with every @ts-expect-error used', () => {
    const { status, output } = typecheck(fixtures);
    assert.equal(status, 0, output);
  });

  it('without the @ts-expect-error lines, tsc reports an error on each of those lines', () => {
    // Inside the package (dist is not committed), so '@merx/sdk' resolves to this build as in the fixtures.
    const dir = path.join(packageRoot, 'dist', `typecheck-${process.pid}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    try {
      cpSync(path.join(fixtures, 'tsconfig.json'), path.join(dir, 'tsconfig.json'));
      const expected: number[] = [];
      for (const file of ['usage.ts', 'usage-cjs.cts']) {
        const lines = readFileSync(path.join(fixtures, file), 'utf8').split('\n');
        const stripped = lines.map((line, index) => {
          if (!line.trim().startsWith('// @ts-expect-error')) return line;
          if (file === 'usage.ts') expected.push(index + 2); // the line after the directive, 1-based
          return '';
        });
        writeFileSync(path.join(dir, file), stripped.join('\n'));
      }
      const { status, output } = typecheck(dir);
      assert.notEqual(status, 0);
      const reported = new Set([...output.matchAll(/usage\.ts\((\d+),\d+\): error/g)].map((match) => Number(match[1])));
      assert.ok(expected.length >= 8, 'the fixture tries several mistakes');
      assert.deepEqual(
        expected.filter((line) => !reported.has(line)),
        [],
        `every mistake is an error:\n${output}`,
      );
      assert.match(output, /usage-cjs\.cts\(\d+,\d+\): error/, 'and through the CommonJS typings');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
