import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { merxServer, packageRoot, repoRoot, type MerxServer } from './support/server.js';

const run = promisify(execFile);

async function pack(dir: string, into: string): Promise<{ filename: string; files: string[] }> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', into], { cwd: dir });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  return { filename: path.join(into, packed!.filename), files: packed!.files.map((file) => file.path) };
}

describe('npm pack: the CLI installs into an empty project and its merx works there', function () {
  this.timeout(300_000);
  let server: MerxServer;
  let work: string;
  let project: string;
  let files: string[];

  before(async () => {
    server = await merxServer();
    work = mkdtempSync(path.join(tmpdir(), 'merx-cli-pack-'));
    const sdk = await pack(path.join(repoRoot, 'sdks/node'), work);
    const cli = await pack(packageRoot, work);
    files = cli.files;
    project = path.join(work, 'project');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'empty-project', private: true, version: '1.0.0' }));
    // The SDK from its own tarball (it is not on a registry here); the CLI's other dependencies from
    // npm's cache, asking the npm registry only for what the cache lacks (package metadata).
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', sdk.filename, cli.filename], { cwd: project });
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('holds the compiled CLI with its gRPC code and the README, and no tests or sources', () => {
    assert.ok(files.includes('bin/merx.js') && files.includes('dist/src/bin.js') && files.includes('dist/src/gen/merx/v1/products_pb.js'));
    assert.ok(files.includes('README.md') && files.includes('package.json'));
    assert.deepEqual(
      files.filter((file) => /(^|\/)(test|scripts)\/|\.ts$|^src\//.test(file) && !file.endsWith('.d.ts')),
      [],
    );
  });

  it('npx merx runs REST and gRPC commands against the real server', async () => {
    const merchant = await server.createMerchant();
    const env = {
      ...process.env,
      MERX_API_KEY: merchant.apiKey,
      MERX_BASE_URL: server.baseUrl,
      MERX_GRPC_URL: server.grpcUrl,
      MERX_CONFIG_DIR: path.join(work, 'config'),
    };
    const version = await run('npx', ['--no-install', 'merx', '--version'], { cwd: project, env });
    assert.match(version.stdout, /^0\.1\.0/);
    const created = await run(
      'npx',
      ['--no-install', 'merx', 'products', 'create', '--sku', 'PACKED-1', '--title', 'Packed', '--price', '1.00', '--currency', 'USD'],
      { cwd: project, env },
    );
    assert.equal(JSON.parse(created.stdout).sku, 'PACKED-1');
    const exported = await run('npx', ['--no-install', 'merx', 'export', 'products'], { cwd: project, env });
    assert.equal(JSON.parse(exported.stdout.trim()).sku, 'PACKED-1');
  });
});
