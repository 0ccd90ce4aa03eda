import assert from 'node:assert/strict';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { Context } from 'koa';
import { bearerTokenOf, claimsFromPayload, createTokenVerifier, requireScope, type AccessClaims, type TokenVerifier } from './auth.js';
import { InsufficientScope, Unauthenticated, ValidationFailed } from './errors.js';

const ISSUER = 'http://localhost:8080/oauth';
const AUDIENCE = 'urn:merx:api';
const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

interface SigningKey {
  privateKey: CryptoKey;
  kid: string;
  jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return { privateKey, kid, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

async function signAccessToken(
  key: SigningKey,
  claims: Record<string, unknown> = {},
  options: { issuer?: string; audience?: string; expiresAt?: number; issuedAt?: number } = {},
): Promise<string> {
  const issuedAt = options.issuedAt ?? Math.floor(Date.now() / 1000);
  return new SignJWT({ merchant_id: MERCHANT, client_id: 'mx_test_4fJk2LmN8pQr', scope: 'products:read products:write', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(options.expiresAt ?? issuedAt + 900)
    .setJti('tok-1')
    .sign(key.privateKey);
}

async function rejection(verifier: TokenVerifier, token: string): Promise<Unauthenticated> {
  try {
    await verifier.verify(token);
  } catch (error) {
    assert.ok(error instanceof Unauthenticated, `expected Unauthenticated, got ${String(error)}`);
    return error;
  }
  assert.fail('the token was accepted');
}

describe('createTokenVerifier', () => {
  let trusted: SigningKey;
  let stranger: SigningKey;
  let verifier: TokenVerifier;

  before(async () => {
    trusted = await signingKey('key-1');
    stranger = await signingKey('key-2');
    verifier = createTokenVerifier(createLocalJWKSet({ keys: [trusted.jwk] }), { issuer: ISSUER, audience: AUDIENCE });
  });

  it('turns a valid token into claims', async () => {
    const token = await signAccessToken(trusted);
    const claims = await verifier.verify(token);
    assert.equal(claims.merchantId, MERCHANT);
    assert.equal(claims.clientId, 'mx_test_4fJk2LmN8pQr');
    assert.deepEqual([...claims.scopes].sort(), ['products:read', 'products:write']);
    assert.deepEqual(claims.actor, { type: 'api_key', id: 'mx_test_4fJk2LmN8pQr' });
    assert.equal(claims.tokenId, 'tok-1');
    assert.ok(claims.expiresAt > Date.now());
  });

  it('names apps and users as actors', async () => {
    const app = await verifier.verify(await signAccessToken(trusted, { client_id: 'app_01jd3k7q8m2x4v6b9c0d1e2f3g' }));
    assert.deepEqual(app.actor, { type: 'app', id: 'app_01jd3k7q8m2x4v6b9c0d1e2f3g' });
    const user = await verifier.verify(await signAccessToken(trusted, { client_id: 'dashboard', sub: 'usr_01jd3k7q8m2x4v6b9c0d1e2f3g', scope: '' }));
    assert.deepEqual(user.actor, { type: 'user', id: 'usr_01jd3k7q8m2x4v6b9c0d1e2f3g' });
    assert.equal(user.scopes.size, 0);
  });

  it('refuses an expired token', async () => {
    const issuedAt = Math.floor(Date.now() / 1000) - 3600;
    const error = await rejection(verifier, await signAccessToken(trusted, {}, { issuedAt, expiresAt: issuedAt + 900 }));
    assert.match(error.message, /expired/);
    assert.equal(error.bearerError, 'invalid_token');
  });

  it('stops accepting a token it verified once it expires', async () => {
    let clock = Date.now();
    const clocked = createTokenVerifier(createLocalJWKSet({ keys: [trusted.jwk] }), { issuer: ISSUER, audience: AUDIENCE, now: () => clock });
    const token = await signAccessToken(trusted);
    await clocked.verify(token);
    await clocked.verify(token); // served from the cache
    clock += 901_000;
    await rejection(clocked, token);
  });

  it('refuses another audience or issuer', async () => {
    await rejection(verifier, await signAccessToken(trusted, {}, { audience: 'urn:other:api' }));
    await rejection(verifier, await signAccessToken(trusted, {}, { issuer: 'http://evil.example/oauth' }));
  });

  it('refuses an unsigned token (alg none)', async () => {
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const payload = { iss: ISSUER, aud: AUDIENCE, iat: now, exp: now + 900, merchant_id: MERCHANT, client_id: 'mx_test_x', scope: 'products:write' };
    await rejection(verifier, `${encode({ alg: 'none', typ: 'JWT' })}.${encode(payload)}.`);
    await rejection(verifier, `${encode({ alg: 'none', kid: 'key-1' })}.${encode(payload)}.`);
  });

  it('refuses a token signed by a key outside the set', async () => {
    await rejection(verifier, await signAccessToken(stranger));
    // Same kid as the trusted key, different private key: only the signature can tell.
    await rejection(verifier, await signAccessToken({ ...stranger, kid: 'key-1' }));
  });

  it('refuses a tampered payload and garbage', async () => {
    const [header, , signature] = (await signAccessToken(trusted)).split('.');
    const forged = Buffer.from(
      JSON.stringify({ iss: ISSUER, aud: AUDIENCE, exp: 9_999_999_999, merchant_id: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3h', client_id: 'x' }),
    ).toString('base64url');
    await rejection(verifier, `${header}.${forged}.${signature}`);
    await rejection(verifier, 'not.a.jwt');
    await rejection(verifier, '');
  });

  it('refuses a signed token that is not a merchant token', async () => {
    await rejection(verifier, await signAccessToken(trusted, { merchant_id: undefined }));
    await rejection(verifier, await signAccessToken(trusted, { merchant_id: 'usr_123' }));
    await rejection(verifier, await signAccessToken(trusted, { client_id: 42 }));
    assert.throws(() => claimsFromPayload({ merchant_id: MERCHANT }), Unauthenticated);
  });
});

describe('bearerTokenOf', () => {
  it('extracts a bearer token and nothing else', () => {
    assert.equal(bearerTokenOf('Bearer abc.def.ghi'), 'abc.def.ghi');
    assert.equal(bearerTokenOf('bearer abc.def.ghi'), 'abc.def.ghi');
    assert.equal(bearerTokenOf('Basic dXNlcjpwYXNz'), undefined);
    assert.equal(bearerTokenOf('Bearer'), undefined);
    assert.equal(bearerTokenOf('Bearer a b'), undefined);
    assert.equal(bearerTokenOf(undefined), undefined);
  });
});

describe('requireScope', () => {
  const claims = (scopes: string[]): AccessClaims => ({
    merchantId: MERCHANT as AccessClaims['merchantId'],
    clientId: 'mx_test_x',
    scopes: new Set(scopes),
    tokenId: undefined,
    expiresAt: Date.now() + 60_000,
    issuedAt: Math.floor(Date.now() / 1000),
    actor: { type: 'api_key', id: 'mx_test_x' },
  });
  const run = async (state: Record<string, unknown>, scope: string) => {
    let reached = false;
    await requireScope(scope)({ state, method: 'GET', path: '/api/v1/products', query: {} } as unknown as Context, async () => {
      reached = true;
    });
    return reached;
  };

  it('lets a token with the scope through', async () => {
    assert.equal(await run({ auth: claims(['products:read', 'products:write']) }, 'products:write'), true);
    assert.equal((requireScope('products:write') as unknown as { requiredScope: string }).requiredScope, 'products:write');
  });

  it('refuses a query parameter the operation does not declare once the scope holds, with the parameter named', async () => {
    const listing = (query: Record<string, string>) =>
      requireScope('products:read')(
        { state: { auth: claims(['products:read']) }, method: 'GET', path: '/api/v1/products', query } as unknown as Context,
        async () => undefined,
      );
    await listing({ status: 'active', limit: '5' });
    await assert.rejects(listing({ status: 'active', stauts: 'x' }), (error: unknown) => {
      assert.ok(error instanceof ValidationFailed);
      assert.deepEqual(
        error.errors.map((e) => [e.field, e.code]),
        [['stauts', 'unknown_parameter']],
      );
      assert.match(error.errors[0]!.message, /stauts is not a query parameter of products\.list; it takes limit, cursor, status, sku, currency/);
      return true;
    });
  });

  it('refuses a token without the scope', async () => {
    await assert.rejects(run({ auth: claims(['products:read']) }, 'products:write'), (error: unknown) => {
      assert.ok(error instanceof InsufficientScope);
      assert.equal(error.requiredScope, 'products:write');
      assert.equal(error.code, 'insufficient_scope');
      return true;
    });
  });

  it('refuses a request that was never authenticated', async () => {
    await assert.rejects(run({}, 'products:read'), Unauthenticated);
  });
});
