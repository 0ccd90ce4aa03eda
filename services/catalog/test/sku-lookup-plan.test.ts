import assert from 'node:assert/strict';
import { migrateSchema, newId, trustedMerchantId } from '@merx/kit';
import { recordingStatements, rowsReadBy } from '@merx/kit/testing';
import { CATALOG_SCHEMA, catalogMigrations } from '../src/index.js';
import { findProductsBySkuForMerchant, insertProductsForMerchant } from '../src/store/products-store.js';
import { freshPglite, freshPostgres, type Storage } from './harness.js';
import { newProductRow } from './stored-product.js';

const PRODUCTS = 3_000;

/**
 * A bulk upsert looks its chunk's skus up on a table nobody has analyzed: PGlite has no
 * autovacuum, and a table under a bulk load is not analyzed yet either. The lookup must read the
 * rows it asks for, not the merchant's whole catalogue (which made an embedded import of 100,000
 * products slow down chunk after chunk).
 */
function looksUpByTheWholeKey(name: string, open: () => Promise<Storage>) {
  describe(`${name}: the bulk sku lookup on a table never analyzed`, function () {
    this.timeout(60_000);
    let storage: Storage;
    const merchantId = trustedMerchantId(newId('mch'));

    before(async () => {
      storage = await open();
      await migrateSchema(storage.db, CATALOG_SCHEMA, catalogMigrations);
      await storage.db.query(`ALTER TABLE ${CATALOG_SCHEMA}.products SET (autovacuum_enabled = false)`);
      for (let first = 0; first < PRODUCTS; first += 500) {
        const products = Array.from({ length: 500 }, (_, offset) => newProductRow(newId('prod'), `SKU-${first + offset}`, 'Plan'));
        await insertProductsForMerchant(storage.db, merchantId, products, new Date());
      }
    });
    after(() => storage?.close());

    it("finds a chunk's skus, locked, reading only their rows", async () => {
      // A chunk's worth: the planner's guess for `sku = ANY` of 500 values is what went wrong.
      const present = Array.from({ length: 250 }, (_, index) => `SKU-${index * 12}`);
      const absent = Array.from({ length: 250 }, (_, index) => `NEW-${index}`);
      let statements: Array<{ sql: string; params: unknown[] }> = [];
      const found = await storage.db.transaction(async (tx) => {
        const recording = recordingStatements(tx);
        statements = recording.statements;
        return findProductsBySkuForMerchant(recording.db, merchantId, [...absent, ...present], { forUpdate: true });
      });
      assert.deepEqual(found.map((product) => product.sku).sort(), [...present].sort());
      assert.equal(statements.length, 1);

      const { sql, params } = statements[0]!;
      const read = await rowsReadBy(storage.db, 'products', sql, params);
      assert.ok(read <= present.length, `the lookup of ${present.length + absent.length} skus read ${read} of the merchant's ${PRODUCTS} products`);
    });
  });
}

looksUpByTheWholeKey('PostgreSQL', () => freshPostgres());
looksUpByTheWholeKey('PGlite', () => freshPglite());
