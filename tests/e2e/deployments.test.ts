import assert from 'node:assert/strict';
import { WebhookReceiver } from '@merx/webhooks/testing';
import pg from 'pg';
import { call, createMerchant, eventually, sharedStack, stackMode, startDistributedStack, type Stack, type TestMerchant } from '../src/harness/index.js';

/** Rows of `merchantId` in every table of every Merx schema that has a merchant_id column, by table. */
async function rowsOfMerchant(databaseUrl: string, merchantId: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const tables = await client.query<{ table_schema: string; table_name: string }>(
      `SELECT c.table_schema, c.table_name FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
        WHERE c.column_name = 'merchant_id' AND c.table_schema IN ('oauth', 'catalog', 'audit', 'webhooks', 'merchants')`,
    );
    const counts: Record<string, number> = {};
    for (const { table_schema: schema, table_name: table } of tables.rows) {
      const found = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)} WHERE merchant_id::text = $1`,
        [merchantId],
      );
      if (found.rows[0]!.n > 0) counts[`${schema}.${table}`] = found.rows[0]!.n;
    }
    return counts;
  } finally {
    await client.end();
  }
}

// Two deployments need two sets of processes on one broker; the embedded mode has no broker.
if (stackMode() === 'distributed') {
  describe('two deployments on one RabbitMQ virtual host (distributed)', () => {
    let first: Stack;
    let second: Stack;
    const receivers: WebhookReceiver[] = [];

    before(async function () {
      this.timeout(120_000);
      first = await sharedStack();
      second = await startDistributedStack();
    });
    after(async function () {
      this.timeout(60_000);
      await Promise.all(receivers.map((receiver) => receiver.close()));
      await second?.stop();
    });

    /** Everything that crosses the bus: a product, a source routed to a destination with a secret, an ingested order, a subscription. */
    async function busyMerchant(stack: Stack): Promise<{ merchant: TestMerchant; receiver: WebhookReceiver }> {
      const merchant = await createMerchant(stack);
      const receiver = await WebhookReceiver.start();
      receivers.push(receiver);
      const post = async (path: string, body: unknown) => {
        const response = await call(stack, 'POST', path, { token: merchant.token, body });
        assert.ok(response.status === 201 || response.status === 200, `${path}: ${response.status} ${response.text}`);
        return response.body;
      };
      await post('/api/v1/products', { sku: 'APART-1', title: 'Apart', price: '5.00', currency: 'EUR' });
      await post('/api/v1/webhooks/subscriptions', { url: receiver.url(), topics: ['*'] });
      const source = await post('/api/v1/sources', { name: 'Shop', kind: 'storefront' });
      const destination = await post('/api/v1/destinations', { name: 'ERP', kind: 'webhook', url: receiver.url() });
      await post('/api/v1/connections', { source_id: source.id, destination_id: destination.id, event_types: ['orders.created'] });
      await post(`/api/v1/sources/${source.id}/records`, {
        records: [{ type: 'order', external_id: 'O-1', occurred_at: '2026-11-22T10:00:00Z', data: { total: 10 } }],
      });
      return { merchant, receiver };
    }

    /** The routed order reached the destination and its event is audited: the deployment's consumers caught up. */
    async function settled(stack: Stack, { merchant, receiver }: { merchant: TestMerchant; receiver: WebhookReceiver }): Promise<void> {
      await eventually(
        async () => receiver.received.filter((request) => JSON.parse(request.body).topic === 'orders.created').length,
        (n) => n >= 2,
        'the order at the subscription and the destination',
        30_000,
      );
      await eventually(
        () => call(stack, 'GET', '/api/v1/audit?action=orders.created', { token: merchant.token }),
        (response) => response.body.data?.length === 1,
        'the order in the audit log',
      );
    }

    it("neither deployment consumes, stores, audits or delivers the other's events", async function () {
      this.timeout(120_000);
      const a = await busyMerchant(first);
      const b = await busyMerchant(second);
      await settled(first, a);
      await settled(second, b);
      // A last change in each: its event arrives after anything the other deployment could have leaked.
      await call(first, 'POST', '/api/v1/products', { token: a.merchant.token, body: { sku: 'LAST', title: 'Last', price: '1.00', currency: 'EUR' } });
      await call(second, 'POST', '/api/v1/products', { token: b.merchant.token, body: { sku: 'LAST', title: 'Last', price: '1.00', currency: 'EUR' } });
      await first.events.waitFor((e) => e.merchant_id === a.merchant.merchantId && e.topic === 'products.created' && e.data.object.sku === 'LAST');
      await second.events.waitFor((e) => e.merchant_id === b.merchant.merchantId && e.topic === 'products.created' && e.data.object.sku === 'LAST');
      for (const stack of [first, second]) {
        await eventually(
          () => call(stack, 'GET', '/api/v1/audit?action=products.created', { token: (stack === first ? a : b).merchant.token }),
          (response) => response.body.data?.length === 2,
          'the last product in the audit log',
        );
      }

      assert.deepEqual(second.events.forMerchant(a.merchant.merchantId), [], "the second deployment's exchange never carried the first one's events");
      assert.deepEqual(first.events.forMerchant(b.merchant.merchantId), [], 'nor the other way round');
      assert.deepEqual(
        await rowsOfMerchant(second.databaseUrl!, a.merchant.merchantId),
        {},
        "no row of the first deployment's merchant in the second one's database",
      );
      assert.deepEqual(await rowsOfMerchant(first.databaseUrl!, b.merchant.merchantId), {}, 'nor the other way round');
      const own = await rowsOfMerchant(first.databaseUrl!, a.merchant.merchantId);
      for (const table of ['catalog.products', 'audit.entries', 'webhooks.events', 'merchants.destinations'])
        assert.ok(own[table]! > 0, `the check looks where the data is: ${table} in ${JSON.stringify(own)}`);
      for (const { receiver, merchant } of [a, b]) {
        const merchants = new Set(receiver.received.map((request) => JSON.parse(request.body).merchant_id));
        assert.deepEqual(
          [...merchants],
          [merchant.merchantId],
          "each receiver got its own merchant's deliveries only, each once per subscription or destination",
        );
      }
    });
  });
}
