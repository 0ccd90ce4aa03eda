import assert from 'node:assert/strict';
import { adminReadiness, call, createMerchant, sharedStack, stackMode, type Stack } from '../src/harness/index.js';

// Crashes and broker outages need separate processes and a broker; the embedded mode has neither.
if (stackMode() === 'distributed') {
  describe('nothing acknowledged is ever lost (distributed)', () => {
    let stack: Stack;
    before(async function () {
      this.timeout(90_000);
      stack = await sharedStack();
    });

    it('publishes every acknowledged change after a broker outage and a crash of the service', async function () {
      this.timeout(90_000);
      const merchant = await createMerchant(stack);
      const link = stack.brokerLinks.catalog!;
      link.cut();
      // Writes still succeed while the broker is unreachable: the outbox holds their events.
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const created = await call(stack, 'POST', '/api/v1/products', {
          token: merchant.token,
          body: { sku: `OUTAGE-${i}`, title: 'Outage', price: '1.00', currency: 'USD' },
        });
        assert.equal(created.status, 201);
        ids.push(created.body.id);
      }
      const ready = await adminReadiness(stack, 'catalog');
      assert.equal(ready.body.checks['catalog.bus'], 'degraded', 'writes go on without the broker: degraded, still ready');
      assert.equal(stack.events.forMerchant(merchant.merchantId).filter((e) => e.topic === 'products.created').length, 0, 'nothing could be published yet');

      await stack.kill('catalog'); // a crash: no graceful shutdown, no flush
      link.restore();
      await stack.start('catalog');

      for (const id of ids) await stack.events.waitFor((e) => e.topic === 'products.created' && e.data.object.id === id, 30_000, `products.created for ${id}`);
      const delivered = new Set(
        stack.events
          .forMerchant(merchant.merchantId)
          .filter((e) => e.topic === 'products.created')
          .map((e) => e.data.object.id),
      );
      assert.deepEqual([...delivered].sort(), [...ids].sort());
    });

    it('keeps serving reads and writes while the broker link flaps', async function () {
      this.timeout(60_000);
      const merchant = await createMerchant(stack);
      const link = stack.brokerLinks.catalog!;
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        if (i % 10 === 5) link.cut();
        if (i % 10 === 8) link.restore();
        const created = await call(stack, 'POST', '/api/v1/products', {
          token: merchant.token,
          body: { sku: `FLAP-${i}`, title: 'Flap', price: '1.00', currency: 'USD' },
        });
        assert.equal(created.status, 201);
        ids.push(created.body.id);
      }
      link.restore();
      for (const id of ids) await stack.events.waitFor((e) => e.topic === 'products.created' && e.data.object.id === id, 30_000, `products.created for ${id}`);
    });
  });
}
