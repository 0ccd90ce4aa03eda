import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cli } from './support/cli.js';
import { merxBin, merxServer, repoRoot } from './support/server.js';

const run = promisify(execFile);

describe('examples/cli-ci: the CI script runs against a real Merx', function () {
  this.timeout(240_000);

  it('resets the sandbox, applies the fixtures, imports the catalogue and passes its smoke test', async () => {
    const server = await merxServer();
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const { stdout } = await run('bash', [path.join(repoRoot, 'examples/cli-ci/smoke.sh')], {
      cwd: cli.configDir,
      env: cli.env({ MERX: `${process.execPath} ${merxBin}` }),
    });
    assert.match(stdout, /smoke test passed/);
  });
});
