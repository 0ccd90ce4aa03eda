import assert from 'node:assert/strict';
import Router from '@koa/router';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { request } from 'undici';
import {
  authenticate,
  authOf,
  Conflict,
  createServiceApp,
  createTokenVerifier,
  currentContext,
  isId,
  listen,
  MAX_BODY_BYTES,
  mountRouter,
  newId,
  requestBody,
  requireScope,
  ValidationFailed,
  type RunningServer,
} from '../src/index.js';
import { silentLogger } from './support.js';

const ISSUER = 'http://localhost:8080/oauth';
const AUDIENCE = 'urn:merx:api';
const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown>;
}

describe('createServiceApp over HTTP', () => {
  let server: RunningServer;
  let signingKey: CryptoKey;
  let readinessFails = false;

  async function call(method: string, path: string, options: { headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Answer> {
    const response = await request(`${server.url}${path}`, { method: method as 'GET', headers: options.headers, body: options.body });
    const text = await response.body.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      /* not every answer is JSON */
    }
    return { status: response.statusCode, headers: response.headers, text, json };
  }

  function assertProblem(answer: Answer, status: number, code: string): void {
    assert.equal(answer.status, status, answer.text);
    assert.match(String(answer.headers['content-type']), /^application\/problem\+json(;|$)/);
    assert.equal(answer.json.type, `https://merx.dev/errors/${code}`);
    assert.equal(answer.json.status, status);
    assert.equal(answer.json.code, code);
    assert.equal(typeof answer.json.title, 'string');
    assert.equal(typeof answer.json.detail, 'string');
    assert.ok(isId(answer.headers['x-request-id'], 'req'));
    assert.equal(answer.json.request_id, answer.headers['x-request-id']);
  }

  async function token(claims: Record<string, unknown>): Promise<string> {
    return new SignJWT({ merchant_id: MERCHANT, client_id: 'mx_test_4fJk2LmN8pQr', ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('15m')
      .sign(signingKey);
  }

  before(async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    signingKey = privateKey;
    const verifier = createTokenVerifier(createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] }), {
      issuer: ISSUER,
      audience: AUDIENCE,
    });

    const open = new Router();
    open.get('/things', (ctx) => {
      ctx.body = { request_id: currentContext()?.requestId };
    });
    open.post('/things', (ctx) => {
      ctx.status = 201;
      ctx.body = { received: requestBody(ctx) ?? null };
    });
    open.delete('/things/:id', (ctx) => {
      ctx.status = 204;
    });
    open.get('/boom', () => {
      throw new Error('database password is hunter2');
    });
    open.get('/invalid', () => {
      throw new ValidationFailed([{ field: 'sku', code: 'required', message: 'sku is required' }]);
    });
    open.get('/conflict', () => {
      throw new Conflict('Version mismatch.', { current_version: 3 });
    });

    const secured = new Router({ prefix: '/secured' });
    secured.use(authenticate(verifier));
    secured.get('/whoami', requireScope('products:read'), (ctx) => {
      const auth = authOf(ctx);
      ctx.body = { merchant_id: auth.merchantId, actor: auth.actor, context_merchant: currentContext()?.merchantId };
    });
    secured.post('/products', requireScope('products:write'), (ctx) => {
      ctx.status = 201;
      ctx.body = {};
    });

    const app = createServiceApp({
      service: 'kit-test',
      logger: silentLogger,
      readiness: [{ name: 'database', check: () => (readinessFails ? Promise.reject(new Error('connection refused')) : undefined) }],
      routes(routesApp) {
        mountRouter(routesApp, open);
        mountRouter(routesApp, secured);
      },
    });
    server = await listen(app, 0);
  });

  after(async () => {
    await server.close();
  });

  it('answers an unknown route with a 404 problem carrying the request id', async () => {
    const answer = await call('GET', '/nowhere');
    assertProblem(answer, 404, 'not_found');
    assert.equal(answer.json.title, 'Not found');
  });

  it('keeps a valid incoming request id and replaces junk', async () => {
    const incoming = newId('req');
    const kept = await call('GET', '/things', { headers: { 'x-request-id': incoming } });
    assert.equal(kept.status, 200);
    assert.equal(kept.headers['x-request-id'], incoming);
    assert.equal(kept.json.request_id, incoming, 'the handler runs inside the request context');

    const keptOnProblem = await call('GET', '/nowhere', { headers: { 'x-request-id': incoming } });
    assert.equal(keptOnProblem.json.request_id, incoming);

    for (const junk of ['hello', 'req_short', `prod_${incoming.slice(4)}`, incoming.toUpperCase()]) {
      const replaced = await call('GET', '/things', { headers: { 'x-request-id': junk } });
      const id = replaced.headers['x-request-id'];
      assert.ok(isId(id, 'req'), String(id));
      assert.notEqual(id, junk);
      assert.equal(replaced.json.request_id, id);
    }
    const fresh = await call('GET', '/things');
    assert.ok(isId(fresh.headers['x-request-id'], 'req'));
  });

  it('refuses a body that is not JSON with 415 before reading it', async () => {
    const answer = await call('POST', '/things', { headers: { 'content-type': 'text/plain' }, body: 'hello' });
    assertProblem(answer, 415, 'unsupported_media_type');
  });

  it('refuses a body over 1 MiB with 413', async () => {
    const body = JSON.stringify({ blob: 'x'.repeat(MAX_BODY_BYTES) });
    const answer = await call('POST', '/things', { headers: { 'content-type': 'application/json' }, body });
    assertProblem(answer, 413, 'payload_too_large');
  });

  it('accepts a JSON body just under the limit', async () => {
    const body = JSON.stringify({ blob: 'x'.repeat(MAX_BODY_BYTES - 100) });
    const answer = await call('POST', '/things', { headers: { 'content-type': 'application/json' }, body });
    assert.equal(answer.status, 201);
    assert.equal((answer.json.received as { blob: string }).blob.length, MAX_BODY_BYTES - 100);
  });

  it('answers malformed JSON with 400', async () => {
    const answer = await call('POST', '/things', { headers: { 'content-type': 'application/json' }, body: '{"title": ' });
    assertProblem(answer, 400, 'malformed_request');
  });

  it('parses JSON bodies, including +json media types, and tolerates no body', async () => {
    const json = await call('POST', '/things', { headers: { 'content-type': 'application/json' }, body: '{"title":"Shirt"}' });
    assert.equal(json.status, 201);
    assert.deepEqual(json.json.received, { title: 'Shirt' });
    const merge = await call('POST', '/things', { headers: { 'content-type': 'application/merge-patch+json' }, body: '{"a":1}' });
    assert.deepEqual(merge.json.received, { a: 1 });
    const empty = await call('POST', '/things');
    assert.equal(empty.status, 201);
    assert.equal(empty.json.received, null);
  });

  describe('bodies and targets no storage could hold, and encodings that lie', () => {
    const json = { 'content-type': 'application/json' };
    const post = (body: string | Buffer, headers: Record<string, string> = {}) => call('POST', '/things', { headers: { ...json, ...headers }, body });

    it('takes gzip, deflate and br bodies, and refuses bodies that are not what their Content-Encoding says with 400', async () => {
      const { gzipSync, deflateSync, brotliCompressSync } = await import('node:zlib');
      const document = Buffer.from(JSON.stringify({ sku: 'ZIP-1' }));
      for (const [encoding, compress] of [
        ['gzip', gzipSync],
        ['deflate', deflateSync],
        ['br', brotliCompressSync],
      ] as const) {
        const accepted = await post(compress(document), { 'content-encoding': encoding });
        assert.equal(accepted.status, 201, accepted.text);
        assert.deepEqual(accepted.json.received, { sku: 'ZIP-1' });
        assertProblem(await post(document, { 'content-encoding': encoding }), 400, 'malformed_request');
      }
      assertProblem(await post(document, { 'content-encoding': 'zstd' }), 415, 'unsupported_media_type');
    });

    it('refuses a compressed body that grows past 1 MiB with 413', async () => {
      const { gzipSync } = await import('node:zlib');
      const bomb = gzipSync(Buffer.from(`{"pad":"${'a'.repeat(2 * MAX_BODY_BYTES)}"}`));
      assert.ok(bomb.length < 10_000);
      assertProblem(await post(bomb, { 'content-encoding': 'gzip' }), 413, 'payload_too_large');
    });

    it('refuses JSON nested deeper than 64 levels with 400, without running out of stack', async () => {
      assertProblem(await post(`${'['.repeat(10_000)}${']'.repeat(10_000)}`), 400, 'malformed_request');
      assertProblem(await post(`{"a":${'{"a":'.repeat(9_999)}1${'}'.repeat(10_000)}`), 400, 'malformed_request');
      assert.equal((await post(`${'['.repeat(64)}${']'.repeat(64)}`)).status, 201);
      assert.equal((await post(JSON.stringify({ text: '[[[[[[[[[['.repeat(100) }))).status, 201, 'brackets inside strings do not count');
    });

    it('refuses NUL and unpaired surrogates anywhere in the body with 422 naming the field', async () => {
      const nul = await post('{"title":"a\\u0000b"}');
      assertProblem(nul, 422, 'validation_failed');
      assert.deepEqual(
        (nul.json.errors as Array<{ field: string; code: string }>).map((error) => [error.field, error.code]),
        [['title', 'invalid_string']],
      );
      const surrogate = await post('{"owner":{"names":["ok","x\\ud800"]},"x\\udc00":1}');
      assertProblem(surrogate, 422, 'validation_failed');
      assert.deepEqual((surrogate.json.errors as Array<{ field: string }>).map((error) => error.field).sort(), ['owner.names[1]', '["x\\udc00"]'].sort());
      assert.equal((await post('{"emoji":"\\ud83d\\ude00"}')).status, 201, 'a surrogate pair is fine');
    });

    it('refuses bodies that are not UTF-8, or say another charset', async () => {
      assertProblem(await post(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), 400, 'malformed_request');
      assertProblem(await post('{"a":1}', { 'content-type': 'application/json; charset=latin1' }), 415, 'unsupported_media_type');
    });

    it('refuses NUL and broken escapes in the query and the path', async () => {
      const query = await call('GET', '/things?sku=%00');
      assertProblem(query, 422, 'validation_failed');
      assert.equal((query.json.errors as Array<{ field: string }>)[0]!.field, 'sku');
      assertProblem(await call('DELETE', '/things/prod_%00'), 400, 'malformed_request');
      assertProblem(await call('DELETE', '/things/prod_%E0%A4'), 400, 'malformed_request');
    });
  });

  it('answers a known route with the wrong method with 405 and an Allow header', async () => {
    const answer = await call('PUT', '/things');
    assertProblem(answer, 405, 'method_not_allowed');
    const allow = String(answer.headers.allow ?? '')
      .split(/,\s*/)
      .filter(Boolean)
      .sort();
    assert.deepEqual(allow, ['GET', 'HEAD', 'POST']);
    assert.match(String(answer.json.detail), /GET/);

    const other = await call('PATCH', `/things/${newId('prod')}`);
    assertProblem(other, 405, 'method_not_allowed');
    assert.equal(other.headers.allow, 'DELETE');
  });

  it('answers a thrown plain Error with a 500 that reveals nothing but an error id', async () => {
    const answer = await call('GET', '/boom');
    assertProblem(answer, 500, 'internal');
    assert.doesNotMatch(answer.text, /hunter2|stack|at .*\.js/);
    assert.equal('stack' in answer.json, false);
    const errorId = answer.json.error_id;
    assert.ok(isId(errorId, 'err'), String(errorId));
    assert.equal(answer.json.detail, `An internal error occurred. Reference: ${String(errorId)}.`);
  });

  it('renders field errors and extensions of 4xx errors', async () => {
    const invalid = await call('GET', '/invalid');
    assertProblem(invalid, 422, 'validation_failed');
    assert.deepEqual(invalid.json.errors, [{ field: 'sku', code: 'required', message: 'sku is required' }]);
    const conflict = await call('GET', '/conflict');
    assertProblem(conflict, 409, 'conflict');
    assert.equal(conflict.json.current_version, 3);
    assert.equal(conflict.json.detail, 'Version mismatch.');
  });

  it('serves liveness and a status-only readiness, and no metrics, on the public port', async () => {
    const health = await call('GET', '/healthz');
    assert.deepEqual([health.status, health.json], [200, { status: 'ok' }]);
    const ready = await call('GET', '/readyz');
    assert.deepEqual([ready.status, ready.json], [200, { status: 'ready' }]);
    readinessFails = true;
    try {
      // Which dependency failed, and its error message, are for the admin port only.
      const notReady = await call('GET', '/readyz');
      assert.deepEqual([notReady.status, notReady.json], [503, { status: 'not_ready' }]);
      assert.doesNotMatch(notReady.text, /connection refused|database/);
    } finally {
      readinessFails = false;
    }
    assertProblem(await call('GET', '/metrics'), 404, 'not_found');
  });

  describe('authenticate', () => {
    it('answers a missing token with 401 and WWW-Authenticate invalid_token', async () => {
      const answer = await call('GET', '/secured/whoami');
      assertProblem(answer, 401, 'unauthenticated');
      assert.match(String(answer.headers['www-authenticate']), /^Bearer error="invalid_token"/);
    });

    it('answers a bad token with 401 and WWW-Authenticate invalid_token', async () => {
      const answer = await call('GET', '/secured/whoami', { headers: { authorization: 'Bearer not.a.token' } });
      assertProblem(answer, 401, 'unauthenticated');
      assert.match(String(answer.headers['www-authenticate']), /^Bearer error="invalid_token", error_description="/);
    });

    it('answers a malformed Authorization header with invalid_request', async () => {
      const answer = await call('GET', '/secured/whoami', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
      assertProblem(answer, 401, 'unauthenticated');
      assert.match(String(answer.headers['www-authenticate']), /^Bearer error="invalid_request"/);
    });

    it('lets a valid token in and opens the merchant context', async () => {
      const answer = await call('GET', '/secured/whoami', { headers: { authorization: `Bearer ${await token({ scope: 'products:read' })}` } });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json, { merchant_id: MERCHANT, actor: { type: 'api_key', id: 'mx_test_4fJk2LmN8pQr' }, context_merchant: MERCHANT });
    });

    it('answers a missing scope with 403 naming the scope', async () => {
      const answer = await call('POST', '/secured/products', {
        headers: { authorization: `Bearer ${await token({ scope: 'products:read' })}`, 'content-type': 'application/json' },
        body: '{}',
      });
      assertProblem(answer, 403, 'insufficient_scope');
      assert.equal(answer.json.required_scope, 'products:write');
      assert.equal(answer.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="products:write"');
    });
  });
});
