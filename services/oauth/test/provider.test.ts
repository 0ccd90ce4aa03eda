import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { PGlite } from '@electric-sql/pglite';
import { createPgliteDb, createPostgresDb, type Db } from '@merx/kit';
import {
  createPostgresAdapterFactory,
  createProvider,
  deleteExpiredOidcPayloads,
  generateApiKey,
  generateSigningJwk,
  hashApiKey,
  mountProvider,
  oidcMigrationSqlFor,
  type ApiKeyClient,
  type TokenIssued,
} from '../src/provider/index.js';

const DATABASE_URL = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
const ISSUER = 'http://localhost:8080/oauth';
const AUDIENCE = 'urn:merx:api';
const TTL = 900;
const BROKEN_STORE_CLIENT = 'mx_test_BrokenBrokenBrok';
const REQUEST_ID = 'req_01jd3k0000000000000000test';
const FORWARDED = { 'x-forwarded-host': 'localhost:8080', 'x-forwarded-proto': 'http' };

interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Headers;
}

describe('oauth provider (client credentials for API keys)', () => {
  const schema = `oidc_test_${randomBytes(6).toString('hex')}`;
  const clients = new Map<string, ApiKeyClient>();
  const issued: TokenIssued[] = [];
  const errorBodies: string[] = [];
  const statusesSeenByApp: number[] = [];
  let db: Db;
  let server: Server;
  let baseUrl: string;

  function addKey(scopes: string[], overrides: Partial<ApiKeyClient> = {}): { clientId: string; apiKey: string; merchantId: string } {
    const key = generateApiKey('test');
    const merchantId = `mch_${randomBytes(13).toString('hex')}`;
    clients.set(key.clientId, {
      clientId: key.clientId,
      secretHash: hashApiKey(key.apiKey),
      merchantId,
      scopes,
      status: 'active',
      merchantStatus: 'active',
      ...overrides,
    });
    return { clientId: key.clientId, apiKey: key.apiKey, merchantId };
  }

  async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<TokenAnswer> {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...FORWARDED, ...headers },
      body,
    });
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // Left empty: the assertions on `body` then fail with the raw text shown.
    }
    if (response.status >= 400) errorBodies.push(text);
    return { status: response.status, body: parsed, text, headers: response.headers };
  }

  function basic(clientId: string, secret: string): Record<string, string> {
    return { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` };
  }

  async function tokenWithBasic(clientId: string, apiKey: string, extra = ''): Promise<TokenAnswer> {
    return post('/oauth/token', `grant_type=client_credentials${extra}`, basic(clientId, apiKey));
  }

  before(async () => {
    db = createPostgresDb(DATABASE_URL, { maxConnections: 4, applicationName: 'oauth-provider-test' });
    await db.query(`CREATE SCHEMA ${schema}`);
    await db.exec(oidcMigrationSqlFor(schema));

    const provider = createProvider({
      issuer: ISSUER,
      audience: AUDIENCE,
      accessTokenTtlSeconds: TTL,
      cookieKeys: [randomBytes(32).toString('base64url')],
      jwks: { keys: [await generateSigningJwk()] },
      db,
      schema,
      findApiKeyClient: async (clientId) => {
        if (clientId === BROKEN_STORE_CLIENT) throw new Error('key store unreachable at db.internal:5432');
        return clients.get(clientId);
      },
      onTokenIssued: (info) => {
        issued.push(info);
      },
    });
    const app = new Koa();
    // Stands in for the kit's request context middleware, which runs before the mount.
    app.use(async (ctx, next) => {
      ctx.set('X-Request-Id', REQUEST_ID);
      await next();
      statusesSeenByApp.push(ctx.status);
    });
    mountProvider(app, provider);
    // Stands in for the service's own routes and 404 handling behind the mount.
    app.use((ctx) => {
      ctx.status = 404;
      ctx.body = { fell_through: ctx.path };
    });
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    if (db) {
      await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await db.close();
    }
  });

  describe('token endpoint', () => {
    it('issues a JWT for client_secret_basic that verifies against /oauth/jwks', async () => {
      const { clientId, apiKey, merchantId } = addKey(['products:read', 'products:write']);
      const answer = await tokenWithBasic(clientId, apiKey);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.token_type, 'Bearer');
      assert.equal(answer.body.expires_in, TTL);
      assert.equal(answer.body.scope, 'products:read products:write');
      assert.equal(answer.headers.get('cache-control'), 'no-store');

      const jwks = createRemoteJWKSet(new URL(`${baseUrl}/oauth/jwks`));
      const { payload, protectedHeader } = await jwtVerify(String(answer.body.access_token), jwks, {
        issuer: ISSUER,
        audience: AUDIENCE,
        typ: 'at+jwt',
      });
      assert.equal(protectedHeader.alg, 'ES256');
      assert.equal(payload.merchant_id, merchantId);
      assert.equal(payload.client_id, clientId);
      assert.equal(payload.scope, 'products:read products:write');
      assert.equal(payload.sub, clientId);
      assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), TTL);
      assert.deepEqual(issued.at(-1), { clientId, merchantId, scope: 'products:read products:write' });
    });

    it('accepts client_secret_post', async () => {
      const { clientId, apiKey, merchantId } = addKey(['products:read']);
      const answer = await post(
        '/oauth/token',
        new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: apiKey }).toString(),
      );
      assert.equal(answer.status, 200, answer.text);
      const jwks = createRemoteJWKSet(new URL(`${baseUrl}/oauth/jwks`));
      const { payload } = await jwtVerify(String(answer.body.access_token), jwks, { issuer: ISSUER, audience: AUDIENCE });
      assert.equal(payload.merchant_id, merchantId);
      assert.equal(payload.scope, 'products:read');
    });

    it('grants every scope of the key when scope is omitted', async () => {
      const scopes = ['merchant:read', 'products:read', 'products:write', 'webhooks:read', 'sandbox:reset'];
      const { clientId, apiKey } = addKey(scopes);
      const answer = await tokenWithBasic(clientId, apiKey);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(String(answer.body.scope).split(' ').sort(), [...scopes].sort());
    });

    it('grants a requested subset of the key scopes', async () => {
      const { clientId, apiKey } = addKey(['products:read', 'products:write', 'audit:read']);
      const answer = await tokenWithBasic(clientId, apiKey, '&scope=products%3Aread%20audit%3Aread');
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.scope, 'products:read audit:read');
      const header = decodeProtectedHeader(String(answer.body.access_token));
      assert.equal(header.typ, 'at+jwt');
    });

    it('answers invalid_scope for a scope the key does not hold, or one that does not exist', async () => {
      const { clientId, apiKey } = addKey(['products:read']);
      for (const scope of ['products:write', 'products:read products:write', 'openid', 'no:such']) {
        const answer = await tokenWithBasic(clientId, apiKey, `&scope=${encodeURIComponent(scope)}`);
        assert.equal(answer.status, 400, `${scope}: ${answer.text}`);
        assert.equal(answer.body.error, 'invalid_scope', scope);
      }
    });

    it('answers invalid_client with 401 for a wrong secret', async () => {
      const { clientId } = addKey(['products:read']);
      const other = generateApiKey('test');
      const sameIdWrongSecret = `${clientId}_${other.apiKey.slice(-32)}`;
      for (const secret of [sameIdWrongSecret, other.apiKey, 'nope']) {
        const answer = await tokenWithBasic(clientId, secret);
        assert.equal(answer.status, 401, answer.text);
        assert.equal(answer.body.error, 'invalid_client');
        assert.match(answer.headers.get('www-authenticate') ?? '', /^Basic /);
      }
    });

    it('answers invalid_client with 401 for an unknown client', async () => {
      const stranger = generateApiKey('live');
      for (const clientId of [stranger.clientId, 'not-an-api-key']) {
        const answer = await tokenWithBasic(clientId, stranger.apiKey);
        assert.equal(answer.status, 401, answer.text);
        assert.equal(answer.body.error, 'invalid_client');
      }
    });

    it('answers invalid_client for a revoked key and for a suspended merchant', async () => {
      const revoked = addKey(['products:read'], { status: 'revoked' });
      const suspended = addKey(['products:read'], { merchantStatus: 'suspended' });
      for (const { clientId, apiKey } of [revoked, suspended]) {
        const answer = await tokenWithBasic(clientId, apiKey);
        assert.equal(answer.status, 401, answer.text);
        assert.equal(answer.body.error, 'invalid_client');
      }
    });

    it('stops accepting a key as soon as the store revokes it', async () => {
      const { clientId, apiKey } = addKey(['products:read']);
      assert.equal((await tokenWithBasic(clientId, apiKey)).status, 200);
      clients.set(clientId, { ...clients.get(clientId)!, status: 'revoked' });
      const answer = await tokenWithBasic(clientId, apiKey);
      assert.equal(answer.status, 401, answer.text);
      assert.equal(answer.body.error, 'invalid_client');
    });

    it('answers 400 for grant types an API key may not use', async () => {
      const { clientId, apiKey } = addKey(['products:read']);
      const answer = await post('/oauth/token', 'grant_type=password', basic(clientId, apiKey));
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error, 'unsupported_grant_type');
      // Apps use these; an API key client is not registered for them (oidc-provider 8 calls that invalid_request).
      for (const grantType of ['authorization_code', 'refresh_token']) {
        const refused = await post('/oauth/token', `grant_type=${grantType}`, basic(clientId, apiKey));
        assert.equal(refused.status, 400, refused.text);
        assert.equal(refused.body.error, 'invalid_request', grantType);
        assert.equal(refused.body.error_description, 'requested grant type is not allowed for this client');
      }
    });

    it('answers 400 invalid_request for malformed requests', async () => {
      const { clientId, apiKey } = addKey(['products:read']);
      const cases: Array<[string, string, Record<string, string>]> = [
        ['json body', '{"grant_type":"client_credentials"}', { ...basic(clientId, apiKey), 'content-type': 'application/json' }],
        ['missing grant_type', 'scope=products%3Aread', basic(clientId, apiKey)],
        ['duplicated grant_type', 'grant_type=client_credentials&grant_type=client_credentials', basic(clientId, apiKey)],
        ['no client authentication', 'grant_type=client_credentials', {}],
        ['broken basic header', 'grant_type=client_credentials', { authorization: 'Basic !!!' }],
        ['two authentication methods', `grant_type=client_credentials&client_secret=${apiKey}`, basic(clientId, apiKey)],
      ];
      for (const [name, body, headers] of cases) {
        const answer = await post('/oauth/token', body, headers);
        assert.equal(answer.status, 400, `${name}: ${answer.text}`);
        assert.equal(answer.body.error, 'invalid_request', name);
      }
    });

    it('rejects a resource other than the Merx API', async () => {
      const { clientId, apiKey } = addKey(['products:read']);
      const answer = await tokenWithBasic(clientId, apiKey, `&resource=${encodeURIComponent('https://elsewhere.example/api')}`);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error, 'invalid_target');
      const explicit = await tokenWithBasic(clientId, apiKey, `&resource=${encodeURIComponent(AUDIENCE)}`);
      assert.equal(explicit.status, 200, explicit.text);
    });

    it('answers errors as JSON even to a client that asks for HTML', async () => {
      const answer = await post('/oauth/token', 'grant_type=client_credentials', { ...basic('mx_test_0000000000000000', 'x'), accept: 'text/html' });
      assert.equal(answer.status, 401);
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(answer.body.error, 'invalid_client');
    });

    it('answers 500 server_error without details when the key store fails', async () => {
      const answer = await tokenWithBasic(BROKEN_STORE_CLIENT, `${BROKEN_STORE_CLIENT}_${'x'.repeat(32)}`);
      assert.equal(answer.status, 500, answer.text);
      assert.equal(answer.body.error, 'server_error');
      assert.doesNotMatch(answer.text, /unreachable|db\.internal/);
    });

    it('never puts a stack trace in an error body', () => {
      assert.ok(errorBodies.length >= 10, `only ${errorBodies.length} error bodies seen`);
      for (const text of errorBodies) {
        const body = JSON.parse(text) as Record<string, unknown>;
        assert.deepEqual(
          Object.keys(body).filter((key) => !['error', 'error_description', 'scope'].includes(key)),
          [],
          text,
        );
        assert.doesNotMatch(text, /\bat .+\.js:\d+|stack|node_modules/i, text);
      }
    });
  });

  describe('mount and discovery', () => {
    it('serves discovery under /oauth with URLs built from the configured public origin, whatever Host a client forges', async () => {
      const response = await fetch(`${baseUrl}/oauth/.well-known/openid-configuration`, {
        headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
      });
      assert.equal(response.status, 200);
      const document = (await response.json()) as Record<string, unknown>;
      assert.equal(document.issuer, ISSUER);
      assert.equal(document.token_endpoint, `${ISSUER}/token`);
      assert.equal(document.jwks_uri, `${ISSUER}/jwks`);
      assert.doesNotMatch(JSON.stringify(document), /evil\.example/);
      assert.deepEqual([...(document.grant_types_supported as string[])].sort(), ['authorization_code', 'client_credentials', 'refresh_token']);
      assert.deepEqual(document.code_challenge_methods_supported, ['S256'], 'plain PKCE is never offered');
      assert.deepEqual(document.response_types_supported, ['code']);
      assert.deepEqual(document.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
      assert.ok((document.scopes_supported as string[]).includes('products:write'));
    });

    it('publishes only public keys at /oauth/jwks', async () => {
      const response = await fetch(`${baseUrl}/oauth/jwks`);
      assert.equal(response.status, 200);
      const { keys } = (await response.json()) as { keys: Array<Record<string, unknown>> };
      assert.equal(keys.length, 1);
      assert.equal(keys[0]?.alg, 'ES256');
      assert.equal(keys[0]?.use, 'sig');
      assert.equal(keys[0]?.d, undefined);
    });

    it('lets requests the provider does not route fall through to the app', async () => {
      for (const path of ['/oauth/nothing-here', '/oauthx/token', '/admin/v1/merchants']) {
        const response = await fetch(`${baseUrl}${path}`);
        assert.equal(response.status, 404, path);
        assert.deepEqual(await response.json(), { fell_through: path });
      }
    });

    it('keeps the headers the app set before the mount and reports the answered status to it', async () => {
      const { clientId, apiKey } = addKey(['products:read']);
      const answers = [await tokenWithBasic(clientId, apiKey), await tokenWithBasic(clientId, 'wrong'), await post('/oauth/nothing-here', '')];
      const discovery = await fetch(`${baseUrl}/oauth/.well-known/openid-configuration`);
      assert.deepEqual([...answers.map((answer) => answer.status), discovery.status], [200, 401, 404, 200]);
      for (const headers of [...answers.map((answer) => answer.headers), discovery.headers]) {
        assert.equal(headers.get('x-request-id'), REQUEST_ID);
      }
      assert.deepEqual(statusesSeenByApp.slice(-4), [200, 401, 404, 200]);
    });

    it('has no interaction, userinfo or registration endpoints', async () => {
      for (const path of ['/oauth/interaction/abc', '/oauth/me', '/oauth/reg', '/oauth/request']) {
        const response = await fetch(`${baseUrl}${path}`, { method: 'POST' });
        assert.equal(response.status, 404, path);
      }
    });
  });
});

function describeAdapter(kind: string, open: () => Promise<{ db: Db; dispose(): Promise<void> }>): void {
  describe(`oidc-provider adapter on ${kind}`, () => {
    const schema = `oidc_test_${randomBytes(6).toString('hex')}`;
    let db: Db;
    let dispose: () => Promise<void>;
    const factory = () => createPostgresAdapterFactory(db, { schema });

    before(async () => {
      ({ db, dispose } = await open());
      await db.query(`CREATE SCHEMA ${schema}`);
      await db.exec(oidcMigrationSqlFor(schema));
      // Twice: the migration must be safe to re-run.
      await db.exec(oidcMigrationSqlFor(schema));
    });

    after(async () => {
      if (db) await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await dispose?.();
    });

    it('stores, finds, consumes and destroys payloads per model', async () => {
      const grants = factory()('Grant');
      const codes = factory()('AuthorizationCode');
      await grants.upsert('g1', { jti: 'g1', accountId: 'acc', kind: 'Grant' }, 60);
      await codes.upsert('g1', { jti: 'g1', kind: 'AuthorizationCode', grantId: 'grant-1' }, 60);
      assert.deepEqual(await grants.find('g1'), { jti: 'g1', accountId: 'acc', kind: 'Grant' });
      assert.equal((await codes.find('g1'))?.kind, 'AuthorizationCode');

      await codes.consume('g1');
      const consumed = await codes.find('g1');
      assert.equal(typeof consumed?.consumed, 'number');
      assert.ok(Math.abs(Number(consumed?.consumed) - Date.now() / 1000) < 60);

      await codes.upsert('g1', { jti: 'g1', kind: 'AuthorizationCode', grantId: 'grant-1', extra: 1 }, 60);
      assert.equal((await codes.find('g1'))?.consumed, undefined);

      await grants.destroy('g1');
      assert.equal(await grants.find('g1'), undefined);
      assert.ok(await codes.find('g1'));
      assert.equal(await grants.find('missing'), undefined);
    });

    it('finds sessions by uid and device codes by user code', async () => {
      const sessions = factory()('Session');
      const deviceCodes = factory()('DeviceCode');
      await sessions.upsert('s1', { jti: 's1', uid: 'uid-1', kind: 'Session' }, 600);
      await deviceCodes.upsert('d1', { jti: 'd1', userCode: 'ABCD-EFGH', kind: 'DeviceCode' }, 600);
      assert.equal((await sessions.findByUid('uid-1'))?.jti, 's1');
      assert.equal(await sessions.findByUid('uid-2'), undefined);
      assert.equal((await deviceCodes.findByUserCode('ABCD-EFGH'))?.jti, 'd1');
      assert.equal(await factory()('Session').findByUserCode('ABCD-EFGH'), undefined);
    });

    it('revokes every token of a grant for that model only', async () => {
      const accessTokens = factory()('AccessToken');
      const refreshTokens = factory()('RefreshToken');
      await accessTokens.upsert('a1', { jti: 'a1', grantId: 'grant-9' }, 600);
      await accessTokens.upsert('a2', { jti: 'a2', grantId: 'grant-9' }, 600);
      await accessTokens.upsert('a3', { jti: 'a3', grantId: 'grant-other' }, 600);
      await refreshTokens.upsert('r1', { jti: 'r1', grantId: 'grant-9' }, 600);
      await accessTokens.revokeByGrantId('grant-9');
      assert.equal(await accessTokens.find('a1'), undefined);
      assert.equal(await accessTokens.find('a2'), undefined);
      assert.ok(await accessTokens.find('a3'));
      assert.ok(await refreshTokens.find('r1'));
    });

    it('treats expired rows as absent and keeps rows without expiry', async () => {
      const interactions = factory()('Interaction');
      await interactions.upsert('old', { jti: 'old', uid: 'uid-old' }, -1);
      await interactions.upsert('forever', { jti: 'forever' });
      assert.equal(await interactions.find('old'), undefined);
      assert.equal(await interactions.findByUid('uid-old'), undefined);
      assert.ok(await interactions.find('forever'));
      assert.ok((await deleteExpiredOidcPayloads(db, { schema })) >= 1);
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.oidc_payloads WHERE id = 'old'`);
      assert.equal(rows[0]?.n, 0);
    });

    it('refuses a schema name that is not a plain identifier', () => {
      assert.throws(() => createPostgresAdapterFactory(db, { schema: 'oauth; drop table x' }), /invalid schema name/);
    });
  });
}

describeAdapter('PostgreSQL', async () => {
  const db = createPostgresDb(DATABASE_URL, { maxConnections: 2, applicationName: 'oauth-adapter-test' });
  return { db, dispose: () => db.close() };
});

describeAdapter('PGlite', async () => {
  const pglite = await PGlite.create();
  return { db: createPgliteDb(pglite), dispose: () => pglite.close() };
});
