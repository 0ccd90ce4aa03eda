import assert from 'node:assert/strict';
import { installSecretKeyRing, newSecretKeyEntry, resealSecretColumns, SecretKeyRing, sealedKeyId, UnsealError } from '@merx/kit';
import { createScratchDatabase, testSecretKeys } from '@merx/kit/testing';
import { Webhook } from 'standardwebhooks';
import { SEALED_ENDPOINT_SECRETS } from '../src/index.js';
import { destinationEndpoint, routedRecord } from './destination-fixtures.js';
import { ALL_SCOPES, contract, startHarness, WebhooksClient, type Harness } from './harness.js';
import { WebhookReceiver } from './receiver.js';

interface SecretColumns {
  secret: string;
  previous_secret: string | null;
}

/** What a copy of the database shows of an endpoint's secrets. */
async function storedSecrets(harness: Harness, merchantId: string, id: string): Promise<SecretColumns> {
  const { rows } = await harness.db.query<SecretColumns>('SELECT secret, previous_secret FROM webhooks.endpoints WHERE merchant_id = $1 AND id = $2', [
    merchantId,
    id,
  ]);
  assert.ok(rows[0], `no row for ${id}`);
  return rows[0];
}

const verifies = (secret: string, request: { body: string; headers: Record<string, unknown> }) => {
  new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  return true;
};

