import assert from 'node:assert/strict';
import { migrateSchema, newId, trustedMerchantId, type Queryable } from '@merx/kit';
import { CATALOG_SCHEMA, catalogMigrations } from '../src/index.js';
import { findProductsBySkuForMerchant, insertProductsForMerchant } from '../src/store/products-store.js';
import { freshPglite, freshPostgres, type Storage } from './harness.js';
import { newProductRow } from './stored-product.js';

const PRODUCTS = 3_000;

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Rows the plan read from the products table: those it returned and those it read only to throw away. */
function productRowsRead(node: PlanNode): number {
  const own =
    node['Relation Name'] === 'products'
      ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * (node['Actual Loops'] ?? 1)
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + productRowsRead(child), 0);
}

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
      const statements: Array<{ sql: string; params: unknown[] }> = [];
      const found = await storage.db.transaction(async (tx) => {
        const recording: Queryable = {
          query: (sql, params = []) => {
            statements.push({ sql, params });
            return tx.query(sql, params);
          },
          exec: (sql) => tx.exec(sql),
        };
        return findProductsBySkuForMerchant(recording, merchantId, [...absent, ...present], { forUpdate: true });
      });
      assert.deepEqual(found.map((product) => product.sku).sort(), [...present].sort());
      assert.equal(statements.length, 1);

      const { sql, params } = statements[0]!;
      const plan = await storage.db.transaction(async (tx) => {
        const { rows } = await tx.query<Record<string, unknown>>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
        const value = rows[0]!['QUERY PLAN'];
        return (typeof value === 'string' ? JSON.parse(value) : value) as Array<{ Plan: PlanNode }>;
      });
      const read = productRowsRead(plan[0]!.Plan);
      assert.ok(read <= present.length, `the lookup of ${present.length + absent.length} skus read ${read} of the merchant's ${PRODUCTS} products`);
    });
  });
}

looksUpByTheWholeKey('PostgreSQL', () => freshPostgres());
looksUpByTheWholeKey('PGlite', () => freshPglite());
