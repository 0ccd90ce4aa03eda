import assert from 'node:assert/strict';
import { createLogger, migrateSchema, newId, openPgliteThread, startTableUpkeep, trustedMerchantId, type PgliteThread } from '@merx/kit';
import { recordingStatements, rowsReadBy } from '@merx/kit/testing';
import { MERCHANTS_SCHEMA, merchantsMigrations } from '../src/index.js';
import type { IngestedRecord } from '../src/domain/record.js';
import { findRecordsByKeyForMerchant, insertRecordsOnceForMerchant } from '../src/store/records-store.js';

const RECORDS = 3_000;

/**
 * A batch sent again is all duplicates, and each is looked up by its unique key to answer the
 * record it repeats. The embedded database has no autovacuum, and on a table never analyzed the
 * planner took the `(merchant, source, id)` index for that lookup and read the source's every
 * record per batch: resending 20,000 records took 38 s against 2.4 s for the first send. The
 * embedded mode's table upkeep gives it statistics; with them the lookup reads only its keys.
 */
describe('the lookup of resent records in the embedded database, once its tables are kept', function () {
  this.timeout(60_000);
  let database: PgliteThread;
  const merchantId = trustedMerchantId(newId('mch'));
  const sourceId = newId('src');

  before(async () => {
    database = await openPgliteThread(undefined);
    await migrateSchema(database.db, MERCHANTS_SCHEMA, merchantsMigrations);
    const receivedAt = new Date();
    for (let first = 0; first < RECORDS; first += 500) {
      const records: IngestedRecord[] = Array.from({ length: 500 }, (_, offset) => ({
        id: newId('rec'),
        merchantId,
        sourceId,
        type: 'order',
        external_id: `ORD-${first + offset}`,
        occurred_at: receivedAt.toISOString(),
        data: { total: first + offset },
        eventId: newId('evt'),
        receivedAt,
      }));
      await insertRecordsOnceForMerchant(database.db, merchantId, records);
    }
  });
  after(() => database?.close());

  it('reads only the rows of the keys it asks for', async () => {
    const upkeep = startTableUpkeep(database.db, createLogger('merchants-test', 'silent'), { intervalMs: 60_000 });
    try {
      assert.ok((await upkeep.run()).includes(`${MERCHANTS_SCHEMA}.records`), 'the records table, grown past a few pages, is analyzed');
    } finally {
      await upkeep.stop();
    }

    const present = Array.from({ length: 250 }, (_, index) => ({ type: 'order', externalId: `ORD-${index * 12}` }));
    const absent = Array.from({ length: 250 }, (_, index) => ({ type: 'order', externalId: `NEW-${index}` }));
    const recording = recordingStatements(database.db);
    const found = await findRecordsByKeyForMerchant(recording.db, merchantId, sourceId, [...absent, ...present]);
    assert.deepEqual(found.map((record) => record.external_id).sort(), present.map((key) => key.externalId).sort());
    assert.equal(recording.statements.length, 1);

    const { sql, params } = recording.statements[0]!;
    const read = await rowsReadBy(database.db, 'records', sql, params);
    assert.ok(read <= present.length, `the lookup of ${present.length + absent.length} keys read ${read} of the source's ${RECORDS} records`);
  });
});