describe('signing secrets sealed at rest (webhooks, PostgreSQL)', function () {
  this.timeout(30_000);
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let harness: Harness;
  let receiver: WebhookReceiver;

  before(async () => {
    scratch = await createScratchDatabase('webhooks_sealed');
    harness = await startHarness({ db: scratch.db });
  });
  after(async () => {
    await harness?.stop();
    await scratch?.drop();
  });
  beforeEach(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it("keeps a subscription's secret, and its previous one after a rotation, sealed in the table; deliveries still verify", async () => {
    const api = await harness.merchant();
    const subscription = await api.subscribe(receiver.url(), ['products']);
    assert.match(subscription.secret, /^whsec_/);
    const created = await storedSecrets(harness, api.merchantId, subscription.id);
    assert.ok(!created.secret.includes('whsec_') && created.secret.startsWith('sealed:v1:'), created.secret);

    const rotated = (await api.post(`/api/v1/webhooks/subscriptions/${subscription.id}/rotate-secret`)).body;
    const after = await storedSecrets(harness, api.merchantId, subscription.id);
    for (const value of [after.secret, after.previous_secret!]) assert.ok(value.startsWith('sealed:v1:') && !value.includes('whsec_'), value);
    const { rows } = await harness.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhooks.endpoints WHERE secret LIKE '%whsec_%' OR previous_secret LIKE '%whsec_%'`,
    );
    assert.equal(rows[0]!.n, 0, 'no plaintext secret anywhere in the table');

    const event = await harness.publish(api.merchantId, 'products.created');
    const request = await receiver.waitFor((r) => r.headers['webhook-id'] === event.id);
    assert.ok(verifies(rotated.secret, request) && verifies(subscription.secret, request), 'both secrets sign during the overlap');
  });

  it('opens a destination secret that arrives sealed, stores it sealed, and signs with the plaintext', async () => {
    const api = await harness.merchant();
    const destination = destinationEndpoint(receiver.url());
    const sealedOnTheBus = testSecretKeys().seal(destination.secret, { merchantId: api.merchantId, recordId: destination.id });
    await harness.publish(api.merchantId, 'internal.destination_synced', { ...destination, secret: sealedOnTheBus });
    const routing = routedRecord(api.merchantId, destination.id);
    await harness.publish(api.merchantId, 'internal.record_routed', routing);
    const request = await receiver.waitFor((r) => r.headers['webhook-id'] === routing.payload.id);
    assert.ok(verifies(destination.secret, request));
    const stored = await storedSecrets(harness, api.merchantId, destination.id);
    assert.ok(stored.secret.startsWith('sealed:v1:') && !stored.secret.includes('whsec_'), stored.secret);
  });

  it('a sealed secret copied into another row does not open there', async () => {
    const api = await harness.merchant();
    const first = await api.subscribe(receiver.url(), ['products']);
    const second = await api.subscribe(receiver.url(), ['products']);
    const copied = (await storedSecrets(harness, api.merchantId, first.id)).secret;
    assert.equal(testSecretKeys().open(copied, { merchantId: api.merchantId, recordId: first.id }), first.secret);
    assert.throws(() => testSecretKeys().open(copied, { merchantId: api.merchantId, recordId: second.id }), UnsealError);
    assert.throws(() => testSecretKeys().open(copied, { merchantId: 'mch_another', recordId: first.id }), UnsealError);
  });

  it('rotates the key: plaintext and old-key rows keep working, reseal moves every row to the new key, then the old key can go', async () => {
    let api = await harness.merchant();
    const old = await api.subscribe(receiver.url(), ['products']);
    const legacy = await api.subscribe(receiver.url(), ['products']);
    // A row as a version before sealing left it.
    await harness.db.query('UPDATE webhooks.endpoints SET secret = $3 WHERE merchant_id = $1 AND id = $2', [api.merchantId, legacy.id, legacy.secret]);

    // The operator puts a new key first and restarts the service with the old key still listed.
    const newEntry = newSecretKeyEntry(`rot${Date.now().toString(36)}`);
    const rotating = SecretKeyRing.combine(SecretKeyRing.parse(newEntry), testSecretKeys());
    await harness.stop();
    harness = await startHarness({ db: scratch.db, secretKeys: rotating });
    api = new WebhooksClient(
      harness.url,
      api.merchantId,
      await harness.tokens.sign({ merchantId: api.merchantId, scope: ALL_SCOPES, mode: 'sandbox' }),
      contract,
    );
    try {
      const fresh = await api.subscribe(receiver.url(), ['products']);
      assert.equal(sealedKeyId((await storedSecrets(harness, api.merchantId, fresh.id)).secret), rotating.activeKeyId, 'new rows seal under the new key');
      const before = await harness.publish(api.merchantId, 'products.created');
      const requests = await receiver.waitUntil((all) => {
        const mine = all.filter((r) => r.headers['webhook-id'] === before.id);
        return mine.length >= 3 && mine;
      });
      const signedBy = (secret: string) =>
        requests.some((request) => {
          try {
            return verifies(secret, request);
          } catch {
            return false;
          }
        });
      for (const subscription of [old, legacy, fresh]) assert.ok(signedBy(subscription.secret), `${subscription.id} signs before the reseal`);

      const resealed = await resealSecretColumns(harness.db, rotating, SEALED_ENDPOINT_SECRETS);
      assert.ok(resealed >= 2, `resealed ${resealed}`);
      const { rows } = await harness.db.query<{ secret: string; previous_secret: string | null }>('SELECT secret, previous_secret FROM webhooks.endpoints');
      for (const row of rows) {
        assert.equal(sealedKeyId(row.secret), rotating.activeKeyId);
        if (row.previous_secret !== null) assert.equal(sealedKeyId(row.previous_secret), rotating.activeKeyId);
      }
      assert.equal(await resealSecretColumns(harness.db, rotating, SEALED_ENDPOINT_SECRETS), 0, 'a second run has nothing to do');
      // Every row now opens with the new key alone: the old one can leave the configuration.
      const newOnly = SecretKeyRing.parse(newEntry);
      const { rows: mine } = await harness.db.query<{ id: string; secret: string }>('SELECT id, secret FROM webhooks.endpoints WHERE merchant_id = $1', [
        api.merchantId,
      ]);
      const bySubscription = new Map(mine.map((row) => [row.id, newOnly.open(row.secret, { merchantId: api.merchantId, recordId: row.id })]));
      assert.deepEqual(
        [old, legacy, fresh].map((s) => bySubscription.get(s.id)),
        [old.secret, legacy.secret, fresh.secret],
      );

      const after = await harness.publish(api.merchantId, 'products.created');
      await receiver.waitUntil((all) => all.filter((r) => r.headers['webhook-id'] === after.id).length >= 3);
    } finally {
      // Later suites of this process seal under the test ring again (the rotated key still opens).
      installSecretKeyRing(testSecretKeys());
    }
  });
});
