import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { merxServer, packageRoot } from './support/server.js';

interface GeneratorModule {
  staleFiles(document: unknown, dir?: string): Promise<string[]>;
}
interface SdkModule {
  buildSdk(document: unknown): Map<string, string>;
}

const generator = (): Promise<GeneratorModule> => import(pathToFileURL(path.join(packageRoot, 'scripts/generate.mjs')).href) as Promise<GeneratorModule>;
const sdk = (): Promise<SdkModule> => import(pathToFileURL(path.join(packageRoot, 'scripts/sdk.mjs')).href) as Promise<SdkModule>;

describe('the generated code is current with the OpenAPI document', function () {
  this.timeout(200_000);

  it('the committed src/generated matches the document the server serves', async () => {
    const server = await merxServer();
    const document = await (await fetch(`${server.baseUrl}/api/v1/openapi.json`)).json();
    assert.deepEqual(await (await generator()).staleFiles(document), [], 'regenerate: npm run generate -w @merx/sdk');
  });

  it('--check passes on the committed files and fails on a document with one more operation', async () => {
    const check = spawnSync(process.execPath, ['scripts/generate.mjs', '--check'], { cwd: packageRoot, encoding: 'utf8' });
    assert.equal(check.status, 0, check.stderr);
    const server = await merxServer();
    const document = (await (await fetch(`${server.baseUrl}/api/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    document.paths['/api/v1/widgets'] = { get: { operationId: 'widgets.list', responses: { 200: { description: 'ok' } } } };
    const stale = await (await generator()).staleFiles(document);
    assert.ok(stale.includes('resources.ts') && stale.includes('operations.ts'), stale.join(', '));
  });

  it('is deterministic and names nothing by hand', async () => {
    const document = JSON.parse(JSON.stringify(await (await fetch(`${(await merxServer()).baseUrl}/api/v1/openapi.json`)).json()));
    const { buildSdk } = await sdk();
    assert.deepEqual([...buildSdk(document)], [...buildSdk(JSON.parse(JSON.stringify(document)))]);
    const source = readFileSync(path.join(packageRoot, 'scripts/sdk.mjs'), 'utf8');
    assert.ok(!/products|destinations|ProductCreate/.test(source), 'the generator names no operation or schema');
  });
});
