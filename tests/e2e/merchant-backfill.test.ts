import assert from 'node:assert/strict';
import pg from 'pg';
import { call, createMerchant, sharedStack, stackMode, type Stack } from '../src/harness/index.js';

/**
 * A merchant the merchants service has no row for (it predates the service, or its
 * merchants.created has not arrived) is looked up in the oauth service, with the service
 * credential, instead of answering 503 until an event that will never come.
 */
describe('merchants the merchants service missed', function () {
  this.timeout(90_000);
  let stack: Stack;
  before(async () => {
    stack = await sharedStack();
  });

  // Distributed mode only: the test removes the row through the stack's own database.
  const distributedOnly = stackMode() === 'distributed' ? it : undefined;
  distributedOnly?.('serves and updates the profile of a merchant whose row is missing, caught up from the oauth service', async () => {
    const merchant = await createMerchant(stack);
    const before = await call(stack, 'GET', '/api/v1/merchant', { token: merchant.token });
    assert.equal(before.status, 200, before.text);
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      // What a merchant provisioned before this service existed looks like from here.
      await db.query('DELETE FROM merchants.merchants WHERE merchant_id = $1', [merchant.merchantId]);
      const caughtUp = await call(stack, 'GET', '/api/v1/merchant', { token: merchant.token });
      assert.equal(caughtUp.status, 200, caughtUp.text);
      assert.equal(caughtUp.body.id, merchant.merchantId);
      assert.equal(caughtUp.body.name, before.body.name);
      assert.equal(caughtUp.body.plan, before.body.plan);
      const { rows } = await db.query('SELECT name FROM merchants.merchants WHERE merchant_id = $1', [merchant.merchantId]);
      assert.deepEqual(rows, [{ name: before.body.name }], 'kept, as merchants.created would have');

      await db.query('DELETE FROM merchants.merchants WHERE merchant_id = $1', [merchant.merchantId]);
      const renamed = await call(stack, 'PATCH', '/api/v1/merchant', { token: merchant.token, body: { name: 'Caught up and renamed' } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.name, 'Caught up and renamed');
    } finally {
      await db.end();
    }
  });

  it('answers the lookup only to the service credential', async () => {
    const merchant = await createMerchant(stack);
    const lookup = await fetch(`${stack.directUrl('oauth')}/internal/v1/merchants/${merchant.merchantId}`, {
      headers: { authorization: `Bearer ${merchant.token}` },
    });
    assert.equal(lookup.status, 401);
    assert.equal(((await lookup.json()) as { code: string }).code, 'unauthenticated');
  });
});
