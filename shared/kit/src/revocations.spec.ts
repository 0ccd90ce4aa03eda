import assert from 'node:assert/strict';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createTokenVerifier } from './auth.js';
import { Unauthenticated, Unavailable } from './errors.js';
import type { MerxEvent } from './events.js';
import { createLogger } from './logger.js';
import { MemoryBus } from './memory-bus.js';
import { revocationEntryOf, RevocationList, REVOCATION_TOPICS, startRevocationFeed, type RevocationSnapshot, EVERY_CLIENT } from './revocations.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';
const OTHER_MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3h';
const KEY = 'mx_test_4fJk2LmN8pQr0000';
const T0 = Date.parse('2026-01-01T12:00:00.000Z');
const seconds = (ms: number) => Math.floor(ms / 1000);
const iso = (ms: number) => new Date(ms).toISOString();

function event(topic: string, object: Record<string, unknown>, merchantId = MERCHANT): MerxEvent {
  return { id: 'evt_01jd3k7q8m2x4v6b9c0d1e2f3g', topic, merchant_id: merchantId, created_at: iso(T0), api_version: 'v1', data: { object } } as MerxEvent;
}

describe('RevocationList', () => {
  let now = T0;
  const list = () => new RevocationList({ maxTokenLifetimeSeconds: 900, now: () => now });
  beforeEach(() => {
    now = T0;
  });

  it('refuses tokens of the client issued at or before the revocation, and only those', () => {
    const revocations = list();
    revocations.add({ client_id: KEY, revoked_at: iso(T0) });
    assert.equal(revocations.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt: seconds(T0) - 60 }), true);
    assert.equal(revocations.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt: seconds(T0) }), true);
    assert.equal(revocations.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt: seconds(T0) + 1 }), false);
    assert.equal(revocations.isRevoked({ clientId: `${KEY}x`, merchantId: MERCHANT, issuedAt: seconds(T0) - 60 }), false);
  });

  it('limits an entry naming a merchant to that merchant (an app grant)', () => {
    const revocations = list();
    revocations.add({ client_id: 'app_client', merchant_id: MERCHANT, revoked_at: iso(T0) });
    assert.equal(revocations.isRevoked({ clientId: 'app_client', merchantId: MERCHANT, issuedAt: seconds(T0) - 1 }), true);
    assert.equal(revocations.isRevoked({ clientId: 'app_client', merchantId: OTHER_MERCHANT, issuedAt: seconds(T0) - 1 }), false);
  });

  it('keeps the latest revocation of a client and merchant once', () => {
    const revocations = list();
    revocations.add({ client_id: KEY, revoked_at: iso(T0 - 10_000) });
    revocations.add({ client_id: KEY, revoked_at: iso(T0) });
    revocations.add({ client_id: KEY, revoked_at: iso(T0 - 5_000) });
    assert.equal(revocations.size, 1);
    assert.equal(revocations.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt: seconds(T0) - 1 }), true);
  });

  it('drops entries older than the longest token lifetime, and ignores malformed ones', () => {
    const revocations = list();
    revocations.add({ client_id: KEY, revoked_at: iso(T0 - 901_000) });
    revocations.add({ client_id: 'mx_test_bad', revoked_at: 'yesterday' });
    assert.equal(revocations.size, 0);
    revocations.add({ client_id: KEY, revoked_at: iso(T0) });
    now = T0 + 899_000;
    revocations.prune();
    assert.equal(revocations.size, 1);
    now = T0 + 902_000;
    revocations.prune();
    assert.equal(revocations.size, 0);
  });

  it('takes its retention from the authorization server', () => {
    const revocations = list();
    revocations.add({ client_id: KEY, revoked_at: iso(T0 - 600_000) });
    revocations.setMaxTokenLifetime(300);
    assert.equal(revocations.size, 0);
  });

  it('reads entries from api_keys.revoked and apps.grant_revoked events, nothing from others', () => {
    assert.deepEqual(revocationEntryOf(event('api_keys.revoked', { prefix: KEY, revoked_at: iso(T0) })), { client_id: KEY, revoked_at: iso(T0) });
    assert.deepEqual(revocationEntryOf(event('apps.grant_revoked', { client_id: 'app_x', revoked_at: iso(T0) })), {
      client_id: 'app_x',
      merchant_id: MERCHANT,
      revoked_at: iso(T0),
    });
    assert.equal(revocationEntryOf(event('api_keys.created', { prefix: KEY })), undefined);
  });

  it('turns a suspension (merchants.standing_changed to suspended) into a merchant-wide entry, and nothing else', () => {
    const standing = { object: 'merchant_standing', id: MERCHANT, mode: 'sandbox', plan: 'standard', status: 'suspended', version: 2, updated_at: iso(T0) };
    const suspended = { ...event('merchants.standing_changed', standing), data: { object: standing, previous: { status: 'active' } } } as MerxEvent;
    assert.deepEqual(revocationEntryOf(suspended), { client_id: EVERY_CLIENT, merchant_id: MERCHANT, revoked_at: iso(T0) });
    const replanned = { ...suspended, data: { object: standing, previous: { plan: 'sandbox' } } } as MerxEvent;
    assert.equal(revocationEntryOf(replanned), undefined, 'a plan change of a suspended merchant revokes nothing new');
    assert.equal(revocationEntryOf(event('merchants.standing_changed', { ...standing, status: 'active' })), undefined);
    assert.ok(REVOCATION_TOPICS.includes('merchants.standing_changed'), 'every verifier hears of suspensions');
  });

  it('still honours a suspension the release before announced as merchants.updated (in flight during an upgrade)', () => {
    const legacy = {
      ...event('merchants.updated', { status: 'suspended', updated_at: iso(T0) }),
      data: { object: { status: 'suspended', updated_at: iso(T0) }, previous: { status: 'active' } },
    } as MerxEvent;
    assert.deepEqual(revocationEntryOf(legacy), { client_id: EVERY_CLIENT, merchant_id: MERCHANT, revoked_at: iso(T0) });
    const profile = { ...legacy, data: { object: { status: 'suspended', updated_at: iso(T0) }, previous: { name: 'Old name' } } } as MerxEvent;
    assert.equal(revocationEntryOf(profile), undefined, 'a profile change of a suspended merchant revokes nothing new');
  });

  it('refuses every client of a suspended merchant issued before the suspension, and no other merchant', () => {
    const revocations = list();
    revocations.add({ client_id: EVERY_CLIENT, merchant_id: MERCHANT, revoked_at: iso(T0) });
    const issuedAt = Math.floor(T0 / 1000);
    assert.equal(revocations.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt }), true);
    assert.equal(revocations.isRevoked({ clientId: 'mxapp_other', merchantId: MERCHANT, issuedAt: issuedAt - 60 }), true);
    assert.equal(revocations.isRevoked({ clientId: KEY, merchantId: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3z', issuedAt }), false);
    assert.equal(revocations.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt: issuedAt + 1 }), false, 'tokens after a reactivation live');
  });

  it('ignores a merchant-wide entry that names no merchant', () => {
    const revocations = list();
    revocations.add({ client_id: EVERY_CLIENT, revoked_at: iso(T0) });
    assert.equal(revocations.size, 0);
  });
});

