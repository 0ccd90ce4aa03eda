#!/usr/bin/env node
// Writes src/generated/fields.ts: for each operation of the Merx OpenAPI document, the fields its
// command takes as flags (body members or query parameters) with their type, whether required,
// their allowed values and their description. The Node SDK's OPERATIONS says how to call each
// operation; this says what to ask for, so `merx <resource> <verb> --help` and the flags come
// from the same document the API is checked against.
//
//   node scripts/generate.mjs                      # from @merx/contracts (after npm run build)
//   node scripts/generate.mjs --from openapi.json  # a file, or --from http://…/api/v1/openapi.json
//   node scripts/generate.mjs --check              # exit 1 when the committed file is stale
//   node scripts/generate.mjs --if-stale-warn      # the build: say so when stale, never fail it
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../..');
export const generatedFile = path.resolve(here, '../src/generated/fields.ts');

export async function loadDocument(from) {
  if (!from) {
    const contracts = path.join(repoRoot, 'shared/contracts/dist/src/index.js');
    const { openApiDocument } = await import(pathToFileURL(contracts).href);
    return JSON.parse(JSON.stringify(openApiDocument));
  }
  if (/^https?:\/\//.test(from)) {
    const response = await fetch(from);
    if (!response.ok) throw new Error(`GET ${from}: ${response.status}`);
    return response.json();
  }
  return JSON.parse(await readFile(from, 'utf8'));
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
// Sent by the CLI itself (pagination has its own flags, the headers are request options).
const HANDLED_ELSEWHERE = new Set(['cursor', 'Idempotency-Key', 'If-Match']);

function resolver(document) {
  const resolve = (node) => {
    let current = node;
    while (current && typeof current.$ref === 'string') {
      current = current.$ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((at, key) => at?.[key], document);
    }
    return current ?? {};
  };
  return resolve;
}

function firstSentence(text) {
  if (typeof text !== 'string') return undefined;
  const flat = text.replace(/\s+/g, ' ').trim();
  const end = flat.search(/\.(\s|$)/);
  return end < 0 ? flat : flat.slice(0, end + 1);
}

function kindOf(schema, resolve) {
  const types = [schema.type].flat().filter((type) => type && type !== 'null');
  if (types.length === 0 && (schema.oneOf || schema.anyOf || schema.allOf)) return 'json';
  const [type] = types;
  if (type === 'array') {
    const items = resolve(schema.items ?? {});
    return ['string', 'integer', 'number'].includes([items.type].flat()[0]) ? 'list' : 'json';
  }
  if (type === 'object') return 'json';
  if (type === 'integer' || type === 'number' || type === 'boolean' || type === 'string') return type;
  return 'json';
}

/** Members of an object schema, through allOf (merged) and oneOf/anyOf (each variant's, none required). */
function membersOf(schema, resolve) {
  const resolved = resolve(schema);
  const members = new Map();
  const required = new Set(resolved.required ?? []);
  for (const [name, member] of Object.entries(resolved.properties ?? {})) members.set(name, resolve(member));
  for (const part of resolved.allOf ?? []) {
    const inner = membersOf(part, resolve);
    for (const [name, member] of inner.members) if (!members.has(name)) members.set(name, member);
    for (const name of inner.required) required.add(name);
  }
  for (const part of [...(resolved.oneOf ?? []), ...(resolved.anyOf ?? [])]) {
    for (const [name, member] of membersOf(part, resolve).members) if (!members.has(name)) members.set(name, member);
  }
  return { members, required };
}

function fieldOf(name, schema, required, resolve, description) {
  const itemEnum = schema.type === 'array' ? resolve(schema.items ?? {}).enum : undefined;
  const values = schema.enum ?? (schema.const !== undefined ? [schema.const] : itemEnum);
  const field = { name, kind: kindOf(schema, resolve), required };
  if (values) field.values = values.filter((value) => value !== null).map(String);
  const text = firstSentence(description ?? schema.description);
  if (text) field.description = text;
  return field;
}

export function buildFields(document) {
  const resolve = resolver(document);
  const operations = [];
  for (const [route, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation?.operationId) continue;
      const fields = [];
      const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(resolve);
      for (const parameter of parameters) {
        if (parameter.in !== 'query' || HANDLED_ELSEWHERE.has(parameter.name)) continue;
        fields.push(fieldOf(parameter.name, resolve(parameter.schema ?? {}), Boolean(parameter.required), resolve, parameter.description));
      }
      const content = operation.requestBody?.content ?? {};
      const bodySchema = (content['application/json'] ?? content['application/x-www-form-urlencoded'])?.schema;
      if (bodySchema) {
        const { members, required } = membersOf(bodySchema, resolve);
        for (const [name, member] of members) fields.push(fieldOf(name, member, required.has(name), resolve));
      }
      const summary = firstSentence(operation.summary ?? operation.description);
      operations.push({ operationId: operation.operationId, method: method.toUpperCase(), path: route, ...(summary ? { summary } : {}), fields });
    }
  }
  return operations.sort((a, b) => a.operationId.localeCompare(b.operationId));
}

export function renderFields(document) {
  const operations = buildFields(document);
  const lines = operations.map((operation) => `  ${JSON.stringify(operation)},`);
  return `// Generated by sdks/cli/scripts/generate.mjs from the Merx OpenAPI document. Do not edit: run \`npm run generate -w @merx/cli\`.

/** What a command's flags may carry: \`list\` takes several values (repeated or comma-separated), \`json\` a JSON text. */
export type FieldKind = 'string' | 'integer' | 'number' | 'boolean' | 'list' | 'json';

export interface FieldSpec {
  /** The field's name on the wire (snake_case); its flag is the kebab-case of it. */
  name: string;
  kind: FieldKind;
  required: boolean;
  values?: readonly string[];
  description?: string;
}

export interface OperationFields {
  operationId: string;
  method: string;
  path: string;
  summary?: string;
  fields: readonly FieldSpec[];
}

export const OPERATION_FIELDS: readonly OperationFields[] = [
${lines.join('\n')}
];
`;
}

async function main(argv) {
  let from = null;
  let mode = 'write';
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--check') mode = 'check';
    else if (argv[i] === '--if-stale-warn') mode = 'warn';
    else if (argv[i] === '--from' && argv[i + 1]) from = argv[(i += 1)];
    else throw new Error(`unknown option ${argv[i]} (known: --from FILE|URL, --check, --if-stale-warn)`);
  }
  const expected = renderFields(await loadDocument(from));
  const current = await readFile(generatedFile, 'utf8').catch(() => null);
  if (mode !== 'write') {
    if (current === expected) return;
    process.stderr.write(`src/generated/fields.ts is stale against the OpenAPI document: run npm run generate -w @merx/cli\n`);
    if (mode === 'check') process.exit(1);
    return;
  }
  await mkdir(path.dirname(generatedFile), { recursive: true });
  await writeFile(generatedFile, expected);
  process.stdout.write(`wrote ${path.relative(process.cwd(), generatedFile)}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
