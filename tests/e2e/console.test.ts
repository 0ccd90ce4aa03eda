import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { WebhookReceiver } from '@merx/webhooks/testing';
import {
  call,
  ConsoleBrowser,
  createMerchant,
  eventually,
  issueToken,
  screenshotDir,
  sharedStack,
  stackMode,
  type Stack,
  type TestMerchant,
} from '../src/harness/index.js';

/**
 * The merchant console in a real browser (Debian's Chromium through playwright-core) against a
 * real Merx in this run's mode: sign-in through Merx's own login page, the first API key, webhook
 * failures into dead letters and back out, the audit chain, CSRF and session rules, and an
 * axe-core scan of every page.
 */
describe(`the merchant console in Chromium (${stackMode()} mode)`, function () {
  this.timeout(180_000);
  let stack: Stack;
  const browsers: ConsoleBrowser[] = [];
  const receivers: WebhookReceiver[] = [];

  before(async function () {
    this.timeout(120_000);
    stack = await sharedStack();
  });
  after(async () => {
    await Promise.all(browsers.splice(0).map((browser) => browser.close()));
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });

  const PASSWORD = 'console test password 0123';

  async function merchantWithOwner(overrides: Record<string, unknown> = {}): Promise<TestMerchant> {
    return createMerchant(stack, { owner: { email: `console-${randomBytes(5).toString('hex')}@example.com`, password: PASSWORD }, ...overrides });
  }

  async function signedInBrowser(merchant: TestMerchant, start = '/console'): Promise<ConsoleBrowser> {
    const browser = await ConsoleBrowser.open(stack.baseUrl);
    browsers.push(browser);
    await browser.signIn(merchant.ownerEmail, PASSWORD, start);
    return browser;
  }

  async function receiver(): Promise<WebhookReceiver> {
    const started = await WebhookReceiver.start();
    receivers.push(started);
    return started;
  }

  const ownerUserId = async (merchant: TestMerchant): Promise<string> => {
    const entries = await call(stack, 'GET', '/api/v1/audit?action=auth.token_issued&limit=100', { token: merchant.token });
    const byUser = entries.body.data.find((entry: { actor: { type: string } }) => entry.actor.type === 'user');
    assert.ok(byUser, 'a token issued to the signed-in user is in the audit log');
    return byUser.actor.id;
  };

  it('signs the owner in on the Merx login page without a consent screen and keeps every token on the server', async () => {
    const merchant = await merchantWithOwner();
    const browser = await signedInBrowser(merchant);
    assert.equal(new URL(browser.page.url()).pathname, '/console');
    assert.match(await browser.text('h1'), /^Welcome, /);
    const cookies = await browser.context.cookies(`${stack.baseUrl}/console`);
    const session = cookies.find((cookie) => cookie.name === 'merx_console_session');
    assert.ok(session, 'a session cookie');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Lax');
    assert.equal(session.path, '/console');
    assert.equal(session.secure, false, 'plain http is allowed on localhost only');
    assert.equal(session.expires, -1, 'a browser-session cookie');
    const visible = cookies.filter((cookie) => cookie.path.startsWith('/console')).map((cookie) => cookie.name);
    assert.deepEqual(visible, ['merx_console_session'], 'the browser holds the session id and nothing else');
    const html = await browser.page.content();
    assert.doesNotMatch(html, /eyJ[A-Za-z0-9_-]{10,}\./, 'no JWT in the page');
    assert.equal(await browser.page.evaluate<number>('localStorage.length + sessionStorage.length'), 0);
    await browser.screenshot('overview');
  });

  it('creates an API key with chosen scopes, copies its secret once, and the key works from outside the browser', async () => {
    const merchant = await merchantWithOwner();
    const browser = await signedInBrowser(merchant, '/console/api-keys');
    await browser.page.getByRole('link', { name: 'Create API key' }).click();
    // Submitted without a name: the API's problem is shown next to the field, in plain words.
    await browser.page.getByRole('button', { name: 'Create API key' }).click();
    assert.match(await browser.text('#field-name-error'), /name/i);
    assert.equal(await browser.page.getAttribute('#field-name', 'aria-invalid'), 'true');
    assert.match(await browser.text('#error-summary'), /could not be saved/);

    await browser.page.getByLabel('Name').fill('Storefront backend');
    await browser.page.getByLabel('products:read').check();
    await browser.page.getByLabel('products:write').check();
    await browser.page.getByRole('button', { name: 'Create API key' }).click();
    assert.match(await browser.text('h1'), /API key "Storefront backend" created/);
    assert.match(await browser.text('.secret .warning'), /only time/);
    const shown = await browser.page.inputValue('#api-key-secret');
    assert.match(shown, /^mx_test_[A-Za-z0-9]+_[A-Za-z0-9]+$/);
    await browser.page.getByRole('button', { name: 'Copy' }).click();
    await eventually(
      () => browser.text('.copy-status'),
      (text) => text.includes('Copied'),
      'the copy confirmation',
    );
    const copied = await browser.page.evaluate<string>('navigator.clipboard.readText()');
    assert.equal(copied, shown, 'the clipboard holds the secret');
    await browser.screenshot('api-key-created');

    // Outside the browser: the copied key gets a token and creates a product.
    const token = await issueToken(stack, copied);
    const product = await call(stack, 'POST', '/api/v1/products', {
      token,
      body: { sku: `CONSOLE-${randomBytes(3).toString('hex')}`, title: 'Made with a console key', price: '9.99', currency: 'USD' },
    });
    assert.equal(product.status, 201, product.text);
    const refused = await call(stack, 'GET', '/api/v1/audit', { token });
    assert.equal(refused.status, 403, 'the key holds only the scopes chosen');

    await browser.goto('/console/api-keys');
    assert.doesNotMatch(await browser.page.content(), new RegExp(copied.split('_')[3]!), 'the secret is never shown again');
    assert.match(await browser.text('table'), /Storefront backend/);

    // The audit log names the signed-in user, not a key, as the one who made the key.
    const created = await eventually(
      () => call(stack, 'GET', '/api/v1/audit?action=api_keys.created&limit=10', { token: merchant.token }),
      (answer) => answer.body.data.some((entry: { changes: { after: { name?: string } } }) => entry.changes.after?.name === 'Storefront backend'),
      'the key creation in the audit log',
    );
    const entry = created.body.data.find((candidate: { changes: { after: { name?: string } } }) => candidate.changes.after?.name === 'Storefront backend');
    assert.equal(entry.actor.type, 'user');
    assert.equal(entry.actor.id, await ownerUserId(merchant));

    // Revoke with confirmation: the key stops working.
    const keyId = entry.resource.id as string;
    await browser.goto(`/console/api-keys/${keyId}/revoke`);
    assert.match(await browser.text(), /cannot be undone/);
    await browser.page.getByRole('button', { name: 'Revoke key' }).click();
    assert.match(await browser.text('.notice'), /revoked/);
    await eventually(
      async () => (await fetch(`${stack.baseUrl}/api/v1/products`, { headers: { authorization: `Bearer ${token}` } })).status,
      (status) => status === 401,
      "the revoked key's token refused",
    );
  });

  it('paginates long lists', async () => {
    const merchant = await merchantWithOwner();
    for (let index = 0; index < 21; index += 1) {
      const created = await call(stack, 'POST', '/api/v1/api-keys', { token: merchant.token, body: { name: `Key ${index}`, scopes: ['products:read'] } });
      assert.equal(created.status, 201, created.text);
    }
    const browser = await signedInBrowser(merchant, '/console/api-keys');
    assert.equal(await browser.page.locator('tbody tr').count(), 20);
    await browser.page.getByRole('link', { name: 'Next page' }).click();
    assert.equal(await browser.page.locator('tbody tr').count(), 2, 'the 22nd key (the first one) on the second page');
    assert.ok(await browser.page.getByRole('link', { name: 'First page' }).isVisible());
  });

  it('subscribes a loopback receiver, sees it fail into the dead letters with payload and response code, and replays it once fixed', async () => {
    const merchant = await merchantWithOwner();
    const endpoint = await receiver();
    endpoint.answerWith(() => ({ status: 500, body: 'receiver is down for maintenance' }));
    const browser = await signedInBrowser(merchant, '/console/webhooks');
    assert.match(await browser.text('.empty-state'), /Add an endpoint/);
    await browser.page.getByRole('link', { name: 'Add an endpoint' }).first().click();
    await browser.page.getByLabel('Endpoint URL').fill(endpoint.url());
    await browser.page.getByLabel('*').uncheck();
    await browser.page.getByLabel('products', { exact: true }).check();
    await browser.page.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match(await browser.page.inputValue('#signing-secret'), /^whsec_/);
    await browser.page.getByRole('link', { name: 'Go to the endpoint' }).click();
    const subscriptionId = new URL(browser.page.url()).pathname.split('/').pop()!;
    assert.match(subscriptionId, /^wh_/);

    const sku = `DEAD-${randomBytes(3).toString('hex')}`;
    const product = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku, title: 'Never delivered', price: '1.00', currency: 'EUR' },
    });
    assert.equal(product.status, 201);

    // Retries run on the e2e schedule (seconds); the dead letter shows on the page once they are spent.
    await eventually(
      async () => {
        await browser.goto(`/console/webhooks/dead-letters?subscription_id=${subscriptionId}`);
        return browser.page.locator('tbody tr').count();
      },
      (rows) => rows === 1,
      'the dead letter on the dead letters page',
      40_000,
    );
    await browser.page.locator('tbody tr a').first().click();
    assert.match(await browser.text('dl.facts'), /Last response code\s*500/);
    assert.match(await browser.text('pre.json'), new RegExp(sku), 'the payload names the product');
    const deadLetterUrl = browser.page.url();
    await browser.screenshot('dead-letter');

    // Every attempt, with its status code, duration and the response excerpt.
    await browser.page.getByRole('link', { name: 'See every attempt' }).click();
    assert.ok((await browser.page.locator('tbody tr').count()) >= 2, 'each retry is an attempt');
    assert.match(await browser.text('table'), /500/);
    assert.match(await browser.text('table'), /receiver is down for maintenance/);

    // Failing for a whole retry window switched the endpoint off; the dead letter says so and offers to switch it back on.
    endpoint.answerWith(() => ({ status: 200, body: 'ok' }));
    await browser.page.goto(deadLetterUrl);
    assert.match(await browser.text('#endpoint-disabled'), /disabled/);
    await browser.page.getByRole('button', { name: 'Enable endpoint' }).click();
    await browser.page.waitForURL(/\/console\/webhooks\/dead-letters\/del_/);
    assert.match(await browser.text('.notice'), /enabled/);
    await browser.page.getByRole('button', { name: 'Replay' }).click();
    await browser.page.waitForURL(/\/console\/webhooks\/deliveries\/del_/);
    await eventually(
      async () => {
        await browser.page.reload();
        return browser.text('dl.facts');
      },
      (text) => /Status\s*succeeded/.test(text),
      'the replayed delivery succeeding',
      30_000,
    );
    await browser.screenshot('delivery-replayed');
    await endpoint.waitUntil(
      (received) => received.filter((request) => request.json?.data?.object?.sku === sku && request.headers['webhook-id']).length >= 3,
      15_000,
      'the attempts and the replay',
    );

    // The subscription page: 24-hour stats drawn as a chart, recent deliveries.
    await browser.goto(`/console/webhooks/${subscriptionId}`);
    const chart = browser.page.getByRole('img', { name: /Last 24 hours: \d+ attempts/ });
    assert.ok(await chart.isVisible(), 'the stats chart with its accessible name');
    assert.match(await browser.text('.stats-grid'), /Success rate/);
    await browser.screenshot('webhook-subscription');

    // Replay by filter: another failure, then "Replay all matching" for this subscription.
    endpoint.answerWith(() => ({ status: 503, body: 'down again' }));
    const second = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku: `${sku}-2`, title: 'Second', price: '2.00', currency: 'EUR' },
    });
    assert.equal(second.status, 201);
    await eventually(
      async () => {
        await browser.goto(`/console/webhooks/dead-letters?subscription_id=${subscriptionId}`);
        return browser.page.locator('tbody tr').count();
      },
      (rows) => rows === 1,
      'the second dead letter',
      40_000,
    );
    endpoint.answerWith(() => ({ status: 200 }));
    // Bulk replay skips disabled endpoints: switched on again from its page first.
    await browser.goto(`/console/webhooks/${subscriptionId}`);
    await browser.page.getByRole('button', { name: 'Enable', exact: true }).click();
    assert.match(await browser.text('.notice'), /enabled/);
    await browser.goto(`/console/webhooks/dead-letters?subscription_id=${subscriptionId}`);
    await browser.page.getByRole('button', { name: 'Replay all matching dead letters' }).click();
    assert.match(await browser.text('.notice'), /1 dead letter was sent again/);
    await endpoint.waitUntil((received) => received.some((request) => request.json?.data?.object?.sku === `${sku}-2`), 15_000, 'the bulk replay');
    const remaining = await call(stack, 'GET', `/api/v1/webhooks/dead-letters?subscription_id=${subscriptionId}`, { token: merchant.token });
    assert.equal(remaining.body.data.length, 0, 'no dead letter left');
  });

  it('verifies the audit chain with a button and shows the result', async () => {
    const merchant = await merchantWithOwner();
    const browser = await signedInBrowser(merchant, '/console/audit');
    await eventually(
      async () => {
        await browser.page.reload();
        return browser.page.locator('tbody tr').count();
      },
      (rows) => rows >= 2,
      'audit entries on the page',
    );
    await browser.page.getByRole('button', { name: 'Verify chain' }).click();
    assert.match(await browser.text('#verify-result'), /The audit chain verifies/);
    assert.match(await browser.text('#verify-result'), /entries checked/);
    await browser.screenshot('audit-verified');
    // Filters: only the console's own sign-in token issuance.
    await browser.goto('/console/audit');
    await browser.page.getByLabel('Action').fill('auth.token_issued');
    await browser.page.getByRole('button', { name: 'Apply filters' }).click();
    assert.match(browser.page.url(), /action=auth.token_issued/);
    const actions = await browser.page.locator('tbody tr td:nth-child(3)').allTextContents();
    assert.ok(actions.length > 0 && actions.every((action) => action === 'auth.token_issued'), actions.join(','));
  });

  it("refuses a form posted without the CSRF token or from another origin, and shows another merchant's ids as not found", async () => {
    const merchant = await merchantWithOwner();
    const other = await merchantWithOwner();
    const browser = await signedInBrowser(merchant, '/console/api-keys/new');
    const csrf = await browser.page.inputValue('input[name="_csrf"]');
    const keysBefore = (await call(stack, 'GET', '/api/v1/api-keys', { token: merchant.token })).body.data.length;

    const post = (body: string, headers: Record<string, string> = {}) =>
      browser.context.request.post(`${stack.baseUrl}/console/api-keys`, {
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        data: body,
        maxRedirects: 0,
      });
    const withoutToken = await post('name=Forged&scopes=products%3Aread');
    assert.equal(withoutToken.status(), 403);
    assert.match(await withoutToken.text(), /could not be accepted/);
    const wrongToken = await post(`name=Forged&scopes=products%3Aread&_csrf=${'x'.repeat(csrf.length)}`);
    assert.equal(wrongToken.status(), 403);
    const otherOrigin = await post(`name=Forged&scopes=products%3Aread&_csrf=${encodeURIComponent(csrf)}`, { origin: 'http://evil.example' });
    assert.equal(otherOrigin.status(), 403, 'a page of another origin is refused even with the token');
    const keysAfter = (await call(stack, 'GET', '/api/v1/api-keys', { token: merchant.token })).body.data.length;
    assert.equal(keysAfter, keysBefore, 'no key was made');

    // The other merchant's subscription and key: not found, exactly as if they did not exist.
    const theirs = await call(stack, 'POST', '/api/v1/webhooks/subscriptions', {
      token: other.token,
      body: { url: 'http://127.0.0.1:9/hooks', topics: ['*'] },
    });
    assert.equal(theirs.status, 201, theirs.text);
    const theirKey = (await call(stack, 'GET', '/api/v1/api-keys', { token: other.token })).body.data[0];
    for (const path of [
      `/console/webhooks/${theirs.body.id}`,
      `/console/api-keys/${theirKey.id}/revoke`,
      `/console/webhooks/deliveries/del_01aaaaaaaaaaaaaaaaaaaaaaaa`,
    ]) {
      const response = await browser.goto(path);
      assert.equal(response.status(), 404, path);
      assert.match(await browser.text('h1'), /Not found/);
    }
    const revoke = await browser.context.request.post(`${stack.baseUrl}/console/api-keys/${theirKey.id}/revoke`, { form: { _csrf: csrf }, maxRedirects: 0 });
    assert.equal(revoke.status(), 404);
    const stillActive = await call(stack, 'GET', `/api/v1/api-keys/${theirKey.id}`, { token: other.token });
    assert.equal(stillActive.body.revoked_at, null, "the other merchant's key is untouched");
  });

  it('signs out: the session is destroyed and its cookie no longer opens any page', async () => {
    const merchant = await merchantWithOwner();
    const browser = await signedInBrowser(merchant, '/console/profile');
    const session = (await browser.context.cookies(`${stack.baseUrl}/console`)).find((cookie) => cookie.name === 'merx_console_session')!;
    await browser.page.getByRole('button', { name: 'Sign out' }).click();
    assert.match(await browser.text('h1'), /You are signed out/);
    assert.equal(
      (await browser.context.cookies(`${stack.baseUrl}/console`)).find((cookie) => cookie.name === 'merx_console_session'),
      undefined,
      'the cookie is cleared',
    );
    // The old session id, replayed by hand, opens nothing.
    const replayed = await fetch(`${stack.baseUrl}/console/profile`, { headers: { cookie: `merx_console_session=${session.value}` }, redirect: 'manual' });
    assert.equal(replayed.status, 303);
    assert.match(replayed.headers.get('location') ?? '', /^\/console\/sign-in/);
    // Signing in again asks for the password again (prompt=login), whatever the provider's session.
    await browser.goto('/console');
    assert.match(browser.page.url(), /\/oauth\/interaction\//);
  });

  it("checks a rule's CEL condition as it is typed, naming the position of the error", async () => {
    const merchant = await merchantWithOwner();
    const browser = await signedInBrowser(merchant, '/console/rules/new');
    await browser.page.getByLabel('Name').fill('Large EUR orders');
    const condition = browser.page.getByLabel('Condition (CEL)');
    await condition.fill('data.total >= && data.currency == "EUR"');
    await eventually(
      () => browser.text('#condition-check'),
      (text) => /line 1, column \d+/.test(text),
      'the condition error with its position',
    );
    assert.equal(await condition.getAttribute('aria-invalid'), 'true');
    await browser.screenshot('rule-condition');
    await condition.fill('data.total >= 100.0 && data.currency == "EUR"');
    await eventually(
      () => browser.text('#condition-check'),
      (text) => text === 'The condition is valid.',
      'the condition accepted',
    );
    await browser.page.getByRole('button', { name: 'Create rule' }).click();
    assert.match(await browser.text('.notice'), /Created/);
    const rules = await call(stack, 'GET', '/api/v1/rules', { token: merchant.token });
    assert.equal(rules.body.data[0].condition, 'data.total >= 100.0 && data.currency == "EUR"');
  });

  it('resets a sandbox only after the typed confirmation, and a live merchant cannot', async () => {
    const merchant = await merchantWithOwner();
    const browser = await signedInBrowser(merchant, '/console/sandbox');
    const button = browser.page.getByRole('button', { name: 'Reset sandbox data' });
    assert.equal(await button.isDisabled(), true, 'disabled until the words are typed');
    await browser.page.getByLabel(/Type "reset sandbox"/).fill('reset sandbox');
    assert.equal(await button.isDisabled(), false);
    await button.click();
    assert.match(browser.page.url(), /\/console\/sandbox\?reset=/);
    assert.match(await browser.text('.notice'), /Reset \S+ is (running|completed)/);

    const live = await merchantWithOwner({ mode: 'live' });
    const liveBrowser = await signedInBrowser(live, '/console/sandbox');
    assert.match(await liveBrowser.text(), /live.*account: its data cannot be reset/);
    assert.equal(await liveBrowser.page.getByRole('button', { name: 'Reset sandbox data' }).count(), 0);
    // Even a hand-made POST is refused by the API, and said in plain words.
    const csrf = await liveBrowser.page.locator('input[name="_csrf"]').first().inputValue();
    const forced = await liveBrowser.context.request.post(`${stack.baseUrl}/console/sandbox/reset`, {
      form: { _csrf: csrf, confirmation: 'reset sandbox' },
      maxRedirects: 0,
    });
    assert.equal(forced.status(), 409);
    assert.match(await forced.text(), /sandbox/i);
  });

  it('passes an axe-core scan on every page with no serious or critical violation, under 200 KB of script, without a policy violation', async function () {
    this.timeout(300_000);
    const merchant = await merchantWithOwner();
    const api = (method: string, path: string, body?: unknown) => call(stack, method, path, { token: merchant.token, ...(body === undefined ? {} : { body }) });
    const subscription = (await api('POST', '/api/v1/webhooks/subscriptions', { url: 'http://127.0.0.1:9/hooks', topics: ['products'] })).body;
    await api('POST', '/api/v1/products', { sku: `AXE-${randomBytes(3).toString('hex')}`, title: 'Scanned', price: '3.00', currency: 'USD' });
    const source = (await api('POST', '/api/v1/sources', { name: 'Storefront', kind: 'storefront' })).body;
    const destination = (await api('POST', '/api/v1/destinations', { name: 'ERP', url: 'http://127.0.0.1:9/erp' })).body;
    const rule = (await api('POST', '/api/v1/rules', { name: 'Everything', condition: 'true', action: 'forward' })).body;
    const connection = (await api('POST', '/api/v1/connections', { source_id: source.id, destination_id: destination.id, rule_ids: [rule.id] })).body;
    const event = await eventually(
      () => api('GET', '/api/v1/events?topic=products'),
      (answer) => answer.body.data.length > 0,
      'the product event',
    );
    const delivery = await eventually(
      () => api('GET', `/api/v1/webhooks/deliveries?subscription_id=${subscription.id}`),
      (answer) => answer.body.data.length > 0,
      'a delivery',
    );
    const keyId = (await api('GET', '/api/v1/api-keys')).body.data[0].id;

    const browser = await signedInBrowser(merchant);
    const pages = [
      '/console',
      '/console/profile',
      '/console/api-keys',
      '/console/api-keys/new',
      `/console/api-keys/${keyId}/revoke`,
      '/console/apps',
      '/console/webhooks',
      '/console/webhooks/new',
      `/console/webhooks/${subscription.id}`,
      `/console/webhooks/${subscription.id}/delete`,
      '/console/webhooks/deliveries',
      `/console/webhooks/deliveries/${delivery.body.data[0].id}`,
      '/console/webhooks/dead-letters',
      '/console/events',
      `/console/events/${event.body.data[0].id}`,
      '/console/audit',
      '/console/audit/verify',
      '/console/sources',
      '/console/sources/new',
      `/console/sources/${source.id}`,
      `/console/sources/${source.id}/edit`,
      '/console/destinations',
      '/console/destinations/new',
      `/console/destinations/${destination.id}`,
      '/console/rules',
      '/console/rules/new',
      `/console/rules/${rule.id}`,
      `/console/rules/${rule.id}/edit`,
      '/console/connections',
      '/console/connections/new',
      `/console/connections/${connection.id}`,
      `/console/connections/${connection.id}/delete`,
      '/console/sandbox',
      '/console/no-such-page',
    ];
    const problems: string[] = [];
    for (const path of pages) {
      await browser.goto(path);
      for (const violation of await browser.seriousAccessibilityViolations()) {
        problems.push(`${path}: ${violation.impact} ${violation.id} (${violation.help}) at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
      }
      const script = await browser.scriptBytes();
      if (script > 200 * 1024) problems.push(`${path}: ${script} bytes of script`);
      const title = await browser.page.title();
      if (!title.endsWith('· Merx console')) problems.push(`${path}: title "${title}"`);
    }
    // Pages with errors: a form answered with field problems.
    await browser.goto('/console/webhooks/new');
    await browser.page.getByLabel('Endpoint URL').fill('not a url');
    await browser.page.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match(await browser.text('#field-url-error'), /url/i);
    for (const violation of await browser.seriousAccessibilityViolations()) problems.push(`webhook form with errors: ${violation.id}`);
    assert.deepEqual(problems, [], problems.join('\n'));
    assert.deepEqual(await browser.policyViolations(), [], 'no Content-Security-Policy violation on any page');
  });

  it('works with the keyboard alone: skip link, navigation and forms', async () => {
    const merchant = await merchantWithOwner();
    const browser = await signedInBrowser(merchant);
    await browser.page.keyboard.press('Tab');
    assert.equal(await browser.page.evaluate<string>('document.activeElement.textContent'), 'Skip to content');
    await browser.page.keyboard.press('Enter');
    assert.equal(await browser.page.evaluate<string>('document.activeElement.id'), 'main');
    // To the API keys link of the navigation and in.
    await browser.page.locator('nav.sidebar a', { hasText: 'API keys' }).focus();
    await browser.page.keyboard.press('Enter');
    await browser.page.waitForURL(/\/console\/api-keys$/);
    await browser.page.getByRole('link', { name: 'Create API key' }).focus();
    await browser.page.keyboard.press('Enter');
    await browser.page.waitForURL(/\/console\/api-keys\/new$/);
    await browser.page.getByLabel('Name').focus();
    await browser.page.keyboard.type('Typed key');
    await browser.page.keyboard.press('Tab');
    await browser.page.keyboard.press('Space');
    assert.equal(await browser.page.getByLabel('merchant:read').isChecked(), true, 'Tab reaches the first scope, Space checks it');
    await browser.page.keyboard.press('Enter');
    await browser.page.waitForSelector('#api-key-secret');
    assert.match(await browser.text('h1'), /Typed key/);
  });

  after(() => {
    process.stdout.write(`      console screenshots: ${screenshotDir}\n`);
  });
});
