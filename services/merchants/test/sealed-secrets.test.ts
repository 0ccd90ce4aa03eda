import assert from 'node:assert/strict';
import { installSecretKeyRing, newSecretKeyEntry, resealSecretColumns, SecretKeyRing, sealedKeyId } from '@merx/kit';
import { testSecretKeys } from '@merx/kit/testing';
import { SEALED_DESTINATION_SECRETS } from '../src/index.js';
import { useHarness } from './harness.js';

describe('destination secrets sealed at rest (merchants, PostgreSQL)', function () {
  this.timeout(30_000);
  const harness = useHarness(false);

  const storedSecret = async (merchantId: string, id: string) => {
    const { rows } = await harness().db.query<{ secret: string }>('SELECT secret FROM merchants.destinations WHERE merchant_id = $1 AND id = $2', [
      merchantId,
      id,
    ]);
    return rows[0]!.secret;
  };

  it('stores the secret sealed, shows it once in plaintext, and sends it sealed to the delivery engine', async () => {
    const api = await harness().merchant();
    const created = await api.post('/api/v1/destinations', { name: 'ERP', kind: 'webhook', url: 'https://erp.example.com/in' });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.secret, /^whsec_/);
    const stored = await storedSecret(api.merchantId, created.body.id);
    assert.ok(stored.startsWith('sealed:v1:') && !stored.includes('whsec_'), stored);
    const { rows } = await harness().db.query<{ n: number }>(`SELECT count(*)::int AS n FROM merchants.destinations WHERE secret LIKE '%whsec_%'`);
    assert.equal(rows[0]!.n, 0);

    await harness().flush();
    const [synced] = await api.events('internal.destination_synced');
    const onTheBus = String((synced!.data.object as { secret: string }).secret);
    assert.ok(onTheBus.startsWith('sealed:v1:'), onTheBus);
    assert.equal(testSecretKeys().open(onTheBus, { merchantId: api.merchantId, recordId: created.body.id }), created.body.secret);
    assert.throws(() => testSecretKeys().open(onTheBus, { merchantId: api.merchantId, recordId: 'dst_someone_else' }), 'bound to this destination');
  });

  it('reseals plaintext and old-key rows under a new key while they keep working', async () => {
    const api = await harness().merchant();
    const sealedBefore = (await api.post('/api/v1/destinations', { name: 'Old', url: 'https://erp.example.com/a' })).body;
    const legacy = (await api.post('/api/v1/destinations', { name: 'Legacy', url: 'https://erp.example.com/b' })).body;
    await harness().db.query('UPDATE merchants.destinations SET secret = $3 WHERE merchant_id = $1 AND id = $2', [api.merchantId, legacy.id, legacy.secret]);

    const newEntry = newSecretKeyEntry(`mrot${Date.now().toString(36)}`);
    const rotating = SecretKeyRing.combine(SecretKeyRing.parse(newEntry), testSecretKeys());
    installSecretKeyRing(rotating);
    try {
      // Meanwhile every row still reads and changes: the plaintext one and the old-key one.
      for (const destination of [sealedBefore, legacy]) {
        const paused = await api.patch(`/api/v1/destinations/${destination.id}`, { status: 'paused' });
        assert.equal(paused.status, 200, paused.text);
      }
      assert.ok((await resealSecretColumns(harness().db, rotating, SEALED_DESTINATION_SECRETS)) >= 2);
      const newOnly = SecretKeyRing.parse(newEntry);
      for (const destination of [sealedBefore, legacy]) {
        const stored = await storedSecret(api.merchantId, destination.id);
        assert.equal(sealedKeyId(stored), rotating.activeKeyId);
        assert.equal(newOnly.open(stored, { merchantId: api.merchantId, recordId: destination.id }), destination.secret, 'opens without the old key');
      }
      assert.equal(await resealSecretColumns(harness().db, rotating, SEALED_DESTINATION_SECRETS), 0);
      assert.equal((await api.get(`/api/v1/destinations/${legacy.id}`)).status, 200);
    } finally {
      installSecretKeyRing(testSecretKeys());
    }
  });
});
