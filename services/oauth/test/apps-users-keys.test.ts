import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { API_AUDIENCE, createJwksTokenVerifier, createLogger, createPgliteDb, MemoryBus, openPglite, type Db } from '@merx/kit';
import { verifyPassword } from '../src/domain/password.js';
import { hashAppSecret, provisionMerchant, startOauth, type RunningOauth } from '../src/index.js';

const ISSUER = 'http://localhost:8080/oauth';
const FORWARDED = { 'x-forwarded-host': 'localhost:8080', 'x-forwarded-proto': 'http' };
const OPERATOR = randomBytes(32).toString('hex');

describe('oauth: owners, apps and signing key rotation (PGlite)', function () {
  this.timeout(30_000);
  let db: Db;
  let close: () => Promise<void>;
  let oauth: RunningOauth;
  let bus: MemoryBus;

  before(async () => {
    const pglite = await openPglite(undefined);
    db = createPgliteDb(pglite);
    close = () => pglite.close();
    bus = new MemoryBus();
    let url = '';
    oauth = await startOauth({
      db,
      bus,
      logger: createLogger('oauth', 'silent'),
      issuer: ISSUER,
      audience: API_AUDIENCE,
      accessTokenTtlSeconds: 900,
      operatorToken: OPERATOR,
      cookieSecret: randomBytes(32).toString('hex'),
      verifier: createJwksTokenVerifier({ jwksUrl: () => `${url}/oauth/jwks`, issuer: ISSUER, audience: API_AUDIENCE }),
      port: 0,
      host: '127.0.0.1',
    });
    url = oauth.url;
  });
  after(async () => {
    await oauth?.stop();
    await bus?.close();
    await close?.();
  });

  const admin = async (path: string, body?: unknown) => {
    const response = await fetch(`${oauth.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  const jwks = async () => (await (await fetch(`${oauth.url}/oauth/jwks`, { headers: FORWARDED })).json()) as JSONWebKeySet;

  async function clientCredentials(apiKey: string): Promise<string> {
    const clientId = apiKey.split('_').slice(0, 3).join('_');
    const response = await fetch(`${oauth.url}/oauth/token`, {
      method: 'POST',
      headers: {
        ...FORWARDED,
        authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
    const body = (await response.json()) as { access_token: string };
    assert.equal(response.status, 200, JSON.stringify(body));
    return body.access_token;
  }

  it("stores the owner's password only as a salted scrypt hash, and owner emails are unique", async () => {
    const email = `Owner-${randomBytes(4).toString('hex')}@Example.com`;
    const provisioned = await provisionMerchant(oauth.outbox, { name: 'Owned', owner: { email, password: 'a very long password' } });
    assert.equal(provisioned.owner.password, undefined);
    const { rows } = await db.query<{ password_hash: string; merchant_id: string }>('SELECT password_hash, merchant_id FROM oauth.users WHERE id = $1', [
      provisioned.owner.id,
    ]);
    assert.equal(rows[0]!.merchant_id, provisioned.merchant.id);
    assert.match(rows[0]!.password_hash, /^scrypt\$131072\$8\$1\$/);
    assert.ok(!rows[0]!.password_hash.includes('a very long password'));
    assert.equal(await verifyPassword('a very long password', rows[0]!.password_hash), true);
    await assert.rejects(provisionMerchant(oauth.outbox, { name: 'Copy', owner: { email: email.toLowerCase() } }), { code: 'conflict' });
    const { rows: merchants } = await db.query<{ count: string }>("SELECT count(*) FROM oauth.merchants WHERE name = 'Copy'");
    assert.equal(Number(merchants[0]!.count), 0, 'a refused owner leaves no merchant behind');
  });

  it('registers apps with a secret stored only hashed; apps cannot use client credentials', async () => {
    const created = await admin('/admin/v1/apps', {
      name: 'Ledger',
      redirect_uris: ['https://ledger.example/cb', 'http://localhost:3000/cb'],
      scopes: ['products:write', 'products:read'],
    });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^app_/);
    assert.deepEqual(created.body.scopes, ['products:read', 'products:write']);
    const { rows } = await db.query<{ secret_hash: string }>('SELECT secret_hash FROM oauth.apps WHERE id = $1', [created.body.id]);
    assert.equal(rows[0]!.secret_hash, hashAppSecret(created.body.client_secret));
    const response = await fetch(`${oauth.url}/oauth/token`, {
      method: 'POST',
      headers: {
        ...FORWARDED,
        authorization: `Basic ${Buffer.from(`${created.body.client_id}:${created.body.client_secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
    const refused = (await response.json()) as { error: string; error_description: string };
    assert.equal(response.status, 400);
    // oidc-provider 8 answers invalid_request (not unauthorized_client) for a grant type the client is not registered for.
    assert.deepEqual(refused, { error: 'invalid_request', error_description: 'requested grant type is not allowed for this client' });
    const wrongSecret = await fetch(`${oauth.url}/oauth/token`, {
      method: 'POST',
      headers: {
        ...FORWARDED,
        authorization: `Basic ${Buffer.from(`${created.body.client_id}:mxsec_${'x'.repeat(40)}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'nope' }),
    });
    assert.equal(((await wrongSecret.json()) as { error: string }).error, 'invalid_client');
    const invalid = await admin('/admin/v1/apps', { name: 'Bad', redirect_uris: ['http://ledger.example/cb', 'https://x.example/#frag'], scopes: [] });
    assert.equal(invalid.status, 422);
    // Structure first (an empty scopes list), then the redirect URI policy once the body is well formed.
    assert.deepEqual(invalid.body.errors.map((e: { field: string }) => e.field).sort(), ['scopes']);
    const badRedirects = await admin('/admin/v1/apps', {
      name: 'Bad',
      redirect_uris: ['http://ledger.example/cb', 'https://x.example/#frag'],
      scopes: ['products:read'],
    });
    assert.equal(badRedirects.status, 422);
    assert.deepEqual(badRedirects.body.errors.map((e: { field: string }) => e.field).sort(), ['redirect_uris[0]', 'redirect_uris[1]']);
  });

  it('publishes current and next keys, and a rotation keeps every issued token verifiable', async () => {
    const provisioned = await provisionMerchant(oauth.outbox, { name: 'Rotating', owner: { email: `rot-${randomBytes(4).toString('hex')}@example.com` } });
    const before = await jwks();
    assert.equal(before.keys.length, 2, 'current and next');
    const oldToken = await clientCredentials(provisioned.api_key.secret!);
    const oldKid = decodeProtectedHeader(oldToken).kid!;
    const nextKid = before.keys.map((key) => key.kid).find((kid) => kid !== oldKid)!;

    const rotated = await admin('/admin/v1/signing-keys/rotate');
    assert.equal(rotated.status, 200);
    assert.equal(rotated.body.current_kid, nextKid, 'the published next key is promoted');
    const after = await jwks();
    assert.deepEqual(after.keys.map((key) => key.kid).sort(), [oldKid, nextKid, rotated.body.next_kid].sort(), 'the retired key stays published');
    for (const key of after.keys) assert.equal((key as { d?: string }).d, undefined, 'never a private part');

    const newToken = await clientCredentials(provisioned.api_key.secret!);
    assert.equal(decodeProtectedHeader(newToken).kid, nextKid, 'the new current key signs without a restart');
    const keySet = createLocalJWKSet(after);
    for (const token of [oldToken, newToken]) {
      const { payload } = await jwtVerify(token, keySet, { issuer: ISSUER, audience: API_AUDIENCE });
      assert.equal(payload.merchant_id, provisioned.merchant.id);
    }
    const { rows } = await db.query<{ state: string }>('SELECT state FROM oauth.signing_keys WHERE kid = $1', [oldKid]);
    assert.equal(rows[0]!.state, 'retired');
  });
});
