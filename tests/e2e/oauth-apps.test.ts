import assert from 'node:assert/strict';
import * as oidc from 'openid-client';
import { Browser, call, createMerchant, formAction, hiddenField, sharedStack, type Stack, type TestMerchant } from '../src/harness/index.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';

interface RegisteredApp {
  id: string;
  client_id: string;
  client_secret: string;
  scopes: string[];
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

/** The error openid-client surfaces from an OAuth error response. */
async function oauthError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return String((error as { error?: string }).error ?? (error as Error).message);
  }
  assert.fail('expected an OAuth error');
}

describe('third-party apps: authorization code + PKCE through the consent pages', () => {
  let stack: Stack;
  let app: RegisteredApp;
  let config: oidc.Configuration;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  // A fresh app per test: the gateway throttles the token endpoint per client id (10 a minute).
  beforeEach(async () => {
    const registered = await call(stack, 'POST', '/admin/v1/apps', {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
      body: { name: 'Shelf Sync', redirect_uris: [REDIRECT_URI], scopes: ['products:read', 'products:write', 'merchant:read'] },
    });
    assert.equal(registered.status, 201, registered.text);
    app = registered.body;
    config = await oidc.discovery(new URL(`${stack.baseUrl}/oauth`), app.client_id, undefined, oidc.ClientSecretBasic(app.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
  });

  /** Starts an authorization request the way an app's server does, with S256 PKCE and state. */
  async function authorizationRequest(scope: string, extra: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    });
    return { url, verifier, state };
  }

  /** A merchant's owner signs in and answers the consent page; returns where the browser lands on the app. */
  async function installAs(merchant: TestMerchant, scope: string, decision: 'confirm' | 'abort' = 'confirm') {
    const request = await authorizationRequest(scope);
    const browser = new Browser(stack.baseUrl);
    const loginPage = await browser.navigate(request.url.toString());
    assert.equal(loginPage.status, 200, loginPage.text);
    assert.match(loginPage.text, /<html lang="en">/);
    assert.match(loginPage.text, /Shelf Sync/);

    const wrong = await browser.navigate(formAction(loginPage.text, '/login'), {
      method: 'POST',
      form: { csrf: hiddenField(loginPage.text, 'csrf'), email: merchant.ownerEmail, password: 'not the password at all' },
    });
    assert.equal(wrong.status, 401, 'a wrong password shows the login page again');
    assert.match(wrong.text, /aria-describedby="login-error"/);
    assert.match(wrong.text, /id="login-error"/);

    const forged = await browser.request(formAction(wrong.text, '/login'), {
      method: 'POST',
      form: { csrf: 'forged', email: merchant.ownerEmail, password: merchant.ownerPassword },
    });
    assert.equal(forged.status, 403, "a POST without the page's CSRF field is refused");

    const consentPage = await browser.navigate(formAction(wrong.text, '/login'), {
      method: 'POST',
      form: { csrf: hiddenField(wrong.text, 'csrf'), email: merchant.ownerEmail, password: merchant.ownerPassword },
    });
    assert.equal(consentPage.status, 200, consentPage.text);
    assert.match(consentPage.text, /Allow Shelf Sync/);
    assert.match(consentPage.text, /Read products\./, 'scopes are shown in plain words');
    const landing = await browser.request(formAction(consentPage.text, `/${decision}`), {
      method: 'POST',
      form: { csrf: hiddenField(consentPage.text, 'csrf') },
    });
    assert.equal(landing.status, 303);
    const final = await browser.navigate(landing.location!);
    assert.ok(
      final.location?.startsWith(REDIRECT_URI),
      `lands on the app: ${final.status} ${/<h1[^>]*>([^<]*)/.exec(final.text)?.[1]} ${final.text.slice(-1500)}`,
    );
    return { callback: new URL(final.location!), ...request, browser };
  }

  async function installedTokens(merchant: TestMerchant, scope: string) {
    const { callback, verifier, state } = await installAs(merchant, scope);
    return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
  }

  it('issues tokens for the consenting merchant with only the granted scopes; refresh tokens rotate', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const tokens = await installedTokens(merchant, 'products:read merchant:read');
    const claims = claimsOf(tokens.access_token);
    assert.equal(claims.merchant_id, merchant.merchantId);
    assert.equal(claims.client_id, app.client_id);
    assert.equal(claims.aud, 'urn:merx:api');
    assert.match(String(claims.sub), /^usr_/);
    assert.deepEqual(String(claims.scope).split(' ').sort(), ['merchant:read', 'products:read'], 'never products:write, which was not granted');
    assert.ok(tokens.refresh_token);

    const products = await call(stack, 'GET', '/api/v1/products', { token: tokens.access_token });
    assert.equal(products.status, 200);
    const write = await call(stack, 'POST', '/api/v1/products', {
      token: tokens.access_token,
      body: { sku: 'X-1', title: 'X', price: '1.00', currency: 'USD' },
    });
    assert.equal(write.status, 403);

    const installed = await call(stack, 'GET', '/api/v1/apps', { token: merchant.token });
    assert.deepEqual(
      installed.body.data.map((entry: { id: string; scopes: string[] }) => [entry.id, [...entry.scopes].sort()]),
      [[app.id, ['merchant:read', 'products:read']]],
    );

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'each use rotates the refresh token');
    assert.equal(claimsOf(refreshed.access_token).merchant_id, merchant.merchantId);
    assert.equal(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!)), 'invalid_grant', 'the used refresh token is dead');
  });

  it('revokes the whole grant when a refresh token is used twice', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const tokens = await installedTokens(merchant, 'products:read merchant:read');
    const rotated = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!)), 'invalid_grant');
    assert.equal(await oauthError(oidc.refreshTokenGrant(config, rotated.refresh_token!)), 'invalid_grant', 'the rotated token died with the grant');
    const event = await stack.events.waitFor((e) => e.topic === 'apps.grant_revoked' && e.merchant_id === merchant.merchantId);
    assert.equal(event.data.object.client_id, app.client_id);
    await untilRefused(rotated.access_token);
    const installed = await call(stack, 'GET', '/api/v1/apps', { token: merchant.token });
    assert.deepEqual(installed.body.data, []);
  });

  /** Revocation reaches every verifier within a second; poll rather than sleep. */
  async function untilRefused(accessToken: string) {
    const deadline = Date.now() + 3_000;
    for (;;) {
      const answer = await call(stack, 'GET', '/api/v1/products', { token: accessToken });
      if (answer.status === 401) return;
      assert.ok(Date.now() < deadline, `access token still accepted (${answer.status})`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('lets the merchant uninstall the app: its refresh and access tokens stop working', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const tokens = await installedTokens(merchant, 'products:read');
    const other = await createMerchant(stack);
    assert.equal((await call(stack, 'DELETE', `/api/v1/apps/${app.id}/grant`, { token: other.token })).status, 404, 'another merchant has nothing to revoke');
    const revoked = await call(stack, 'DELETE', `/api/v1/apps/${app.id}/grant`, { token: merchant.token });
    assert.equal(revoked.status, 204);
    assert.equal(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!)), 'invalid_grant');
    const event = await stack.events.waitFor((e) => e.topic === 'apps.grant_revoked' && e.merchant_id === merchant.merchantId);
    assert.deepEqual(
      { client_id: event.data.object.client_id, merchant_id: event.data.object.merchant_id },
      { client_id: app.client_id, merchant_id: merchant.merchantId },
    );
    await untilRefused(tokens.access_token);
    assert.equal((await call(stack, 'DELETE', `/api/v1/apps/${app.id}/grant`, { token: merchant.token })).status, 404);
  });

  it('refuses a replayed authorization code and revokes what it issued', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const { callback, verifier, state } = await installAs(merchant, 'products:read');
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    assert.equal(await oauthError(oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state })), 'invalid_grant');
    assert.equal(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!)), 'invalid_grant');
  });

  it('answers access_denied when the merchant denies consent', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const { callback, state } = await installAs(merchant, 'products:read', 'abort');
    assert.equal(callback.searchParams.get('error'), 'access_denied');
    assert.equal(callback.searchParams.get('state'), state);
    assert.equal(callback.searchParams.get('code'), null);
  });

  it('refuses plain PKCE, a missing PKCE, an unregistered redirect URI and scopes the app did not register', async () => {
    const browser = new Browser(stack.baseUrl);
    const plain = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'products:read',
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'plain',
      state: 's',
    });
    const plainAnswer = await browser.request(plain.toString());
    assert.equal(new URL(plainAnswer.location!).searchParams.get('error'), 'invalid_request');

    const missing = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'products:read', state: 's' });
    assert.equal(new URL((await browser.request(missing.toString())).location!).searchParams.get('error'), 'invalid_request');

    const { url } = await authorizationRequest('products:read', { redirect_uri: 'https://evil.example/callback' });
    const mismatch = await browser.request(url.toString());
    assert.equal(mismatch.status, 400, 'never redirected to an unregistered URI');
    assert.equal(mismatch.location, undefined);
    assert.equal(JSON.parse(mismatch.text).error, 'invalid_redirect_uri');

    const tooMuch = await authorizationRequest('products:read api_keys:write');
    assert.equal(new URL((await browser.request(tooMuch.url.toString())).location!).searchParams.get('error'), 'invalid_scope');
  });

  it('slows an account down after repeated wrong passwords: growing locks, during which even the right password waits', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const request = await authorizationRequest('products:read');
    const browser = new Browser(stack.baseUrl);
    let page = await browser.navigate(request.url.toString());
    const attempt = async (password: string) => {
      const answer = await browser.navigate(formAction(page.text, '/login'), {
        method: 'POST',
        form: { csrf: hiddenField(page.text, 'csrf'), email: merchant.ownerEmail, password },
      });
      if (answer.status !== 303) page = answer;
      return answer;
    };
    for (let failure = 1; failure <= 5; failure += 1) assert.equal((await attempt('wrong password, guess ' + failure)).status, 401, `free failure ${failure}`);
    // The suite's stacks lock for 3 s first (E2E_SIGNIN_ENV), long enough to see on a busy machine.
    const sixth = await attempt('wrong password, guess 6');
    assert.equal(sixth.status, 401, 'the sixth failure is checked, and locks the account');
    const locked = await attempt(merchant.ownerPassword);
    assert.equal(locked.status, 429, 'while locked, not even the right password is checked');
    const firstLock = Number(locked.headers.get('retry-after'));
    assert.ok(firstLock >= 1 && firstLock <= 3, `Retry-After ${firstLock}`);
    assert.match(locked.text, /Too many failed sign-in attempts\. Try again in \d seconds?\./);
    await new Promise((resolve) => setTimeout(resolve, firstLock * 1_000 + 100)); // the lock's own length: nothing to poll
    assert.equal((await attempt('wrong password, guess 7')).status, 401);
    const longer = await attempt(merchant.ownerPassword);
    assert.equal(longer.status, 429);
    const secondLock = Number(longer.headers.get('retry-after'));
    assert.ok(secondLock > 3 && secondLock <= 6, `each further failure doubles the lock: Retry-After ${secondLock}`);
    await new Promise((resolve) => setTimeout(resolve, secondLock * 1_000 + 100));
    const signedIn = await attempt(merchant.ownerPassword);
    assert.equal(signedIn.status, 200, 'after the lock the right password works: the consent page');
    assert.match(signedIn.text, /Allow Shelf Sync/);
  });

  it('still runs client credentials for API keys through the same provider', async () => {
    const merchant = await createMerchant(stack);
    const keyConfig = await oidc.discovery(new URL(`${stack.baseUrl}/oauth`), merchant.clientId, undefined, oidc.ClientSecretBasic(merchant.apiKey), {
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await oidc.clientCredentialsGrant(keyConfig, { scope: 'products:read' });
    const claims = claimsOf(tokens.access_token);
    assert.equal(claims.merchant_id, merchant.merchantId);
    assert.equal(claims.scope, 'products:read');
    assert.equal(claims.client_id, merchant.clientId);
  });

  it('validates app registration and keeps it operator-only', async () => {
    const operator = { authorization: `Bearer ${stack.operatorToken}` };
    assert.equal((await call(stack, 'POST', '/admin/v1/apps', { body: { name: 'x', redirect_uris: [REDIRECT_URI], scopes: ['products:read'] } })).status, 401);
    const invalid = await call(stack, 'POST', '/admin/v1/apps', {
      headers: operator,
      body: { name: '', redirect_uris: ['http://example.com/cb'], scopes: ['everything'] },
    });
    assert.equal(invalid.status, 422);
    assert.deepEqual(invalid.body.errors.map((e: { field: string }) => e.field).sort(), ['name', 'scopes[0]']);
    // The redirect URI policy (https outside loopback) is judged once the structure holds.
    const plainHttp = await call(stack, 'POST', '/admin/v1/apps', {
      headers: operator,
      body: { name: 'Ledger', redirect_uris: ['http://example.com/cb'], scopes: ['products:read'] },
    });
    assert.equal(plainHttp.status, 422);
    assert.deepEqual(
      plainHttp.body.errors.map((e: { field: string }) => e.field),
      ['redirect_uris[0]'],
    );
  });
});
