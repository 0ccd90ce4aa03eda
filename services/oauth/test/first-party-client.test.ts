import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { CONSOLE_CLIENT_ID, scopeNames } from '@merx/contracts';
import { API_AUDIENCE, createJwksTokenVerifier, createLogger, createPgliteDb, MemoryBus, openPglite, type Db } from '@merx/kit';
import { Browser, formAction, hiddenField } from '@merx/kit/testing';
import { provisionMerchant, startOauth, type RunningOauth } from '../src/index.js';

const PUBLIC_ORIGIN = 'http://localhost:8080';
const ISSUER = `${PUBLIC_ORIGIN}/oauth`;
const CONSOLE_REDIRECT = `${PUBLIC_ORIGIN}/console/auth/callback`;
const APP_REDIRECT = 'http://127.0.0.1:9/callback';
const OPERATOR = randomBytes(32).toString('hex');
const CONSOLE_SECRET = randomBytes(32).toString('base64url');

describe('oauth: the console as a first-party client (PGlite)', function () {
  this.timeout(60_000);
  let db: Db;
  let close: () => Promise<void>;
  let oauth: RunningOauth;
  let bus: MemoryBus;
  let owner: { email: string; password: string; id: string; merchantId: string };

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
      console: { clientSecret: CONSOLE_SECRET, redirectUri: CONSOLE_REDIRECT },
    });
    url = oauth.url;
    const password = 'correct horse battery staple';
    const provisioned = await provisionMerchant(oauth.outbox, {
      name: 'First party',
      owner: { email: `owner-${randomBytes(4).toString('hex')}@example.com`, password },
    });
    owner = { email: provisioned.owner.email, password, id: provisioned.owner.id, merchantId: provisioned.merchant.id };
  });
  after(async () => {
    await oauth?.stop();
    await bus?.close();
    await close?.();
  });

  /** Requests on the service's own origin; URLs the provider builds from the public origin are mapped onto it. */
  const local = (url: string) => {
    const parsed = new URL(url, PUBLIC_ORIGIN);
    return `${parsed.pathname}${parsed.search}`;
  };

  /** Follows redirects inside the authorization server; stops at the first page or at a redirect leaving it. */
  async function follow(browser: Browser, url: string, init: { method?: string; form?: Record<string, string> } = {}) {
    let answer = await browser.request(local(url), init);
    for (let hops = 0; answer.location?.includes('/oauth/'); hops += 1) {
      assert.ok(hops < 10, 'too many redirects');
      answer = await browser.request(local(answer.location));
    }
    return answer;
  }

  function authorizationRequest(clientId: string, redirectUri: string, scope: string, extra: Record<string, string> = {}) {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      scope,
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    });
    return { url: `/oauth/auth?${query}`, verifier };
  }

  async function token(form: Record<string, string>, secret = CONSOLE_SECRET) {
    const response = await fetch(`${oauth.url}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${CONSOLE_CLIENT_ID}:${secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(form),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  }

  /** Signs the owner in on the login page of a console authorization request; returns where the browser was sent. */
  async function signInToConsole(browser: Browser) {
    const request = authorizationRequest(CONSOLE_CLIENT_ID, CONSOLE_REDIRECT, scopeNames.join(' '), { prompt: 'login' });
    const login = await follow(browser, request.url);
    assert.equal(login.status, 200, login.text);
    assert.match(login.text, /the Merx console/, 'the login page names the console');
    const landed = await follow(browser, formAction(login.text, '/login'), {
      method: 'POST',
      form: { csrf: hiddenField(login.text, 'csrf'), email: owner.email, password: owner.password },
    });
    return { landed, verifier: request.verifier };
  }

  it('signs a user in without a consent page and issues a token naming the user with every merchant scope', async () => {
    const browser = new Browser(oauth.url);
    const { landed, verifier } = await signInToConsole(browser);
    assert.ok(
      landed.location?.startsWith(`${CONSOLE_REDIRECT}?`),
      `straight back to the console, no consent page: ${landed.status} ${landed.location} ${landed.text.slice(0, 200)}`,
    );
    const callback = new URL(landed.location!);
    assert.equal(callback.searchParams.get('state'), 'st');
    assert.equal(callback.searchParams.get('iss'), ISSUER, 'RFC 9207 issuer in the response');
    const exchanged = await token({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: CONSOLE_REDIRECT,
      code_verifier: verifier,
    });
    assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    const claims = decodeJwt(exchanged.body.access_token);
    assert.equal(claims.sub, owner.id, 'the user is the subject, so the audit log names them');
    assert.equal(claims.merchant_id, owner.merchantId);
    assert.equal(claims.client_id, CONSOLE_CLIENT_ID);
    assert.deepEqual(String(claims.scope).split(' ').sort(), [...scopeNames].sort(), 'the owner holds every merchant scope');
    assert.ok(exchanged.body.refresh_token, 'a refresh token');
    const { rows } = await db.query('SELECT 1 FROM oauth.app_installations WHERE user_id = $1', [owner.id]);
    assert.equal(rows.length, 0, 'the console is no installed app');
  });

  it('rotates refresh tokens, and revoking one (sign-out) ends the grant', async () => {
    const { landed, verifier } = await signInToConsole(new Browser(oauth.url));
    const code = new URL(landed.location!).searchParams.get('code')!;
    const first = await token({ grant_type: 'authorization_code', code, redirect_uri: CONSOLE_REDIRECT, code_verifier: verifier });
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    assert.notEqual(refreshed.body.refresh_token, first.body.refresh_token, 'each refresh rotates');
    assert.equal(decodeJwt(refreshed.body.access_token).sub, owner.id);

    const revoked = await fetch(`${oauth.url}/oauth/token/revocation`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${CONSOLE_CLIENT_ID}:${CONSOLE_SECRET}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token: refreshed.body.refresh_token, token_type_hint: 'refresh_token' }),
    });
    assert.equal(revoked.status, 200);
    const afterSignOut = await token({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token });
    assert.equal(afterSignOut.status, 400);
    assert.equal(afterSignOut.body.error, 'invalid_grant', 'a signed-out session cannot be refreshed');
  });

  it('refuses the console client with a wrong secret, and a redirect URI other than its own', async () => {
    const wrong = await token({ grant_type: 'refresh_token', refresh_token: 'x' }, randomBytes(32).toString('base64url'));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'invalid_client');
    const elsewhere = authorizationRequest(CONSOLE_CLIENT_ID, 'http://localhost:8080/evil/callback', 'merchant:read');
    const answer = await new Browser(oauth.url).request(local(elsewhere.url));
    assert.equal(answer.status, 400);
    assert.match(answer.text, /redirect_uri/);
  });

  it('still asks for consent for a third-party app in the same browser session', async () => {
    const registered = await fetch(`${oauth.url}/admin/v1/apps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Third party', redirect_uris: [APP_REDIRECT], scopes: ['products:read'] }),
    });
    const app = (await registered.json()) as { client_id: string };
    const browser = new Browser(oauth.url);
    await signInToConsole(browser);
    // The provider session from the console sign-in is reused: no login page, but the consent page.
    const consent = await follow(browser, authorizationRequest(app.client_id, APP_REDIRECT, 'products:read').url);
    assert.equal(consent.status, 200, consent.text);
    assert.match(consent.text, /Allow Third party/);
    assert.equal(consent.location, undefined, 'no code without consent');
    // prompt=login: signing in to the console again asks for the password again, whatever session the browser holds.
    const again = await signInToConsole(browser);
    assert.ok(again.landed.location?.startsWith(`${CONSOLE_REDIRECT}?`));
  });
});
