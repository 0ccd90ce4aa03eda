#!/usr/bin/env node
// Writes the PHP SDK's models, resources and event map from the Merx OpenAPI document.
//
//   node sdks/php/generator/generate.mjs                        # from @merx/contracts (after npm run build)
//   node sdks/php/generator/generate.mjs --from openapi.json    # from a file, or --from http://…/api/v1/openapi.json
//   node sdks/php/generator/generate.mjs --out /tmp/x --namespace Fixture
//
// Everything is read from the document: resources and methods from each operation's operationId
// and security, models from the schemas the answers and webhook payloads use, event classes from
// the top-level `webhooks` section. Nothing here names an operation or a schema.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSdk } from './sdk.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../..');

function parseArgs(argv) {
  const args = { out: path.resolve(here, '../src'), namespace: 'Merx', from: null };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--out') args.out = path.resolve(value);
    else if (flag === '--namespace') args.namespace = value;
    else if (flag === '--from') args.from = value;
    else throw new Error(`unknown option ${flag} (known: --from, --out, --namespace)`);
  }
  return args;
}

async function loadDocument(from) {
  if (from === null) {
    const contracts = path.join(repoRoot, 'shared/contracts/dist/src/index.js');
    const { openApiDocument } = await import(pathToFileURL(contracts).href).catch((error) => {
      throw new Error(`cannot load ${contracts} (run npm run build first): ${error.message}`);
    });
    return JSON.parse(JSON.stringify(openApiDocument));
  }
  if (/^https?:\/\//.test(from)) {
    const response = await fetch(from);
    if (!response.ok) throw new Error(`GET ${from}: ${response.status}`);
    return response.json();
  }
  return JSON.parse(await readFile(from, 'utf8'));
}

const args = parseArgs(process.argv.slice(2));
const files = buildSdk(await loadDocument(args.from), { namespace: args.namespace });
// The generator owns these folders whole: a schema or operation that left the document leaves no file behind.
for (const owned of ['Models', 'Resources', 'Events']) await rm(path.join(args.out, owned), { recursive: true, force: true });
for (const [relative, content] of files) {
  const target = path.join(args.out, relative);
  await mkdir(path.dirname(target), { recursive: true });
  await writeFile(target, content);
}
process.stdout.write(`wrote ${files.size} files under ${args.out}\n`);
