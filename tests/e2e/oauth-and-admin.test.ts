import assert from 'node:assert/strict';
import { request } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { call, createMerchant, sharedStack, uniqueOwnerEmail, type Stack } from '../src/harness/index.js';

async function token(stack: Stack, form: Record<string, string>, basic?: [string, string]) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic[0]}:${basic[1]}`).toString('base64')}`;
  const response = await fetch(`${stack.baseUrl}/oauth/token`, { method: 'POST', headers, body: new URLSearchParams(form) });
  return { status: response.status, body: (await response.json()) as Record<string, string>, headers: response.headers };
}

describe('OAuth client credentials and operator provisioning', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  it('issues 15-minute JWTs for the API audience, verifiable with the published JWKS', async () => {
    const merchant = await createMerchant(stack);
    const keys = createRemoteJWKSet(new URL(`${stack.baseUrl}/oauth/jwks`));
    const { payload, protectedHeader } = await jwtVerify(merchant.token, keys, { issuer: `${stack.baseUrl}/oauth`, audience: 'urn:merx:api' });
    assert.equal(payload.merchant_id, merchant.merchantId);
    assert.equal(payload.client_id, merchant.clientId);
    assert.equal(payload.exp! - payload.iat!, 900);
    assert.equal(protectedHeader.typ, 'at+jwt');
    const discovery = await fetch(`${stack.baseUrl}/oauth/.well-known/openid-configuration`).then((r) => r.json() as Promise<Record<string, string>>);
    assert.equal(discovery.issuer, `${stack.baseUrl}/oauth`);
    assert.equal(discovery.token_endpoint, `${stack.baseUrl}/oauth/token`);
  });

  it('refuses wrong secrets, unknown clients, foreign scopes and unknown grants with standard OAuth errors', async () => {
    const merchant = await createMerchant(stack);
    const wrongSecret = `${merchant.clientId}_${'A'.repeat(32)}`;
    const cases = [
      { name: 'wrong secret', form: { grant_type: 'client_credentials' }, basic: [merchant.clientId, wrongSecret], status: 401, error: 'invalid_client' },
      {
        name: 'unknown client',
        form: { grant_type: 'client_credentials' },
        basic: ['mx_test_AAAAAAAAAAAAAAAA', `mx_test_AAAAAAAAAAAAAAAA_${'B'.repeat(32)}`],
        status: 401,
        error: 'invalid_client',
      },
      {
        name: 'unknown scope',
        form: { grant_type: 'client_credentials', scope: 'products:read everything' },
        basic: [merchant.clientId, merchant.apiKey],
        status: 400,
        error: 'invalid_scope',
      },
      {
        name: 'unsupported grant',
        form: { grant_type: 'password', username: 'a', password: 'b' },
        basic: [merchant.clientId, merchant.apiKey],
        status: 400,
        error: 'unsupported_grant_type',
      },
      { name: 'no credentials', form: { grant_type: 'client_credentials' }, basic: undefined, status: 400, error: 'invalid_request' },
    ] as const;
    for (const { name, form, basic, status, error } of cases) {
      const response = await token(stack, form, basic as [string, string] | undefined);
      assert.equal(response.status, status, name);
      assert.equal(response.body.error, error, name);
      assert.ok(!JSON.stringify(response.body).includes(' at '), `${name}: no stack`);
      assert.match(response.headers.get('x-request-id') ?? '', /^req_/);
    }
  });

  it('provisions a merchant only for the operator, validating the request', async () => {
    const body = { name: 'Acme', mode: 'sandbox', default_currency: 'EUR', timezone: 'Europe/Berlin', owner: { email: uniqueOwnerEmail() } };
    const anonymous = await call(stack, 'POST', '/admin/v1/merchants', { body });
    assert.equal(anonymous.status, 401);
    const wrong = await call(stack, 'POST', '/admin/v1/merchants', { body, headers: { authorization: 'Bearer not-the-operator' } });
    assert.equal(wrong.status, 401);
    const operator = { authorization: `Bearer ${stack.operatorToken}` };
    const invalid = await call(stack, 'POST', '/admin/v1/merchants', {
      headers: operator,
      body: { name: '', mode: 'staging', default_currency: 'EURO', timezone: 'Mars/Olympus', owner: { email: 'not-an-email', password: 'short' } },
    });
    assert.equal(invalid.status, 422);
    assert.deepEqual(invalid.body.errors.map((e: { field: string }) => e.field).sort(), ['default_currency', 'mode', 'name', 'owner.email', 'owner.password']);
    // The time zone is the domain's to judge (the IANA database), once the structure holds.
    const badZone = await call(stack, 'POST', '/admin/v1/merchants', { headers: operator, body: { ...body, timezone: 'Mars/Olympus' } });
    assert.deepEqual(
      badZone.body.errors.map((e: { field: string }) => e.field),
      ['timezone'],
    );
    const ownerless = await call(stack, 'POST', '/admin/v1/merchants', { headers: operator, body: { name: 'No owner' } });
    assert.deepEqual(
      ownerless.body.errors.map((e: { field: string }) => e.field),
      ['owner'],
    );
    assert.equal((await call(stack, 'POST', '/admin/v1/merchants', { headers: operator, rawBody: '{"name":' })).status, 400);
    assert.equal((await call(stack, 'POST', '/admin/v1/merchants', { headers: operator, rawBody: 'name=x', contentType: 'text/plain' })).status, 415);

    const created = await call(stack, 'POST', '/admin/v1/merchants', { headers: operator, body });
    assert.equal(created.status, 201);
    assert.equal(created.body.merchant.plan, 'sandbox');
    assert.equal(created.body.merchant.default_currency, 'EUR');
    assert.match(created.body.api_key.secret, /^mx_test_[0-9A-Za-z]{16}_[0-9A-Za-z]{32}$/);
    assert.ok(created.body.api_key.secret.startsWith(created.body.api_key.prefix));
    assert.match(created.body.owner.id, /^usr_/);
    assert.equal(created.body.owner.email, body.owner.email);
    assert.match(created.body.owner.password, /^[0-9A-Za-z]{24}$/, 'a generated password is returned once');
    const sameEmail = await call(stack, 'POST', '/admin/v1/merchants', {
      headers: operator,
      body: { name: 'Copycat', owner: { email: body.owner.email.toUpperCase(), password: 'a long enough password' } },
    });
    assert.equal(sameEmail.status, 409, 'owner emails are unique across Merx, case-insensitively');
    const event = await stack.events.waitFor((e) => e.topic === 'merchants.created' && e.merchant_id === created.body.merchant.id);
    assert.deepEqual(event.data.object, created.body.merchant);
    assert.ok(!JSON.stringify(event).includes(created.body.owner.password), 'the password never travels in an event');
    assert.deepEqual(event.context?.actor, { type: 'operator', id: 'operator' });
    const keyEvent = await stack.events.waitFor((e) => e.topic === 'api_keys.created' && e.merchant_id === created.body.merchant.id);
    assert.ok(!JSON.stringify(keyEvent).includes(created.body.api_key.secret), 'the key itself never travels in an event');
  });

  it('builds the discovery document from the configured public URL, whatever Host the client sends', async () => {
    const gateway = new URL(stack.baseUrl);
    const forged = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const sent = request(
        {
          host: '127.0.0.1',
          port: gateway.port,
          path: '/oauth/.well-known/openid-configuration',
          headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
        },
        (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        },
      );
      sent.on('error', reject);
      sent.end();
    });
    assert.equal(forged.status, 200, forged.body);
    const document = JSON.parse(forged.body) as Record<string, string>;
    assert.equal(document.issuer, `${stack.baseUrl}/oauth`);
    assert.equal(document.token_endpoint, `${stack.baseUrl}/oauth/token`);
    assert.equal(document.authorization_endpoint, `${stack.baseUrl}/oauth/auth`);
    assert.doesNotMatch(forged.body, /evil\.example/);
  });

  it('gives live merchants live keys', async () => {
    const created = await call(stack, 'POST', '/admin/v1/merchants', {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
      body: { name: 'Live shop', mode: 'live', owner: { email: uniqueOwnerEmail(), password: 'correct horse battery staple' } },
    });
    assert.equal(created.body.owner.password, undefined, 'a password the operator chose is never echoed');
    assert.equal(created.body.merchant.plan, 'standard');
    assert.match(created.body.api_key.secret, /^mx_live_/);
  });
});
