import assert from 'node:assert/strict';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { openApiDocument, resolvePointer, type OperationObject, type ParameterObject, type Reference } from '@merx/contracts';
import { call, createMerchant, sharedStack, type Stack, type TestMerchant } from '../src/harness/index.js';

/**
 * Every operation of the OpenAPI document, fed generated bad input: wrong types, boundaries,
 * NUL, unpaired surrogates, deep nesting, huge strings, lying encodings, hostile path segments.
 * Whatever the input, the answer is a 4xx (or a success): never a 5xx. The suite walks the
 * document, so an operation added later is fuzzed without anyone listing it here. The inputs
 * come from a seeded generator (MERX_FUZZ_SEED reproduces a run).
 */

interface Case {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  what: string;
}

const SEED = Number(process.env.MERX_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: small, seedable, good enough to pick inputs. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const resolve = <T>(value: T | Reference): T =>
  '$ref' in (value as object) ? (resolvePointer(openApiDocument, (value as Reference).$ref) as T) : (value as T);

/** JSON text with members written as an attacker would: raw escapes JSON.stringify never produces. */
const RAW_STRINGS = ['"\\u0000"', '"\\ud800"', '"x\\udfffy"', '"\\ud83d"', `"${'x'.repeat(200_000)}"`, '""', '" "', '"\\u202e\\u0000"'];
const HOSTILE_VALUES = [
  'null',
  'true',
  '0',
  '-1',
  '1e400',
  '-1e400',
  '1.5',
  '123456789012345678901234567890',
  '[]',
  '{}',
  '[[[[[[[[[[]]]]]]]]]]',
  `[${'1,'.repeat(9_999)}1]`,
  '{"__proto__":{"polluted":true}}',
  ...RAW_STRINGS,
];
const PATH_SEGMENTS = [
  'x',
  'prod_01jd3k7q8m2x4v6b9c0d1e2f3g',
  '%2e%2e',
  '%00',
  '%ED%A0%80',
  '%F0%9F%92%A9',
  'a'.repeat(5_000),
  "'%20OR%201%3D1--",
  '-1',
  '%25',
  '%5C',
  '..%2F..',
];
const QUERY_VALUES = [
  '',
  'x'.repeat(10_000),
  '%00',
  '-1',
  '0',
  '99999999999999999999',
  '1e309',
  'null',
  '%ED%A0%80',
  '0000-01-01T00:00:00Z',
  '2026-02-30T00:00:00Z',
  '%5B%5D',
  'true',
  '%E2%80%AE',
];

function bodyTemplates(operation: OperationObject): Array<{ mediaType: string; value: Record<string, unknown> }> {
  const body = operation.requestBody ? resolve(operation.requestBody) : undefined;
  if (!body) return [];
  return Object.entries(body.content).map(([mediaType, content]) => {
    const example = Object.values(content.examples ?? {})[0] as { value?: unknown } | undefined;
    const value = (example?.value ?? {}) as Record<string, unknown>;
    return { mediaType, value: typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {} };
  });
}

function encodeBody(mediaType: string, json: string): Buffer {
  if (mediaType !== 'application/x-www-form-urlencoded') return Buffer.from(json);
  // A form: every member as a field, hostile JSON text as the field's text.
  const parsed = (() => {
    try {
      return JSON.parse(json) as Record<string, unknown>;
    } catch {
      return { raw: json };
    }
  })();
  const text = (value: unknown): string => {
    try {
      return typeof value === 'string' ? value : String(JSON.stringify(value));
    } catch {
      return json; // nested too deep to write again: send the hostile text itself
    }
  };
  const fields: Array<[string, string]> =
    typeof parsed === 'object' && parsed !== null ? Object.entries(parsed).map(([key, value]) => [key, text(value)]) : [['raw', json]];
  return Buffer.from(new URLSearchParams(fields).toString());
}

function casesOf(path: string, method: string, operation: OperationObject, auth: Record<string, string>, pick: () => number): Case[] {
  const parameters = (operation.parameters ?? []).map((parameter) => resolve<ParameterObject>(parameter));
  const pathNames = parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
  const fill = (segment: string) => pathNames.reduce((filled, name) => filled.replace(`{${name}}`, segment), path);
  const validPath = fill('prod_01jd3k7q8m2x4v6b9c0d1e2f3g');
  const cases: Case[] = [];
  const upper = method.toUpperCase();
  const templates = bodyTemplates(operation);
  const defaultBody = templates[0];
  const bodyHeaders = (mediaType: string) => ({ ...auth, 'content-type': mediaType });
  const base = (what: string, target: string): Case => ({
    method: upper,
    path: target,
    headers: defaultBody ? bodyHeaders(defaultBody.mediaType) : { ...auth },
    ...(defaultBody ? { body: encodeBody(defaultBody.mediaType, JSON.stringify(defaultBody.value)) } : {}),
    what,
  });

  if (pathNames.length > 0) for (const segment of PATH_SEGMENTS) cases.push(base(`path ${segment.slice(0, 20)}`, fill(segment)));
  for (const parameter of parameters.filter((candidate) => candidate.in === 'query')) {
    for (const value of QUERY_VALUES) cases.push(base(`?${parameter.name}=${value.slice(0, 20)}`, `${validPath}?${parameter.name}=${value}`));
    cases.push(base(`?${parameter.name} twice`, `${validPath}?${parameter.name}=1&${parameter.name}=2`));
  }
  cases.push(base('unknown query parameter', `${validPath}?zz_unknown=${'%00'}`));

  for (const { mediaType, value } of templates) {
    const send = (what: string, json: string, extra: Record<string, string> = {}): Case => ({
      method: upper,
      path: validPath,
      headers: { ...bodyHeaders(mediaType), ...extra },
      body: encodeBody(mediaType, json),
      what,
    });
    const members = Object.keys(value);
    for (const member of members) {
      // Each member replaced by a few hostile values (all of them for small bodies), and left out.
      const values = members.length <= 4 ? HOSTILE_VALUES : HOSTILE_VALUES.filter(() => pick() < 0.5);
      for (const hostile of values) {
        const text = JSON.stringify(value).replace(new RegExp(`"${member}":`), `"${member}":${hostile},"${member}_was":`);
        cases.push(send(`${member}=${hostile.slice(0, 24)}`, text));
      }
      const without = { ...value };
      delete without[member];
      cases.push(send(`without ${member}`, JSON.stringify(without)));
    }
    cases.push(send('unknown member', JSON.stringify({ ...value, zz_unknown: 1 })));
    cases.push(send('member name with NUL', `{"a\\u0000b":1,${JSON.stringify(value).slice(1)}`));
    for (const whole of [
      'null',
      '[]',
      '"text"',
      '1',
      '{}',
      'not json',
      '{"a":',
      `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
      `{"x":${'{"x":'.repeat(300)}1${'}'.repeat(301)}`,
    ]) {
      cases.push(send(`body ${whole.slice(0, 16)}`, whole));
    }
    cases.push(send('gzip that is not', JSON.stringify(value), { 'content-encoding': 'gzip' }));
    cases.push({
      method: upper,
      path: validPath,
      headers: { ...bodyHeaders(mediaType), 'content-encoding': 'gzip' },
      body: gzipSync(Buffer.from('{"truncated":')),
      what: 'gzip of broken JSON',
    });
    cases.push({ method: upper, path: validPath, headers: { ...auth, 'content-type': 'text/plain' }, body: Buffer.from('x'), what: 'text/plain body' });
    cases.push({
      method: upper,
      path: validPath,
      headers: { ...bodyHeaders(mediaType), 'content-type': `${mediaType}; charset=utf-16` },
      body: Buffer.from('{}'),
      what: 'another charset',
    });
  }
  return cases;
}

function send(stack: Stack, fuzzCase: Case): Promise<{ status: number; text: string }> {
  const origin = new URL(stack.baseUrl);
  return new Promise((resolveAnswer, reject) => {
    const sent = request(
      {
        host: '127.0.0.1',
        port: origin.port,
        method: fuzzCase.method,
        path: fuzzCase.path,
        headers: { host: origin.host, ...fuzzCase.headers, ...(fuzzCase.body ? { 'content-length': String(fuzzCase.body.length) } : {}) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk.length > 0 && text.length < 2_000 ? chunk : ''));
        response.on('end', () => resolveAnswer({ status: response.statusCode ?? 0, text }));
      },
    );
    sent.on('error', reject);
    sent.end(fuzzCase.body);
  });
}

describe('every operation of the OpenAPI document, fuzzed: bad input never gets a 5xx', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
    merchant = await createMerchant(stack);
    // Room for thousands of requests in a minute: the fuzzer must meet the code, not the throttle.
    const roomy = {
      burst: { capacity: 1_000_000, refill_per_second: 1_000_000 },
      sustained: { limit: 1_000_000_000, window_seconds: 60 },
      writes: { capacity: 1_000_000, refill_per_second: 1_000_000 },
      sensitive: { limit: 1_000_000, window_seconds: 60 },
    };
    const set = await call(stack, 'PUT', `/admin/v1/merchants/${merchant.merchantId}/throttle`, {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
      body: roomy,
    });
    assert.equal(set.status, 200, set.text);
  });

  it(`answers every generated bad input of every operation with no 5xx (seed ${SEED})`, async function () {
    this.timeout(600_000);
    const pick = random(SEED);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    for (const [path, item] of Object.entries(openApiDocument.paths)) {
      for (const [method, operation] of Object.entries(item) as Array<[string, OperationObject]>) {
        if (!operation || typeof operation !== 'object' || !('responses' in operation)) continue;
        // Rotating the signing keys over and over proves nothing about input and slows every verifier.
        if (operation.operationId === 'signing_keys.admin.rotate') continue;
        const security = Object.keys(operation.security?.[0] ?? {})[0];
        const auth: Record<string, string> =
          security === 'operator'
            ? { authorization: `Bearer ${stack.operatorToken}` }
            : security === 'oauth2'
              ? { authorization: `Bearer ${merchant.token}` }
              : {};
        for (const fuzzCase of casesOf(path, method, operation, auth, pick)) {
          const answer = await send(stack, fuzzCase);
          sent += 1;
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status >= 500)
            failures.push(
              `${operation.operationId} ${fuzzCase.what} (${fuzzCase.method} ${fuzzCase.path.slice(0, 120)}) → ${answer.status} ${answer.text.slice(0, 200)}`,
            );
          else if (answer.status >= 400 && !/^\s*\{/.test(answer.text) && !path.startsWith('/oauth'))
            failures.push(`${operation.operationId} ${fuzzCase.what} → ${answer.status} without a problem document: ${answer.text.slice(0, 120)}`);
        }
      }
    }
    assert.ok(sent > 1_000, `only ${sent} inputs were generated`);
    const histogram = [...statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}×${count}`)
      .join(' ');
    // The inputs reached the code behind the edge: some were accepted, most refused field by field.
    for (const status of [200, 201, 400, 404, 422]) assert.ok(statuses.has(status), `no ${status} among ${histogram}`);
    assert.deepEqual(failures, [], `seed ${SEED}: ${failures.length} of ${sent} inputs got a 5xx or no problem document (${histogram})`);
    console.log(`      fuzzed ${sent} inputs, seed ${SEED}: ${histogram}`);
  });
});
