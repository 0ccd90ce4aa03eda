#!/usr/bin/env node
// Writes the Node SDK's generated types and resources (src/generated) from the Merx OpenAPI document.
//
//   node sdks/node/scripts/generate.mjs                      # from @merx/contracts (after npm run build)
//   node sdks/node/scripts/generate.mjs --from openapi.json  # from a file, or --from http://…/api/v1/openapi.json
//   node sdks/node/scripts/generate.mjs --check              # exit 1 when the committed files are stale
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSdk } from './sdk.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../..');
export const generatedDir = path.resolve(here, '../src/generated');

export async function loadDocument(from) {
  if (!from) {
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

/** The generated files that differ from what the document gives: [] when up to date. */
export async function staleFiles(document, dir = generatedDir) {
  const expected = buildSdk(document);
  const present = await readdir(dir).catch(() => []);
  const stale = [];
  for (const [name, content] of expected) {
    const current = await readFile(path.join(dir, name), 'utf8').catch(() => null);
    if (current !== content) stale.push(name);
  }
  for (const name of present) if (!expected.has(name)) stale.push(name);
  return stale.sort();
}

async function main(argv) {
  let from = null;
  let check = false;
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--check') check = true;
    else if (argv[i] === '--from' && argv[i + 1]) from = argv[(i += 1)];
    else throw new Error(`unknown option ${argv[i]} (known: --from FILE|URL, --check)`);
  }
  const document = await loadDocument(from);
  if (check) {
    const stale = await staleFiles(document);
    if (stale.length) {
      process.stderr.write(`the Node SDK is stale against the OpenAPI document (${stale.join(', ')}): run npm run generate -w @merx/sdk\n`);
      process.exit(1);
    }
    process.stdout.write('the Node SDK is up to date with the OpenAPI document\n');
    return;
  }
  const files = buildSdk(document);
  // The generator owns the folder whole: an operation or schema that left the document leaves no file behind.
  await rm(generatedDir, { recursive: true, force: true });
  await mkdir(generatedDir, { recursive: true });
  for (const [name, content] of files) await writeFile(path.join(generatedDir, name), content);
  process.stdout.write(`wrote ${files.size} files under ${path.relative(process.cwd(), generatedDir) || '.'}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
