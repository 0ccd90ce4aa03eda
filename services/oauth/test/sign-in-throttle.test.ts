import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { API_AUDIENCE, createJwksTokenVerifier, createLogger, createPgliteDb, MemoryBus, openPglite, type Db } from '@merx/kit';
import { Browser, formAction, hiddenField } from '@merx/kit/testing';
import { DEFAULT_SIGN_IN_THROTTLE } from '../src/domain/login-throttle.js';
import { provisionMerchant, startOauth, type RunningOauth } from '../src/index.js';

const ISSUER = 'http://localhost:8080/oauth';
const OPERATOR = randomBytes(32).toString('hex');
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

describe('sign-in throttle per client address, and the cap on concurrent password hashing (PGlite)', function () {
  this.timeout(60_000);
  let db: Db;
  let close: () => Promise<void>;
  let oauth: RunningOauth;
  let bus: MemoryBus;
  let clientId: string;

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
      // Three failures per address, then 30 s: long enough that the test never sees it end.
      signInThrottle: { account: DEFAULT_SIGN_IN_THROTTLE.account, address: { ...DEFAULT_SIGN_IN_THROTTLE.address, freeFailures: 3, firstLockSeconds: 30 } },
    });
    url = oauth.url;
    const registered = await fetch(`${oauth.url}/admin/v1/apps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Throttle test app', redirect_uris: [REDIRECT_URI], scopes: ['products:read'] }),
    });
    assert.equal(registered.status, 201);
    clientId = ((await registered.json()) as { client_id: string }).client_id;
  });
  after(async () => {
    await oauth?.stop();
    await bus?.close();
    await close?.();
  });

  /** A browser at `address` (X-Forwarded-For, as the gateway sends it) on the login page of a fresh authorization request. */
  async function loginPageFrom(address: string) {
    const browser = new Browser(oauth.url, { 'x-forwarded-for': address, 'x-forwarded-host': 'localhost:8080', 'x-forwarded-proto': 'http' });
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const page = await browser.navigate(
      `/oauth/auth?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, scope: 'products:read', state: 's', code_challenge: challenge, code_challenge_method: 'S256' })}`,
    );
    assert.equal(page.status, 200, page.text);
    const signIn = (email: string, password: string) =>
      browser.navigate(formAction(page.text, '/login'), { method: 'POST', form: { csrf: hiddenField(page.text, 'csrf'), email, password } });
    return { signIn };
  }

  it('locks an address that guesses across many accounts, before hashing, while other addresses sign in', async () => {
    const owner = await provisionMerchant(oauth.outbox, {
      name: 'Guarded',
      owner: { email: `owner-${randomBytes(4).toString('hex')}@example.com`, password: 'the right password, long enough' },
    });
    const attacker = await loginPageFrom('203.0.113.7');
    for (let guess = 0; guess < 3; guess += 1) assert.equal((await attacker.signIn(`victim-${guess}@example.com`, 'guess')).status, 401);
    assert.equal((await attacker.signIn(`victim-3@example.com`, 'guess')).status, 401, 'the fourth failure is checked, and locks the address');
    const refused = await attacker.signIn(owner.owner.email, 'the right password, long enough');
    assert.equal(refused.status, 429, 'the locked address is refused even with a right password');
    assert.ok(Number(refused.headers.get('retry-after')) > 20);

    const neighbour = await loginPageFrom('198.51.100.20');
    const allowed = await neighbour.signIn(owner.owner.email, 'the right password, long enough');
    assert.equal(allowed.status, 303, 'another address is unaffected: signed in, sent back to the authorization');
    assert.ok(allowed.location?.startsWith(`${ISSUER}/auth/`), allowed.location);
  });

  it('hashes at most two passwords at once and answers the overflow 503 at once, instead of queueing without bound', async () => {
    const pages = await Promise.all(Array.from({ length: 30 }, (_, i) => loginPageFrom(`192.0.2.${i + 1}`)));
    const answers = await Promise.all(pages.map((page, i) => page.signIn(`nobody-${i}@example.com`, 'wrong')));
    const statuses = answers.map((answer) => answer.status);
    assert.ok(
      statuses.every((status) => status === 401 || status === 503),
      String(statuses),
    );
    const busy = answers.filter((answer) => answer.status === 503);
    assert.ok(busy.length >= 30 - 2 - 16, `with 2 hashing and 16 waiting, at least 12 of 30 are turned away (got ${busy.length})`);
    assert.equal(busy[0]!.headers.get('retry-after'), '1');
    assert.match(busy[0]!.text, /Too many people are signing in right now/);
  });
});
