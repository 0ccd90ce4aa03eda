import assert from 'node:assert/strict';
import { createContractValidator } from '@merx/contracts';
import { WebhookReceiver } from '@merx/webhooks/testing';
import { call, createMerchant, eventually, issueToken, sharedStack, type Stack } from '../src/harness/index.js';

async function tokenStatus(stack: Stack, apiKey: string): Promise<{ status: number; error?: string }> {
  const clientId = apiKey.split('_').slice(0, 3).join('_');
  const response = await fetch(`${stack.baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  return { status: response.status, error: ((await response.json()) as { error?: string }).error };
}

describe('merchant suspension by the operator', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  it('kills every token of a suspended merchant within a second, refuses new ones, and lets a reactivated merchant in again', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const bystander = await createMerchant(stack);
    const operator = { authorization: `Bearer ${stack.operatorToken}` };
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: merchant.token })).status, 200);

    const suspended = await call(stack, 'PATCH', `/admin/v1/merchants/${merchant.merchantId}`, { headers: operator, body: { status: 'suspended' } });
    assert.equal(suspended.status, 200);
    assert.equal(suspended.body.status, 'suspended');
    const deadline = Date.now() + 1_000;
    let status = 200;
    while (status !== 401 && Date.now() < deadline) status = (await call(stack, 'GET', '/api/v1/products', { token: merchant.token })).status;
    assert.equal(status, 401, 'the token of a suspended merchant still works after one second');
    const refused = await call(stack, 'GET', '/api/v1/products', { token: merchant.token });
    assert.equal(refused.body.detail, 'the credential was revoked');
    assert.deepEqual(await tokenStatus(stack, merchant.apiKey), { status: 401, error: 'invalid_client' });
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: bystander.token })).status, 200, 'other merchants are untouched');

    const event = await stack.events.waitFor((e) => e.topic === 'merchants.standing_changed' && e.merchant_id === merchant.merchantId);
    assert.deepEqual(event.data.object, {
      object: 'merchant_standing',
      id: merchant.merchantId,
      mode: 'sandbox',
      plan: suspended.body.plan,
      status: 'suspended',
      version: suspended.body.standing_version,
      updated_at: suspended.body.updated_at,
    });
    assert.deepEqual(event.data.previous, { status: 'active' });
    assert.deepEqual(event.context?.actor, { type: 'operator', id: 'operator' });
    assert.equal(
      stack.events.seen.some((e) => e.topic === 'merchants.updated' && e.merchant_id === merchant.merchantId),
      false,
      "the operator's change is not a profile change",
    );

    const reactivated = await call(stack, 'PATCH', `/admin/v1/merchants/${merchant.merchantId}`, { headers: operator, body: { status: 'active' } });
    assert.equal(reactivated.body.status, 'active');
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: merchant.token })).status, 401, 'a token from before the suspension stays dead');
    // A new token is issued in a later second than the suspension, so it lives.
    await new Promise((resolve) => setTimeout(resolve, 1_100 - (Date.now() % 1_000)));
    const fresh = await issueToken(stack, merchant.apiKey);
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: fresh })).status, 200);
  });

  it('announces a re-plan as merchants.standing_changed to subscribers of that event, and the merchant API follows it', async function () {
    this.timeout(60_000);
    const merchant = await createMerchant(stack);
    const receiver = await WebhookReceiver.start();
    try {
      const subscription = await call(stack, 'POST', '/api/v1/webhooks/subscriptions', {
        token: merchant.token,
        body: { url: receiver.url(), topics: ['merchants.standing_changed'] },
      });
      assert.equal(subscription.status, 201, subscription.text);
      const profile = await eventually(
        () => call(stack, 'GET', '/api/v1/merchant', { token: merchant.token }),
        (response) => response.status === 200,
        'the merchants service knowing the merchant',
      );
      const replanned = await call(stack, 'PATCH', `/admin/v1/merchants/${merchant.merchantId}`, {
        headers: { authorization: `Bearer ${stack.operatorToken}` },
        body: { plan: 'scale' },
      });
      assert.equal(replanned.status, 200, replanned.text);

      const delivered = await receiver.waitFor((request) => JSON.parse(request.body).topic === 'merchants.standing_changed');
      const body = JSON.parse(delivered.body);
      assert.deepEqual(createContractValidator().validateWebhook({ body: delivered.body }), []);
      assert.deepEqual(
        [body.data.object.plan, body.data.object.version, body.data.previous],
        ['scale', replanned.body.standing_version, { plan: profile.body.plan }],
      );
      const followed = await eventually(
        () => call(stack, 'GET', '/api/v1/merchant', { token: merchant.token }),
        (response) => response.body.plan === 'scale',
        'the merchants service taking the new standing',
      );
      assert.deepEqual(
        [followed.body.name, followed.body.profile_version, followed.body.standing_version, followed.body.version],
        [profile.body.name, profile.body.profile_version, replanned.body.standing_version, profile.body.version + 1],
      );
    } finally {
      await receiver.close();
    }
  });

  it('answers bad operator changes with problems and changes nothing', async () => {
    const merchant = await createMerchant(stack);
    const operator = { authorization: `Bearer ${stack.operatorToken}` };
    assert.equal((await call(stack, 'PATCH', `/admin/v1/merchants/${merchant.merchantId}`, { body: { status: 'suspended' } })).status, 401);
    const invalid = await call(stack, 'PATCH', `/admin/v1/merchants/${merchant.merchantId}`, { headers: operator, body: { status: 'gone', name: 'x' } });
    assert.equal(invalid.status, 422);
    assert.deepEqual(invalid.body.errors.map((e: { field: string }) => e.field).sort(), ['name', 'status']);
    assert.equal(
      (await call(stack, 'PATCH', '/admin/v1/merchants/mch_00000000000000000000000000', { headers: operator, body: { status: 'suspended' } })).status,
      404,
    );
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: merchant.token })).status, 200);
  });
});
