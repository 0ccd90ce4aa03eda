import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createContractValidator } from '@merx/contracts';
import {
  buildEvent,
  createLogger,
  createPostgresDb,
  createTokenVerifier,
  MemoryBus,
  newId,
  runWithContext,
  trustedMerchantId,
  type Db,
  type MerxEvent,
} from '@merx/kit';
import { startAudit, type RunningAudit } from '../src/index.js';
import { appendEntryForMerchant, purgeEntriesOlderThan } from '../src/store/entries-store.js';
import { entryFromEvent } from '../src/domain/entry.js';

const ADMIN_URL = process.env.MERX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ISSUER = 'http://localhost:8080/oauth';
const contract = createContractValidator();

function productEvent(merchantId: string, topic: string, object: Record<string, unknown>, previous?: Record<string, unknown>): MerxEvent {
  return runWithContext({ requestId: newId('req'), actor: { type: 'api_key', id: 'mx_test_AAAAAAAAAAAAAAAA' }, ip: '203.0.113.9' }, () =>
    buildEvent(topic, merchantId, previous ? { object, previous } : { object }),
  );
}

describe('audit service (component, PostgreSQL)', () => {
  let databaseName: string;
  let databaseUrl: string;
  let db: Db;
  let bus: MemoryBus;
  let audit: RunningAudit;
  let sign: (merchantId: string, scope?: string) => Promise<string>;

  before(async function () {
    this.timeout(30_000);
    databaseName = `audit_test_${randomBytes(5).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${databaseName}`);
    await admin.end();
    const url = new URL(ADMIN_URL);
    url.pathname = `/${databaseName}`;
    databaseUrl = url.toString();
    db = createPostgresDb(databaseUrl, { maxConnections: 8 });
    bus = new MemoryBus();
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    sign = (merchantId, scope = 'audit:read') =>
      new SignJWT({ merchant_id: merchantId, client_id: 'mx_test_AAAAAAAAAAAAAAAA', scope })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(ISSUER)
        .setAudience('urn:merx:api')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
    const verifier = createTokenVerifier(createLocalJWKSet({ keys: [jwk] }), { issuer: ISSUER, audience: 'urn:merx:api' });
    audit = await startAudit({ db, bus, logger: createLogger('audit-test', 'silent'), verifier, port: 0 });
  });

  after(async function () {
    this.timeout(30_000);
    await audit?.stop();
    await db?.close();
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
    await admin.end();
  });

  async function api(method: string, path: string, token: string | undefined) {
    const response = await fetch(`${audit.url}${path}`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
    const text = await response.text();
    const body = text ? JSON.parse(text) : undefined;
    const problems = contract.validateResponse({
      method,
      path,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body,
      headers: response.headers,
    });
    assert.deepEqual(problems, [], `${method} ${path}: ${text}`);
    return { status: response.status, body, headers: response.headers };
  }

  /** Publishes and waits until the audit log holds `count` entries for the merchant. */
  async function publishAndAwait(merchantId: string, events: MerxEvent[], count: number) {
    await bus.publish(events);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit.entries WHERE merchant_id = $1', [merchantId]);
      if (rows[0]!.n >= count) return;
      if (Date.now() > deadline) throw new Error(`only ${rows[0]!.n} of ${count} entries recorded`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it('records one entry per event, chained in order, with actor, request id, ip and changes', async () => {
    const merchantId = newId('mch');
    const product = { id: newId('prod'), object: 'product', title: 'A', price: '1.00' };
    const events = [
      productEvent(merchantId, 'products.created', product),
      productEvent(merchantId, 'products.updated', { ...product, title: 'B' }, { title: 'A' }),
      productEvent(merchantId, 'products.deleted', { ...product, title: 'B' }),
    ];
    await publishAndAwait(merchantId, events, 3);
    const token = await sign(merchantId);
    const list = await api('GET', '/api/v1/audit', token);
    assert.deepEqual(
      list.body.data.map((e: { action: string }) => e.action),
      ['products.deleted', 'products.updated', 'products.created'],
    );
    const [deleted, updated, created] = list.body.data;
    assert.deepEqual(created.changes, { before: null, after: product });
    assert.deepEqual(updated.changes, { before: { title: 'A' }, after: { title: 'B' } });
    assert.deepEqual(deleted.changes.after, null);
    assert.deepEqual(created.actor, { type: 'api_key', id: 'mx_test_AAAAAAAAAAAAAAAA' });
    assert.equal(created.request_id, events[0]!.context!.request_id);
    assert.equal(created.ip, '203.0.113.9');
    assert.deepEqual(created.resource, { type: 'product', id: product.id });
    assert.equal(created.prev_hash, '0'.repeat(64));
    assert.equal(updated.prev_hash, created.hash);
    assert.equal(deleted.prev_hash, updated.hash);
    assert.deepEqual([created.sequence, updated.sequence, deleted.sequence], [1, 2, 3]);
    const verify = await api('GET', '/api/v1/audit/verify', token);
    assert.equal(verify.body.valid, true);
    assert.equal(verify.body.entries_checked, 3);
    assert.equal(verify.body.head_hash, deleted.hash);
  });

  it('drops a redelivered event (inbox) and keeps tenants apart', async () => {
    const merchantId = newId('mch');
    const other = newId('mch');
    const event = productEvent(merchantId, 'products.created', { id: newId('prod'), object: 'product' });
    await publishAndAwait(merchantId, [event, event, event], 1);
    await publishAndAwait(other, [productEvent(other, 'products.created', { id: newId('prod'), object: 'product' })], 1);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit.entries WHERE merchant_id = $1', [merchantId]);
    assert.equal(rows[0]!.n, 1);
    const theirs = await api('GET', '/api/v1/audit', await sign(other));
    assert.equal(theirs.body.data.length, 1);
    const mine = await api('GET', '/api/v1/audit', await sign(merchantId));
    assert.equal((await api('GET', `/api/v1/audit/${mine.body.data[0].id}`, await sign(other))).status, 404);
  });

  it('filters by resource, action, actor and time, and pages with a cursor', async () => {
    const merchantId = newId('mch');
    const ids = [newId('prod'), newId('prod')];
    const events = [
      productEvent(merchantId, 'products.created', { id: ids[0], object: 'product' }),
      productEvent(merchantId, 'products.created', { id: ids[1], object: 'product' }),
      productEvent(merchantId, 'products.updated', { id: ids[0], object: 'product', title: 'x' }, { title: 'y' }),
    ];
    await publishAndAwait(merchantId, events, 3);
    const token = await sign(merchantId);
    assert.equal((await api('GET', `/api/v1/audit?resource_id=${ids[0]}`, token)).body.data.length, 2);
    assert.equal((await api('GET', '/api/v1/audit?action=products.updated', token)).body.data.length, 1);
    assert.equal((await api('GET', '/api/v1/audit?resource_type=product&actor_id=mx_test_AAAAAAAAAAAAAAAA', token)).body.data.length, 3);
    assert.equal((await api('GET', '/api/v1/audit?since=2099-01-01T00:00:00.000Z', token)).body.data.length, 0);
    const first = await api('GET', '/api/v1/audit?limit=2', token);
    assert.equal(first.body.has_more, true);
    const second = await api('GET', `/api/v1/audit?limit=2&cursor=${first.body.next_cursor}`, token);
    assert.deepEqual(
      second.body.data.map((e: { sequence: number }) => e.sequence),
      [1],
    );
    assert.equal((await api('GET', '/api/v1/audit?since=yesterday', token)).status, 422);
  });

  it('refuses to update or delete entries, through the API (405) and in the database itself', async () => {
    const merchantId = newId('mch');
    await publishAndAwait(merchantId, [productEvent(merchantId, 'products.created', { id: newId('prod'), object: 'product' })], 1);
    const token = await sign(merchantId);
    const [entry] = (await api('GET', '/api/v1/audit', token)).body.data;
    for (const method of ['DELETE', 'PATCH', 'PUT']) {
      const response = await fetch(`${audit.url}/api/v1/audit/${entry.id}`, { method, headers: { authorization: `Bearer ${token}` } });
      assert.equal(response.status, 405, method);
      assert.match(response.headers.get('allow') ?? '', /GET/);
    }
    await assert.rejects(db.query(`UPDATE audit.entries SET action = 'x' WHERE merchant_id = $1`, [merchantId]), /append-only/);
    await assert.rejects(db.query(`DELETE FROM audit.entries WHERE merchant_id = $1`, [merchantId]), /append-only/);
    await assert.rejects(db.query(`TRUNCATE audit.entries`), /append-only/);
    assert.equal((await api('GET', '/api/v1/audit/verify', token)).body.valid, true);
  });

  it('reports the exact entry when one stored entry is altered, or one is removed', async () => {
    const merchantId = newId('mch');
    const events = Array.from({ length: 5 }, (_, i) => productEvent(merchantId, 'products.created', { id: newId('prod'), object: 'product', n: i }));
    await publishAndAwait(merchantId, events, 5);
    const token = await sign(merchantId);
    const entries = (await api('GET', '/api/v1/audit', token)).body.data.reverse();
    // A superuser bypassing the trigger, as an attacker with database access would.
    const intruder = new pg.Client({ connectionString: databaseUrl });
    await intruder.connect();
    try {
      await intruder.query('SET session_replication_role = replica');
      await intruder.query(`UPDATE audit.entries SET changes = '{"before":null,"after":{"n":99}}' WHERE merchant_id = $1 AND id = $2`, [
        merchantId,
        entries[2].id,
      ]);
      const tampered = await api('GET', '/api/v1/audit/verify', token);
      assert.equal(tampered.body.valid, false);
      assert.deepEqual(tampered.body.broken_at, { id: entries[2].id, sequence: 3, reason: 'hash_mismatch' });
      // Verifying from after the tampered entry trusts the entry before the start and passes.
      assert.equal((await api('GET', '/api/v1/audit/verify?from_sequence=4', token)).body.valid, true);

      await intruder.query(`DELETE FROM audit.entries WHERE merchant_id = $1 AND id = $2`, [merchantId, entries[3].id]);
      const gap = await api('GET', '/api/v1/audit/verify?from_sequence=4', token);
      assert.deepEqual(gap.body.broken_at, { id: entries[4].id, sequence: 5, reason: 'sequence_gap' });
    } finally {
      await intruder.end();
    }
  });

  it('keeps one unforked chain when replicas append for the same merchant at once', async () => {
    const merchantId = trustedMerchantId(newId('mch'));
    await Promise.all(
      Array.from({ length: 40 }, () =>
        db.transaction((tx) =>
          appendEntryForMerchant(
            tx,
            merchantId,
            entryFromEvent(newId('aud'), productEvent(merchantId, 'products.created', { id: newId('prod'), object: 'product' })),
          ),
        ),
      ),
    );
    const verify = await api('GET', '/api/v1/audit/verify', await sign(merchantId));
    assert.equal(verify.body.valid, true);
    assert.equal(verify.body.entries_checked, 40);
    assert.equal(verify.body.to_sequence, 40);
  });

  it('purges by retention, keeping a checkpoint so the rest still verifies', async () => {
    const merchantId = newId('mch');
    const events = Array.from({ length: 4 }, () => productEvent(merchantId, 'products.created', { id: newId('prod'), object: 'product' }));
    await publishAndAwait(merchantId, events, 4);
    const [oldest, second] = (await db.query<{ id: string }>('SELECT id FROM audit.entries WHERE merchant_id = $1 ORDER BY sequence', [merchantId])).rows;
    // Age the first two entries (a maintenance session, as retention would see them later).
    const owner = new pg.Client({ connectionString: databaseUrl });
    await owner.connect();
    await owner.query('SET session_replication_role = replica');
    await owner.query(`UPDATE audit.entries SET occurred_at = '2000-01-01T00:00:00Z' WHERE merchant_id = $1 AND id = ANY($2)`, [
      merchantId,
      [oldest!.id, second!.id],
    ]);
    await owner.end();
    // occurred_at is hashed, so the aged entries no longer verify; purging them removes exactly those.
    const removed = await db.transaction((tx) => purgeEntriesOlderThan(tx, new Date('2001-01-01T00:00:00Z')));
    assert.ok(removed >= 2);
    const verify = await api('GET', '/api/v1/audit/verify', await sign(merchantId));
    assert.equal(verify.body.valid, true);
    assert.equal(verify.body.from_sequence, 3);
    assert.equal(verify.body.entries_checked, 2);
  });

  it('cannot be purged by a session setting: only the retention function deletes, and only entries older than a day', async () => {
    const merchantId = newId('mch');
    await publishAndAwait(merchantId, [productEvent(merchantId, 'products.created', { id: newId('prod'), object: 'product' })], 1);
    const intruder = new pg.Client({ connectionString: databaseUrl });
    await intruder.connect();
    try {
      await intruder.query('BEGIN');
      await intruder.query(`SELECT set_config('merx.audit_retention', 'on', true)`);
      await assert.rejects(intruder.query('DELETE FROM audit.entries WHERE merchant_id = $1', [merchantId]), /append-only \(DELETE refused\)/);
      await intruder.query('ROLLBACK');
      await assert.rejects(intruder.query('SELECT audit.purge_entries_through($1, 1)', [merchantId]), /younger than a day/);
    } finally {
      await intruder.end();
    }
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit.entries WHERE merchant_id = $1', [merchantId]);
    assert.deepEqual(rows, [{ n: 1 }]);
    const verify = await api('GET', '/api/v1/audit/verify', await sign(merchantId));
    assert.equal(verify.body.valid, true);
  });

  it('needs a token with audit:read', async () => {
    const merchantId = newId('mch');
    assert.equal((await api('GET', '/api/v1/audit', undefined)).status, 401);
    const forbidden = await api('GET', '/api/v1/audit', await sign(merchantId, 'products:read'));
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.required_scope, 'audit:read');
  });
});