describe('token verifier with a revocation list', () => {
  async function setUp() {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    const revocations = new RevocationList({ maxTokenLifetimeSeconds: 900 });
    const verifier = createTokenVerifier(createLocalJWKSet({ keys: [jwk] }), { issuer: 'iss', audience: 'aud', revocations });
    const issuedAt = Math.floor(Date.now() / 1000) - 5;
    const token = await new SignJWT({ merchant_id: MERCHANT, client_id: KEY, scope: 'products:read' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('iss')
      .setAudience('aud')
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + 900)
      .sign(privateKey);
    return { revocations, verifier, token, issuedAt };
  }

  it('refuses every token while the list is not loaded (503), then serves', async () => {
    const { revocations, verifier, token } = await setUp();
    await assert.rejects(verifier.verify(token), Unavailable);
    revocations.markBootstrapped();
    assert.equal((await verifier.verify(token)).clientId, KEY);
  });

  it('refuses a cached token as soon as its client is revoked', async () => {
    const { revocations, verifier, token, issuedAt } = await setUp();
    revocations.markBootstrapped();
    assert.equal((await verifier.verify(token)).issuedAt, issuedAt);
    revocations.add({ client_id: KEY, revoked_at: new Date().toISOString() });
    await assert.rejects(verifier.verify(token), (error: unknown) => error instanceof Unauthenticated && error.message === 'the credential was revoked');
  });
});

describe('startRevocationFeed', () => {
  const logger = createLogger('test', 'silent');

  it('retries the first load, reports not ready until it succeeds, then follows the bus', async () => {
    const bus = new MemoryBus();
    const list = new RevocationList({ maxTokenLifetimeSeconds: 900 });
    let attempts = 0;
    const revokedEarlier = new Date(Date.now() - 60_000).toISOString();
    const load = async (): Promise<RevocationSnapshot> => {
      attempts += 1;
      if (attempts < 3) throw new Error('oauth is not up yet');
      return { entries: [{ client_id: 'mx_test_earlier', revoked_at: revokedEarlier }], max_token_lifetime_seconds: 600 };
    };
    const feed = await startRevocationFeed({ list, bus, service: 'test', logger, load, retry: { minTimeoutMs: 5, maxTimeoutMs: 10 } });
    try {
      await feed.bootstrapped;
      assert.equal(attempts, 3);
      await feed.readiness.check();
      assert.equal(list.maxTokenLifetimeSeconds, 600);
      assert.equal(list.isRevoked({ clientId: 'mx_test_earlier', merchantId: MERCHANT, issuedAt: Math.floor(Date.now() / 1000) - 120 }), true);
      await bus.publish([event('api_keys.revoked', { prefix: KEY, revoked_at: new Date().toISOString() })]);
      const deadline = Date.now() + 1_000;
      while (!list.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt: Math.floor(Date.now() / 1000) - 1 }) && Date.now() < deadline) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.equal(list.isRevoked({ clientId: KEY, merchantId: MERCHANT, issuedAt: Math.floor(Date.now() / 1000) - 1 }), true);
    } finally {
      await feed.stop();
      await bus.close();
    }
  });

  it('is not ready before the first load', async () => {
    const bus = new MemoryBus();
    const list = new RevocationList({ maxTokenLifetimeSeconds: 900 });
    const feed = await startRevocationFeed({ list, bus, service: 'test', logger, load: () => new Promise(() => undefined) });
    try {
      assert.throws(() => feed.readiness.check(), /not loaded/);
    } finally {
      await feed.stop();
      await bus.close();
    }
  });
});
