import assert from 'node:assert/strict';
import {
  adminReadiness,
  call,
  createMerchant,
  eventually,
  sharedStack,
  stackMode,
  type AdminService,
  type ApiResponse,
  type Stack,
  type TestMerchant,
} from '../src/harness/index.js';

/** What a load balancer sees: the public port's status alone. */
const publicReadiness = async (url: string): Promise<{ status: number; body: unknown }> => {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, body: await response.json() };
};

/** One cheap read per service, through the gateway. */
const READS: Record<string, string> = {
  oauth: '/api/v1/api-keys',
  catalog: '/api/v1/products',
  audit: '/api/v1/audit',
  webhooks: '/api/v1/events',
  merchants: '/api/v1/merchant',
};

// Stopping services and the broker needs separate processes; the embedded mode has one.
if (stackMode() === 'distributed') {
  describe('a failing dependency degrades one feature, never the whole API (distributed)', () => {
    let stack: Stack;
    let merchant: TestMerchant;

    before(async function () {
      this.timeout(90_000);
      stack = await sharedStack();
      merchant = await createMerchant(stack);
    });

    const read = (path: string): Promise<ApiResponse> => call(stack, 'GET', path, { token: merchant.token });

    for (const stopped of Object.keys(READS)) {
      it(`keeps the gateway ready and every other service answering while ${stopped} is down; ${stopped}'s routes answer 503 problem+json`, async function () {
        this.timeout(90_000);
        await stack.kill(stopped);
        try {
          const balanced = await publicReadiness(stack.baseUrl);
          assert.deepEqual([balanced.status, balanced.body], [200, { status: 'ready' }]);
          // What is degraded, and why, is on the gateway's admin port.
          const gateway = await adminReadiness(stack, 'gateway');
          assert.equal(gateway.status, 200, JSON.stringify(gateway.body));
          assert.equal(gateway.body.checks[`gateway.${stopped}`], 'degraded');
          assert.ok(gateway.body.degraded.includes(`gateway.${stopped}`), JSON.stringify(gateway.body));
          assert.match(gateway.body.details[`gateway.${stopped}`] ?? '', new RegExp(`${stopped} is unreachable`));
          for (const [service, path] of Object.entries(READS)) {
            const answer = await read(path);
            if (service === stopped) {
              assert.equal(answer.status, 503, `${path}: ${answer.text}`);
              assert.equal(answer.body.code, 'unavailable');
            } else {
              assert.equal(answer.status, 200, `${service} (${path}) with ${stopped} down: ${answer.text}`);
            }
          }
        } finally {
          await stack.start(stopped);
        }
        assert.equal((await read(READS[stopped]!)).status, 200, `${stopped} answers again once restarted`);
      });
    }

    it('stays ready and keeps taking writes with the broker gone, and delivers their events once it is back', async function () {
      this.timeout(90_000);
      for (const link of Object.values(stack.brokerLinks)) link.cut();
      let created: ApiResponse;
      try {
        for (const service of ['oauth', 'catalog', 'audit', 'webhooks', 'merchants'] as AdminService[]) {
          const ready = await eventually(
            () => adminReadiness(stack, service),
            (answer) => answer.body.checks[`${service}.bus`] === 'degraded',
            `${service} noticing the broker is gone`,
          );
          assert.equal(ready.status, 200, `${service}: ${JSON.stringify(ready.body)}`);
          assert.deepEqual(await publicReadiness(stack.processes[service]!.url), { status: 200, body: { status: 'ready' } });
        }
        assert.equal((await publicReadiness(stack.baseUrl)).status, 200);
        created = await call(stack, 'POST', '/api/v1/products', {
          token: merchant.token,
          body: { sku: 'NO-BROKER', title: 'Written without a broker', price: '3.00', currency: 'EUR' },
        });
        assert.equal(created.status, 201, created.text);
        for (const path of Object.values(READS)) assert.equal((await read(path)).status, 200, path);
      } finally {
        for (const link of Object.values(stack.brokerLinks)) link.restore();
      }
      await stack.events.waitFor(
        (event) => event.topic === 'products.created' && event.data.object.id === created!.body.id,
        30_000,
        'the event written while the broker was gone',
      );
      await eventually(
        () => read(`/api/v1/audit?resource_id=${created!.body.id}`),
        (answer) => answer.body.data?.length === 1,
        'its audit entry',
        30_000,
      );
    });
  });
}
