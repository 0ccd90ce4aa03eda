import assert from 'node:assert/strict';
import { call, createMerchant, issueToken, sharedStack, type Stack, type TestMerchant } from '../src/harness/index.js';

/** Audit entries arrive asynchronously (after the event is published); wait for a bounded time. */
export async function auditEntriesOf(stack: Stack, token: string, query: string, expected: (entries: any[]) => boolean, timeoutMs = 10_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const page = await call(stack, 'GET', `/api/v1/audit?limit=100${query}`, { token });
    assert.equal(page.status, 200, page.text);
    if (expected(page.body.data)) return page.body.data;
    if (Date.now() > deadline)
      throw new Error(
        `audit entries for ${query} did not arrive within ${timeoutMs} ms: ${JSON.stringify(page.body.data.map((e: { action: string }) => e.action))}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('audit log through the gateway', () => {
  let stack: Stack;
  let merchant: TestMerchant;
  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  it('records every change of a product, in order, with who, which request and what changed', async () => {
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku: 'AUD-1', title: 'Audited', price: '3.00', currency: 'USD' },
    });
    const updated = await call(stack, 'PATCH', `/api/v1/products/${created.body.id}`, { token: merchant.token, body: { price: '4.00' } });
    const deleted = await call(stack, 'DELETE', `/api/v1/products/${created.body.id}`, { token: merchant.token });
    const entries = await auditEntriesOf(stack, merchant.token, `&resource_id=${created.body.id}`, (found) => found.length === 3);
    assert.deepEqual(
      entries.map((e) => e.action),
      ['products.deleted', 'products.updated', 'products.created'],
    );
    assert.deepEqual(
      entries.map((e) => e.request_id),
      [deleted, updated, created].map((r) => r.headers.get('x-request-id')),
    );
    assert.deepEqual(entries[1].changes, { before: { price: '3.00' }, after: { price: '4.00' } });
    for (const entry of entries) assert.deepEqual(entry.actor, { type: 'api_key', id: merchant.clientId });
    assert.ok(entries[2].ip, 'the client address travels with the event');
    const one = await call(stack, 'GET', `/api/v1/audit/${entries[0].id}`, { token: merchant.token });
    assert.deepEqual(one.body, entries[0]);
    const verify = await call(stack, 'GET', '/api/v1/audit/verify', { token: merchant.token });
    assert.equal(verify.body.valid, true);
    assert.ok(verify.body.entries_checked >= 5, 'merchant and key provisioning are in the log too');
  });

  it('records the address the gateway saw, not one a client writes in X-Forwarded-For (no trusted proxies by default)', async () => {
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      headers: { 'x-forwarded-for': '203.0.113.66' },
      body: { sku: 'AUD-SPOOF', title: 'Spoofed', price: '3.00', currency: 'USD' },
    });
    assert.equal(created.status, 201, created.text);
    const [entry] = await auditEntriesOf(stack, merchant.token, `&resource_id=${created.body.id}`, (found) => found.length === 1);
    assert.match(entry.ip, /^(127\.0\.0\.1|::ffff:127\.0\.0\.1|::1)$/, 'the socket peer, since the gateway trusts no proxy');
  });

  it('records token issuance and refused credentials of the merchant (auth.token_issued, auth.denied)', async () => {
    const wrongSecret = `${merchant.clientId}_${'Z'.repeat(32)}`;
    const refused = await fetch(`${stack.baseUrl}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${merchant.clientId}:${wrongSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    assert.equal(refused.status, 401);
    const [denied] = await auditEntriesOf(stack, merchant.token, '&action=auth.denied', (found) => found.length === 1);
    assert.deepEqual(denied.resource, { type: 'auth_attempt', id: merchant.clientId });
    assert.equal(denied.changes.after.reason, 'invalid_client');
    assert.equal(denied.request_id, refused.headers.get('x-request-id'));
    assert.ok(!JSON.stringify(denied).includes(wrongSecret), 'the presented secret is never recorded');
    const issued = await auditEntriesOf(stack, merchant.token, '&action=auth.token_issued', (found) => found.length >= 1);
    assert.deepEqual(issued[0].actor, { type: 'api_key', id: merchant.clientId });
    assert.equal(issued[0].changes.after.grant_type, 'client_credentials');
  });

  it('offers no way to change or delete an entry, and shows nothing to another tenant', async () => {
    await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: { sku: 'AUD-2', title: 'x', price: '1.00', currency: 'USD' } });
    const [entry] = await auditEntriesOf(stack, merchant.token, '&action=products.created', (found) => found.length === 1);
    for (const method of ['DELETE', 'PATCH', 'PUT']) {
      const response = await call(stack, method, `/api/v1/audit/${entry.id}`, { token: merchant.token, ...(method === 'DELETE' ? {} : { body: {} }) });
      assert.equal(response.status, 405, method);
    }
    const other = await createMerchant(stack);
    assert.equal((await call(stack, 'GET', `/api/v1/audit/${entry.id}`, { token: other.token })).status, 404);
    const theirs = await call(stack, 'GET', '/api/v1/audit?limit=100', { token: other.token });
    assert.ok(!theirs.text.includes(merchant.merchantId));
    const readOnly = await issueToken(stack, merchant.apiKey, 'products:read');
    assert.equal((await call(stack, 'GET', '/api/v1/audit', { token: readOnly })).status, 403);
  });
});
