import assert from 'node:assert/strict';
import pg from 'pg';
import { migrateSchema, newId, trustedMerchantId, type Db, type MerchantId } from '@merx/kit';
import { CATALOG_SCHEMA, catalogMigrations } from '../src/index.js';
import { exportProductsForMerchant, findProductForMerchant, findProductsBySkuForMerchant, insertProductsForMerchant } from '../src/store/products-store.js';
import { freshPglite, freshPostgres, type Storage } from './harness.js';
import { newProductRow } from './stored-product.js';

/**
 * Stored times as the store reads them (whole epoch milliseconds, not timestamptz text): the same
 * instant the text would have parsed to, whatever the session's time zone, before 1970 too, with
 * and without fractional seconds, the microseconds dropped as the text parser drops them.
 */
const STORED_TIMES: Array<[literal: string, iso: string]> = [
  ['2026-11-22 10:04:05+00', '2026-11-22T10:04:05.000Z'],
  ['2026-11-22 10:04:05.1+00', '2026-11-22T10:04:05.100Z'],
  ['2026-11-22 10:04:05.123+00', '2026-11-22T10:04:05.123Z'],
  ['2026-11-22 10:04:05.123999+00', '2026-11-22T10:04:05.123Z'],
  ['2026-11-22 10:04:05.000001+00', '2026-11-22T10:04:05.000Z'],
  ['2026-11-22 15:34:05.5+05:30', '2026-11-22T10:04:05.500Z'],
  ['2026-11-22 06:34:05.25-03:30', '2026-11-22T10:04:05.250Z'],
  ['1970-01-01 00:00:00+00', '1970-01-01T00:00:00.000Z'],
  ['1969-12-31 23:59:59.999+00', '1969-12-31T23:59:59.999Z'],
  ['1969-12-31 23:59:59.9995+00', '1969-12-31T23:59:59.999Z'],
  ['1969-12-31 23:59:59.0005+00', '1969-12-31T23:59:59.000Z'],
  ['1901-07-04 12:00:00.042+00', '1901-07-04T12:00:00.042Z'],
  ['2038-01-19 03:14:08.001+00', '2038-01-19T03:14:08.001Z'],
];

async function storeProducts(db: Db, merchantId: MerchantId): Promise<string[]> {
  const products = STORED_TIMES.map((_, index) => newProductRow(`prod_${String(index).padStart(26, '0')}`, `TIME-${index}`, 'Time'));
  await insertProductsForMerchant(db, merchantId, products, new Date());
  for (const [index, [literal]] of STORED_TIMES.entries()) {
    await db.query(`UPDATE ${CATALOG_SCHEMA}.products SET created_at = $3::timestamptz, updated_at = $3::timestamptz WHERE merchant_id = $1 AND id = $2`, [
      merchantId,
      products[index]!.id,
      literal,
    ]);
  }
  return products.map(({ id }) => id);
}

function readsStoredTimes(name: string, open: () => Promise<Storage>, textParsed?: (storage: Storage, merchantId: MerchantId) => Promise<Map<string, string>>) {
  describe(name, () => {
    let storage: Storage;
    const merchantId = trustedMerchantId(newId('mch'));
    let ids: string[];

    before(async () => {
      storage = await open();
      await migrateSchema(storage.db, CATALOG_SCHEMA, catalogMigrations);
      ids = await storeProducts(storage.db, merchantId);
    });
    after(async () => {
      await storage?.close();
    });

    it('reads each stored time as the instant it is, to the millisecond', async () => {
      for (const [index, [literal, iso]] of STORED_TIMES.entries()) {
        const product = await findProductForMerchant(storage.db, merchantId, ids[index]!);
        assert.equal(product!.createdAt.toISOString(), iso, literal);
        assert.equal(product!.updatedAt.toISOString(), iso, literal);
      }
    });

    it('reads the same times through the export and the bulk reads', async () => {
      const exported = await exportProductsForMerchant(storage.db, merchantId, undefined, 100, {});
      assert.deepEqual(
        exported.map((product) => product.createdAt.toISOString()),
        STORED_TIMES.map(([, iso]) => iso),
      );
      const bySku = await findProductsBySkuForMerchant(storage.db, merchantId, ['TIME-3', 'TIME-9']);
      assert.deepEqual(
        bySku.map((product) => product.updatedAt.toISOString()),
        [STORED_TIMES[3]![1], STORED_TIMES[9]![1]],
      );
    });

    if (textParsed) {
      it('reads the instants the timestamptz text parses to', async () => {
        const parsed = await textParsed(storage, merchantId);
        for (const id of ids) {
          const product = await findProductForMerchant(storage.db, merchantId, id);
          assert.equal(product!.createdAt.toISOString(), parsed.get(id));
        }
      });
    }
  });
}

/** What the driver's timestamptz parser makes of the session's text, the way the store read times before. */
async function parsedFromText(storage: Storage, merchantId: MerchantId): Promise<Map<string, string>> {
  const parseTimestamptz = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text');
  const { rows } = await storage.db.query<{ id: string; shown: string }>(
    `SELECT id, created_at::text AS shown FROM ${CATALOG_SCHEMA}.products WHERE merchant_id = $1`,
    [merchantId],
  );
  return new Map(rows.map((row) => [row.id, (parseTimestamptz(row.shown) as Date).toISOString()]));
}

describe('catalog store: stored times', () => {
  readsStoredTimes('PostgreSQL, sessions in UTC', () => freshPostgres({ timeZone: 'UTC' }), parsedFromText);
  readsStoredTimes('PostgreSQL, sessions in America/St_Johns (-03:30)', () => freshPostgres({ timeZone: 'America/St_Johns' }), parsedFromText);
  readsStoredTimes('PGlite', freshPglite, parsedFromText);
});
