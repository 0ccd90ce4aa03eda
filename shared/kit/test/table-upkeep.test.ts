import assert from 'node:assert/strict';
import { openPgliteThread, type PgliteThread } from '../src/pglite-worker-db.js';
import { startTableUpkeep } from '../src/table-upkeep.js';
import { silentLogger } from './support.js';

/** The embedded database's stand-in for autovacuum (table-upkeep.ts), on the database thread the embedded mode runs. */
describe('table upkeep of the embedded database', function () {
  this.timeout(60_000);
  let database: PgliteThread;

  before(async () => {
    database = await openPgliteThread(undefined);
    await database.db.exec(`
      CREATE SCHEMA upkeep;
      CREATE TABLE upkeep.small (id int PRIMARY KEY);
      CREATE TABLE upkeep.growing (id int PRIMARY KEY, body text NOT NULL);
      CREATE TABLE upkeep.queue (id int PRIMARY KEY, body text NOT NULL);
      INSERT INTO upkeep.small SELECT generate_series(1, 10);`);
  });
  after(() => database?.close());

  const upkeep = () => startTableUpkeep(database.db, silentLogger, { intervalMs: 60_000 });
  const runOnce = async () => {
    const keeper = upkeep();
    try {
      return (await keeper.run()).filter((name) => name.startsWith('upkeep.'));
    } finally {
      await keeper.stop();
    }
  };
  const fill = (table: string, from: number, to: number) =>
    database.db.query(`INSERT INTO upkeep.${table} SELECT i, repeat('x', 200) FROM generate_series($1::int, $2::int) AS i`, [from, to]);
  const statisticsOf = async (table: string) =>
    (
      await database.db.query<{ reltuples: number; pages: number }>(
        `SELECT reltuples, pg_relation_size(oid) / current_setting('block_size')::int AS pages FROM pg_class WHERE oid = $1::regclass`,
        [`upkeep.${table}`],
      )
    ).rows[0]!;

  it('analyzes a table once it is worth it, then again each time it has doubled', async () => {
    await fill('growing', 1, 2_000);
    assert.equal(Number((await statisticsOf('growing')).reltuples), -1, 'PGlite never analyzed it on its own');

    assert.deepEqual(await runOnce(), ['upkeep.growing'], 'a table of a few rows is left to the defaults');
    assert.equal(Number((await statisticsOf('growing')).reltuples), 2_000);
    assert.deepEqual(await runOnce(), [], 'nothing has grown since');

    await fill('growing', 2_001, 3_000);
    assert.deepEqual(await runOnce(), [], 'half as large again is not yet twice');
    await fill('growing', 3_001, 4_000);
    assert.deepEqual(await runOnce(), ['upkeep.growing']);
    // The VACUUM after the ANALYZE leaves its own estimate, within a page's worth of the truth.
    assert.ok(Math.abs(Number((await statisticsOf('growing')).reltuples) - 4_000) < 50);
  });

  it('vacuums a queue table emptied as fast as it fills, so it stops growing', async () => {
    for (let round = 0; round < 3; round++) {
      await fill('queue', 1, 2_000);
      await database.db.query('DELETE FROM upkeep.queue');
    }
    const before = await statisticsOf('queue');
    assert.ok(before.pages > 30, `every deleted row still takes its place (${before.pages} pages)`);

    assert.deepEqual(await runOnce(), ['upkeep.queue']);
    assert.equal(Number((await statisticsOf('queue')).pages), 0, 'the VACUUM gave the empty pages back');
  });
});
