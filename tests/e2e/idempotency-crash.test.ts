import assert from 'node:assert/strict';
import { call, createMerchant, eventually, sharedStack, stackMode, type Stack } from '../src/harness/index.js';

// Killing the oauth service alone needs the distributed mode; services/embedded/test/idempotency-crash.test.ts does it for the embedded one.
if (stackMode() === 'distributed') {
  describe('an idempotent create and its stored answer commit together (distributed)', () => {
    let stack: Stack;

    before(async function () {
      this.timeout(90_000);
      stack = await sharedStack();
    });

    it('replays the answer of a create whose service died right after committing it, creating one key, not two', async function () {
      this.timeout(120_000);
      const merchant = await createMerchant(stack);
      const body = { name: 'Created once', scopes: ['products:read'] };
      const headers = { 'idempotency-key': `crash-${merchant.merchantId}` };
      // The oauth service dies the instant the key, its event and its answer have committed.
      await stack.kill('oauth');
      await stack.start('oauth', { MERX_FAILPOINTS: 'idempotency.answer_committed=crash' });
      const lost = await call(stack, 'POST', '/api/v1/api-keys', { token: merchant.token, body, headers, unchecked: true });
      assert.equal(lost.status, 503, `the client never got the answer: ${lost.text}`);
      await stack.processes.oauth!.exited;
      await stack.start('oauth');

      const retried = await call(stack, 'POST', '/api/v1/api-keys', { token: merchant.token, body, headers });
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true', 'the retry replays the committed answer');
      assert.match(retried.body.secret, /^mx_test_/, 'with the secret, which is shown nowhere else');
      const keys = await call(stack, 'GET', '/api/v1/api-keys?limit=100', { token: merchant.token });
      assert.deepEqual(
        keys.body.data.filter((key: { name: string }) => key.name === 'Created once').map((key: { id: string }) => key.id),
        [retried.body.id],
      );
      await eventually(
        async () =>
          stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'api_keys.created' && event.data.object.id === retried.body.id)
            .length,
        (count) => count === 1,
        'the one api_keys.created event',
      );
    });
  });
}
