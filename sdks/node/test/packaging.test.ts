import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { merxServer, packageRoot, repoRoot, type MerxServer } from './support/server.js';

const run = promisify(execFile);

describe('npm pack: the tarball installs into an empty project and works there', function () {
  this.timeout(240_000);
  let server: MerxServer;
  let work: string;
  let project: string;
  let files: string[];

  before(async () => {
    server = await merxServer();
    work = mkdtempSync(path.join(tmpdir(), 'merx-node-sdk-pack-'));
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: packageRoot });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
    files = packed!.files.map((file) => file.path);
    project = path.join(work, 'project');
    await run('mkdir', ['-p', project]);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'empty-project', private: true, version: '1.0.0' }));
    // No dependencies to fetch: the SDK has none, so the install needs no registry.
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(work, packed!.filename)], { cwd: project });
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('holds the two builds and the README, and no tests or sources', () => {
    assert.ok(files.includes('dist/esm/index.js') && files.includes('dist/esm/index.d.ts'));
    assert.ok(files.includes('dist/cjs/index.js') && files.includes('dist/cjs/index.d.ts') && files.includes('dist/cjs/package.json'));
    assert.ok(files.includes('README.md') && files.includes('package.json'));
    assert.deepEqual(
      files.filter((file) => /(^|\/)(test|src|scripts)\//.test(file)),
      [],
    );
    assert.deepEqual(
      readdirSync(path.join(project, 'node_modules')).filter((name) => !name.startsWith('.')),
      ['@merx'],
      'no runtime dependency came along',
    );
  });

  it('five lines with an API key create and list products, in ESM and in CommonJS', async () => {
    const merchant = await server.createMerchant();
    const esm = `import Merx from '@merx/sdk';
const merx = new Merx({ apiKey: process.env.KEY, baseUrl: process.env.URL });
await merx.products.create({ sku: 'PACK-ESM', title: 'Packed', price: '19.99', currency: 'USD' });
for await (const product of merx.products.list({ limit: 10 })) console.log(product.sku);
`;
    const cjs = `const Merx = require('@merx/sdk');
const merx = new Merx({ apiKey: process.env.KEY, baseUrl: process.env.URL });
merx.products.create({ sku: 'PACK-CJS', title: 'Packed', price: '19.99', currency: 'USD' })
  .then(async () => { for await (const product of merx.products.list({ limit: 10 })) console.log(product.sku); });
`;
    writeFileSync(path.join(project, 'esm.mjs'), esm);
    writeFileSync(path.join(project, 'cjs.cjs'), cjs);
    const env = { ...process.env, KEY: merchant.apiKey, URL: server.baseUrl };
    const first = await run(process.execPath, ['esm.mjs'], { cwd: project, env });
    assert.deepEqual(first.stdout.trim().split('\n'), ['PACK-ESM']);
    const second = await run(process.execPath, ['cjs.cjs'], { cwd: project, env });
    assert.deepEqual(second.stdout.trim().split('\n').sort(), ['PACK-CJS', 'PACK-ESM']);
  });

  it('the installed typings catch a wrong field there too', async () => {
    writeFileSync(
      path.join(project, 'check.mts'),
      `import Merx from '@merx/sdk';
const merx = new Merx({ apiKey: 'mx_test_a_b' });
await merx.products.create({ sku: 'S', title: 'T', price: '1.00', currency: 'USD' });
// @ts-expect-error no such field
await merx.products.create({ sku: 'S', titel: 'T', price: '1.00', currency: 'USD' });
// The gRPC helpers' types need no @grpc/grpc-js (not installed here yet).
for await (const result of merx.bulk.upsertProducts([{ sku: 'S', title: 'T', price: '1.00', currency: 'USD' }])) {
  if (result.outcome === 'failed') console.log(result.problem.code);
  else console.log(result.product.id);
}
// @ts-expect-error no such field
merx.bulk.upsertProducts([{ sku: 'S', titel: 'T', price: '1.00', currency: 'USD' }]);
for await (const event of merx.events.stream({ after: 'evt_1', topics: ['products'] })) console.log(event.topic);
`,
    );
    const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');
    const args = [
      tsc,
      '--noEmit',
      '--strict',
      '--target',
      'ES2022',
      '--module',
      'NodeNext',
      '--moduleResolution',
      'NodeNext',
      '--lib',
      'ES2023,DOM',
      '--types',
      'node',
      '--typeRoots',
      path.join(repoRoot, 'node_modules/@types'),
      'check.mts',
    ];
    const result = await run(process.execPath, args, { cwd: project }).then(
      () => ({ code: 0, output: '' }),
      (error: { code: number; stdout: string }) => ({ code: error.code, output: error.stdout }),
    );
    assert.equal(result.code, 0, result.output);
  });

  it('without @grpc/grpc-js installed, a gRPC helper says what to install (and REST never needed it)', async () => {
    writeFileSync(
      path.join(project, 'no-grpc.mjs'),
      `import Merx from '@merx/sdk';
const merx = new Merx({ apiKey: 'mx_test_a_b', baseUrl: 'http://127.0.0.1:9' });
try {
  for await (const product of merx.bulk.exportProducts()) console.log(product.id);
} catch (error) {
  console.log(JSON.stringify({ name: error.name, message: error.message }));
}
`,
    );
    const { stdout } = await run(process.execPath, ['no-grpc.mjs'], { cwd: project });
    const answer = JSON.parse(stdout) as { name: string; message: string };
    assert.equal(answer.name, 'ConfigurationError');
    assert.match(answer.message, /npm install @grpc\/grpc-js@\S+ @bufbuild\/protobuf@\S+/);
  });

  it('with the two optional peers installed, the gRPC helpers work in ESM and in CommonJS', async () => {
    // The versions the repository builds and tests with, from the npm cache that npm ci filled.
    const versionOf = (name: string) =>
      (JSON.parse(readFileSync(path.join(repoRoot, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    const peers = ['@grpc/grpc-js', '@bufbuild/protobuf'].map((name) => `${name}@${versionOf(name)}`);
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...peers], { cwd: project });
    const merchant = await server.createMerchant();
    const esm = `import Merx from '@merx/sdk';
const merx = new Merx({ apiKey: process.env.KEY, baseUrl: process.env.URL, grpcUrl: process.env.GRPC });
for await (const result of merx.bulk.upsertProducts([{ sku: 'GRPC-ESM', title: 'Packed', price: '1.00', currency: 'USD' }])) console.log(result.outcome);
`;
    const cjs = `const Merx = require('@merx/sdk');
const merx = new Merx({ apiKey: process.env.KEY, baseUrl: process.env.URL, grpcUrl: process.env.GRPC });
(async () => {
  for await (const result of merx.bulk.upsertProducts([{ sku: 'GRPC-CJS', title: 'Packed', price: '1.00', currency: 'USD' }])) console.log(result.outcome);
  for await (const product of merx.bulk.exportProducts()) console.log(product.sku);
})();
`;
    writeFileSync(path.join(project, 'grpc-esm.mjs'), esm);
    writeFileSync(path.join(project, 'grpc-cjs.cjs'), cjs);
    const env = { ...process.env, KEY: merchant.apiKey, URL: server.baseUrl, GRPC: server.grpcUrl };
    const first = await run(process.execPath, ['grpc-esm.mjs'], { cwd: project, env });
    assert.deepEqual(first.stdout.trim().split('\n'), ['created']);
    const second = await run(process.execPath, ['grpc-cjs.cjs'], { cwd: project, env });
    assert.deepEqual(second.stdout.trim().split('\n'), ['created', 'GRPC-ESM', 'GRPC-CJS'], 'the process exits by itself once the calls are done');
  });
});
