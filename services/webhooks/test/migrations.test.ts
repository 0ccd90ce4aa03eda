import assert from 'node:assert/strict';
import { migrateSchema, newId, type Db } from '@merx/kit';
import { createScratchDatabase } from '@merx/kit/testing';
import { WEBHOOKS_SCHEMA, webhooksMigrations } from '../src/store/migrations.js';

/**
 * The work queue's own migrations on a database an earlier release left: what was waiting, in
 * flight and dead then is waiting, in flight and dead afterwards.
 */
describe('webhooks migrations of the work queue (PostgreSQL)', function () {
  this.timeout(30_000);
  let db: Db;
  let drop: () => Promise<void>;
  const QUEUE_MIGRATIONS = ['004_delivery_queue', '007_delivery_lanes'];

  before(async () => {
    ({ db, drop } = await createScratchDatabase('webhooks_migrations_test'));
  });

  after(async () => {
    await drop();
  });

  it('moves waiting deliveries into the queue, claims into claims, and dead letters to dead_at', async () => {
    await migrateSchema(
      db,
      WEBHOOKS_SCHEMA,
      webhooksMigrations.filter((migration) => !QUEUE_MIGRATIONS.includes(migration.id)),
    );
    const merchantId = newId('mch');
    const endpointId = newId('wh');
    const at = new Date('2030-01-01T00:00:00.000Z');
    const later = new Date('2030-01-01T00:05:00.000Z');
    await db.query(
      `INSERT INTO webhooks.endpoints (merchant_id, id, kind, url, topics, status, secret, enabled_at, created_at, updated_at)
       VALUES ($1, $2, 'subscription', 'https://example.com/hooks', '{*}', 'enabled', 'whsec_x', $3, $3, $3)`,
      [merchantId, endpointId, at],
    );
    const ids = { pending: newId('del'), failing: newId('del'), claimed: newId('del'), dead: newId('del'), replayed: newId('del'), succeeded: newId('del') };
    const insert = (id: string, status: string, columns: { next?: Date | null; claimedBy?: string; completed?: Date; replayedBy?: string }) =>
      db.query(
        `INSERT INTO webhooks.deliveries (merchant_id, id, event_id, topic, endpoint_kind, endpoint_id, status, next_attempt_at, claimed_by, claimed_at,
                                          completed_at, replayed_by, created_at, updated_at)
         VALUES ($1, $2, 'evt_1', 'products.created', 'subscription', $3, $4, $5, $6, $7, $8, $9, $7, $7)`,
        [merchantId, id, endpointId, status, columns.next ?? null, columns.claimedBy ?? null, at, columns.completed ?? null, columns.replayedBy ?? null],
      );
    await insert(ids.pending, 'pending', { next: at });
    await insert(ids.failing, 'failing', { next: later });
    await insert(ids.claimed, 'pending', { next: at, claimedBy: 'wkr_old' });
    await insert(ids.dead, 'dead', { completed: later });
    await insert(ids.replayed, 'dead', { completed: later, replayedBy: ids.pending });
    await insert(ids.succeeded, 'succeeded', { completed: later });

    assert.deepEqual(await migrateSchema(db, WEBHOOKS_SCHEMA, webhooksMigrations), QUEUE_MIGRATIONS);

    const { rows: queue } = await db.query<{ delivery_id: string; next_attempt_at: Date }>(
      `SELECT delivery_id, next_attempt_at FROM webhooks.queue WHERE merchant_id = $1 AND endpoint_id = $2 ORDER BY next_attempt_at`,
      [merchantId, endpointId],
    );
    assert.deepEqual(
      queue.map((row) => [row.delivery_id, row.next_attempt_at.toISOString()]),
      [
        [ids.pending, at.toISOString()],
        [ids.failing, later.toISOString()],
      ],
    );
    const { rows: claims } = await db.query(`SELECT delivery_id, worker_id, claimed_at, slow FROM webhooks.claims WHERE merchant_id = $1`, [merchantId]);
    assert.deepEqual(claims, [{ delivery_id: ids.claimed, worker_id: 'wkr_old', claimed_at: at, slow: false }]);
    // An endpoint from before the lanes keeps the fast lane it was served in; only new ones start slow.
    const { rows: lanes } = await db.query(`SELECT slow_since FROM webhooks.endpoints WHERE merchant_id = $1`, [merchantId]);
    assert.deepEqual(lanes, [{ slow_since: null }]);
    const { rows: dead } = await db.query<{ id: string; dead_at: Date | null }>(
      `SELECT id, dead_at FROM webhooks.deliveries WHERE merchant_id = $1 AND dead_at IS NOT NULL ORDER BY id`,
      [merchantId],
    );
    assert.deepEqual(
      dead,
      [ids.dead, ids.replayed].sort().map((id) => ({ id, dead_at: later })),
    );
    const { rows: gone } = await db.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'webhooks' AND table_name = 'deliveries' AND column_name LIKE 'claimed%'`,
    );
    assert.deepEqual(gone, []);
    // No index of deliveries names a column an attempt's record changes, so that update stays on its page.
    const { rows: indexes } = await db.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = 'webhooks' AND tablename = 'deliveries'`,
    );
    for (const { indexdef } of indexes) assert.doesNotMatch(indexdef, /status|next_attempt_at|completed_at|attempt_count|last_/, indexdef);
  });
});
