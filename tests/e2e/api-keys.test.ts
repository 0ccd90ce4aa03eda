import assert from 'node:assert/strict';
import { GATEWAY_CREDENTIAL_HEADER } from '@merx/kit';
import { call, createMerchant, issueToken, sharedStack, type Stack, type TestMerchant } from '../src/harness/index.js';

/** Asks the token endpoint and returns the raw answer, for the refusals issueToken would assert away. */
async function tokenAnswer(stack: Stack, apiKey: string): Promise<{ status: number; body: { error?: string; access_token?: string } }> {
  const clientId = apiKey.split('_').slice(0, 3).join('_');
  const response = await fetch(`${stack.baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials' }),
  });
  return { status: response.status, body: (await response.json()) as { error?: string } };
}

/**
 * Straight to the service's own port, vouched for as the gateway would: the gateway is not the
 * only one who checks tokens.
 */
async function directStatus(stack: Stack, service: 'catalog' | 'oauth', path: string, token: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${stack.directUrl(service)}${path}`, {
    headers: { authorization: `Bearer ${token}`, [GATEWAY_CREDENTIAL_HEADER]: stack.gatewayCredential },
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

describe('API keys', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  const createKey = async (scopes: string[], token = merchant.token) => {
    const created = await call(stack, 'POST', '/api/v1/api-keys', { token, body: { name: `Key ${scopes.join(' ')}`, scopes } });
    assert.equal(created.status, 201, created.text);
    return created.body as { id: string; prefix: string; secret: string; scopes: string[] };
  };

  it('creates a key with a subset of scopes whose tokens carry only those scopes', async () => {
    const key = await createKey(['products:read']);
    assert.deepEqual(key.scopes, ['products:read']);
    const token = await issueToken(stack, key.secret);
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token })).status, 200);
    const write = await call(stack, 'POST', '/api/v1/products', { token, body: { sku: 'NOPE', title: 'No', price: '1.00', currency: 'USD' } });
    assert.equal(write.status, 403);
    assert.equal((await call(stack, 'GET', '/api/v1/api-keys', { token })).status, 403);
    const event = await stack.events.waitFor((e) => e.topic === 'api_keys.created' && (e.data.object as { id: string }).id === key.id);
    assert.equal(event.merchant_id, merchant.merchantId);
  });

  it('refuses to create a key with a scope the calling token lacks', async () => {
    const narrow = await createKey(['api_keys:write', 'products:read']);
    const narrowToken = await issueToken(stack, narrow.secret);
    const wider = await call(stack, 'POST', '/api/v1/api-keys', { token: narrowToken, body: { name: 'Wider', scopes: ['products:write'] } });
    assert.equal(wider.status, 422);
    assert.equal(wider.body.errors[0].code, 'scope_not_held');
  });

  it('keeps an Idempotency-Key to the credential that sent it: another key replaying it runs its own request and never sees the first answer', async () => {
    const fullScopes = ['products:read', 'products:write', 'api_keys:write', 'webhooks:read'];
    const key = `create-full-${merchant.merchantId}`;
    const body = { name: 'Full', scopes: fullScopes };
    const first = await call(stack, 'POST', '/api/v1/api-keys', { token: merchant.token, body, headers: { 'idempotency-key': key } });
    assert.equal(first.status, 201, first.text);
    const narrow = await createKey(['api_keys:write']);
    const narrowToken = await issueToken(stack, narrow.secret);
    const replayed = await call(stack, 'POST', '/api/v1/api-keys', { token: narrowToken, body, headers: { 'idempotency-key': key } });
    assert.equal(replayed.status, 422, replayed.text);
    assert.equal(replayed.body.errors[0].code, 'scope_not_held', 'a fresh request under its own scopes, refused as one');
    assert.equal(replayed.headers.get('idempotent-replayed'), null);
    assert.ok(!replayed.text.includes(first.body.secret), 'the full-scope secret is never shown to another credential');
    const again = await call(stack, 'POST', '/api/v1/api-keys', { token: merchant.token, body, headers: { 'idempotency-key': key } });
    assert.equal(again.headers.get('idempotent-replayed'), 'true', 'the key still replays for the credential that sent it');
    assert.equal(again.body.secret, first.body.secret);
  });

  it('never shows a secret after creation', async () => {
    const key = await createKey(['products:read']);
    const list = await call(stack, 'GET', '/api/v1/api-keys', { token: merchant.token });
    assert.ok(list.body.data.some((k: { id: string }) => k.id === key.id));
    assert.ok(!list.text.includes(key.secret.split('_')[3]!) && !list.text.includes('"secret"'));
    const one = await call(stack, 'GET', `/api/v1/api-keys/${key.id}`, { token: merchant.token });
    assert.equal(one.body.secret, undefined);
  });

  it('revoked: no new token, and its tokens are refused at the gateway and at the catalog within one second', async function () {
    this.timeout(20_000);
    const key = await createKey(['products:read']);
    const token = await issueToken(stack, key.secret);
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token })).status, 200);
    assert.equal((await directStatus(stack, 'catalog', '/api/v1/products', token)).status, 200);

    const revokedAt = Date.now();
    assert.equal((await call(stack, 'DELETE', `/api/v1/api-keys/${key.id}`, { token: merchant.token })).status, 204);
    const deadline = revokedAt + 1_000;
    let atGateway = 200;
    let atCatalog = 200;
    while ((atGateway !== 401 || atCatalog !== 401) && Date.now() < deadline) {
      if (atGateway !== 401) atGateway = (await call(stack, 'GET', '/api/v1/products', { token })).status;
      if (atCatalog !== 401) atCatalog = (await directStatus(stack, 'catalog', '/api/v1/products', token)).status;
    }
    assert.equal(atGateway, 401, 'the gateway still takes the token of a revoked key after one second');
    assert.equal(atCatalog, 401, 'the catalog still takes the token of a revoked key after one second');
    const refused = await call(stack, 'GET', '/api/v1/products', { token });
    assert.equal(refused.body.detail, 'the credential was revoked');
    assert.equal((await directStatus(stack, 'catalog', '/api/v1/products', token)).body.detail, 'the credential was revoked');

    const again = await tokenAnswer(stack, key.secret);
    assert.equal(again.status, 401);
    assert.equal(again.body.error, 'invalid_client');
    assert.equal((await call(stack, 'DELETE', `/api/v1/api-keys/${key.id}`, { token: merchant.token })).status, 204);
    const listed = await call(stack, 'GET', `/api/v1/api-keys/${key.id}`, { token: merchant.token });
    assert.match(listed.body.revoked_at, /Z$/);
    await stack.events.waitFor((e) => e.topic === 'api_keys.revoked' && (e.data.object as { id: string }).id === key.id);
  });

  it("answers 404 for another merchant's key and leaves it alone", async () => {
    const other = await createMerchant(stack);
    const key = await createKey(['products:read']);
    assert.equal((await call(stack, 'GET', `/api/v1/api-keys/${key.id}`, { token: other.token })).status, 404);
    assert.equal((await call(stack, 'DELETE', `/api/v1/api-keys/${key.id}`, { token: other.token })).status, 404);
    assert.equal((await tokenAnswer(stack, key.secret)).status, 200);
  });

  it('keeps the internal revocation endpoint off the public origin', async () => {
    const response = await call(stack, 'GET', '/internal/v1/revocations', { token: merchant.token });
    assert.equal(response.status, 404);
  });
});
