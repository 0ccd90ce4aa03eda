import { Conflict, type MerchantId, type Queryable } from '@merx/kit';
import { canonicalPrice } from '@merx/kit';
import type { NewProduct, Product, ProductChanges, ProductStatus } from '../domain/product.js';
import { CATALOG_SCHEMA } from './migrations.js';

const TABLE = `${CATALOG_SCHEMA}.products`;

/**
 * The columns a product is read from, qualified by `table` where a statement needs it. Times come
 * as whole epoch milliseconds, not as timestamptz text: a Date from a number costs nothing beside
 * parsing that text on every row read, and is the same instant a Date holds (the text parser keeps
 * the milliseconds and drops the microseconds, as floor does, before 1970 too).
 */
function columnsOf(table = ''): string {
  const column = (name: string) => `${table}${name}`;
  const epochMs = (name: string) => `floor(extract(epoch from ${column(name)}) * 1000)::int8 AS ${name}_ms`;
  return [
    ...['merchant_id', 'id', 'sku', 'title', 'description'].map(column),
    `${column('price')}::text AS price`,
    ...['currency', 'status', 'inventory_quantity', 'attributes', 'version'].map(column),
    epochMs('created_at'),
    epochMs('updated_at'),
  ].join(', ');
}
const COLUMNS = columnsOf();

interface ProductRow {
  merchant_id: string;
  id: string;
  sku: string;
  title: string;
  description: string | null;
  price: string;
  currency: string;
  status: ProductStatus;
  inventory_quantity: number | null;
  attributes: Record<string, string>;
  version: number;
  /** int8: a number from node-postgres (the kit's parser), a bigint or a number from PGlite. */
  created_at_ms: number | bigint | string;
  updated_at_ms: number | bigint | string;
}

function toProduct(row: ProductRow): Product {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    sku: row.sku,
    title: row.title,
    description: row.description,
    price: canonicalPrice(row.price, row.currency),
    currency: row.currency,
    status: row.status,
    inventoryQuantity: row.inventory_quantity,
    attributes: row.attributes,
    version: Number(row.version),
    createdAt: new Date(Number(row.created_at_ms)),
    updatedAt: new Date(Number(row.updated_at_ms)),
  };
}

function isSkuClash(error: unknown): boolean {
  const pgError = error as { code?: string; constraint?: string; message?: string };
  return pgError?.code === '23505' && (pgError.constraint === 'products_sku_per_merchant' || /products_sku_per_merchant/.test(pgError.message ?? ''));
}

function skuConflict(sku: string): Conflict {
  // No extension members: the Problem schema is closed, and the detail names the field.
  return new Conflict(`A product with sku ${sku} already exists.`);
}

export async function insertProductForMerchant(tx: Queryable, merchantId: MerchantId, id: string, product: NewProduct, now: Date): Promise<Product> {
  try {
    const { rows } = await tx.query<ProductRow>(
      `INSERT INTO ${TABLE} (merchant_id, id, sku, title, description, price, currency, status, inventory_quantity, attributes, version, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1, $11, $11)
       RETURNING ${COLUMNS}`,
      [
        merchantId,
        id,
        product.sku,
        product.title,
        product.description,
        product.price,
        product.currency,
        product.status,
        product.inventoryQuantity,
        JSON.stringify(product.attributes),
        now,
      ],
    );
    return toProduct(rows[0]!);
  } catch (error) {
    if (isSkuClash(error)) throw skuConflict(product.sku);
    throw error;
  }
}

export async function findProductForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<Product | undefined> {
  const { rows } = await db.query<ProductRow>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE merchant_id = $1 AND id = $2${options.forUpdate ? ' FOR UPDATE' : ''}`, [
    merchantId,
    id,
  ]);
  return rows[0] ? toProduct(rows[0]) : undefined;
}

export interface ProductFilters {
  status?: ProductStatus;
  sku?: string;
  currency?: string;
}

/** Newest first; `after` is the last id of the previous page. Fetches limit + 1 to know if more exist. */
export async function listProductsForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  page: { limit: number; after?: string | undefined },
  filters: ProductFilters,
): Promise<Product[]> {
  const conditions = ['merchant_id = $1'];
  const params: unknown[] = [merchantId];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    conditions.push(sql.replace('?', `$${params.length}`));
  };
  if (page.after) add('id < ?', page.after);
  if (filters.status) add('status = ?', filters.status);
  if (filters.sku) add('sku = ?', filters.sku);
  if (filters.currency) add('currency = ?', filters.currency);
  params.push(page.limit + 1);
  const { rows } = await db.query<ProductRow>(
    `SELECT ${COLUMNS} FROM ${TABLE} WHERE ${conditions.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toProduct);
}

const COLUMN_OF: Record<keyof ProductChanges, string> = {
  sku: 'sku',
  title: 'title',
  description: 'description',
  price: 'price',
  currency: 'currency',
  status: 'status',
  inventoryQuantity: 'inventory_quantity',
  attributes: 'attributes',
};

export async function updateProductForMerchant(tx: Queryable, merchantId: MerchantId, id: string, changes: ProductChanges, now: Date): Promise<Product> {
  const sets: string[] = [];
  const params: unknown[] = [merchantId, id, now];
  for (const [key, value] of Object.entries(changes) as [keyof ProductChanges, unknown][]) {
    params.push(key === 'attributes' ? JSON.stringify(value) : value);
    sets.push(`${COLUMN_OF[key]} = $${params.length}`);
  }
  try {
    const { rows } = await tx.query<ProductRow>(
      `UPDATE ${TABLE} SET ${[...sets, 'version = version + 1', 'updated_at = $3'].join(', ')}
       WHERE merchant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      params,
    );
    return toProduct(rows[0]!);
  } catch (error) {
    if (isSkuClash(error)) throw skuConflict(String(changes.sku));
    throw error;
  }
}

export async function deleteProductForMerchant(tx: Queryable, merchantId: MerchantId, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${TABLE} WHERE merchant_id = $1 AND id = $2`, [merchantId, id]);
}

/** Every product of the merchant (a sandbox reset); returns how many there were. */
export async function deleteAllProductsForMerchant(tx: Queryable, merchantId: MerchantId): Promise<number> {
  const { rowCount } = await tx.query(`DELETE FROM ${TABLE} WHERE merchant_id = $1`, [merchantId]);
  return rowCount;
}

/**
 * The merchant's products with these skus, locked for the rest of the transaction when asked.
 *
 * One lookup by the whole key (merchant_id, sku) per sku, in a LATERAL subquery the planner keeps
 * as it is (OFFSET 0: never merged into a join it could hash). `sku = ANY(...)` left the plan to
 * statistics: on a table never analyzed (PGlite has no autovacuum; a fresh table under a bulk
 * load is not analyzed yet either) the planner guessed the merchant had a handful of products,
 * read all of them through the index on merchant_id and filtered by sku. Every chunk of a bulk
 * upsert then read the merchant's whole catalogue: 210 ms a chunk in PGlite at 60,000 products,
 * so an import slowed as it grew. Rows are locked in the order of `skus`, sorted here, so two
 * writers of the same skus never deadlock.
 */
export async function findProductsBySkuForMerchant(
  tx: Queryable,
  merchantId: MerchantId,
  skus: string[],
  options: { forUpdate?: boolean } = {},
): Promise<Product[]> {
  if (skus.length === 0) return [];
  const { rows } = await tx.query<ProductRow>(
    `SELECT p.* FROM unnest($2::text[]) WITH ORDINALITY AS wanted(sku, n)
     CROSS JOIN LATERAL (SELECT ${COLUMNS} FROM ${TABLE} WHERE merchant_id = $1 AND sku = wanted.sku OFFSET 0${options.forUpdate ? ' FOR UPDATE' : ''}) p
     ORDER BY wanted.n`,
    [merchantId, [...skus].sort()],
  );
  return rows.map(toProduct);
}

/** The unnest source both bulk statements read: the rows as arrays, $2–$10 after the merchant id. */
const BATCH_ITEMS = `unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::numeric[], $7::text[], $8::text[], $9::int[], $10::jsonb[])
         AS item(id, sku, title, description, price, currency, status, inventory_quantity, attributes)`;

function batchColumns(rows: Array<{ id: string; fields: NewProduct }>): unknown[] {
  const column = <T>(pick: (fields: NewProduct) => T) => rows.map(({ fields }) => pick(fields));
  return [
    rows.map(({ id }) => id),
    column((p) => p.sku),
    column((p) => p.title),
    column((p) => p.description),
    column((p) => p.price),
    column((p) => p.currency),
    column((p) => p.status),
    column((p) => p.inventoryQuantity),
    column((p) => JSON.stringify(p.attributes)),
  ];
}

/** RETURNING of an UPDATE … FROM, where the bare names would also match the source's columns. */
const QUALIFIED_COLUMNS = columnsOf('product.');

/** Many new products in one statement (bulk creation); a sku that exists fails the whole statement. */
export async function insertProductsForMerchant(
  tx: Queryable,
  merchantId: MerchantId,
  products: Array<{ id: string; product: NewProduct }>,
  now: Date,
): Promise<Product[]> {
  if (products.length === 0) return [];
  try {
    const { rows } = await tx.query<ProductRow>(
      `INSERT INTO ${TABLE} (merchant_id, id, sku, title, description, price, currency, status, inventory_quantity, attributes, version, created_at, updated_at)
       SELECT $1, id, sku, title, description, price, currency, status, inventory_quantity, attributes, 1, $11, $11
       FROM ${BATCH_ITEMS}
       RETURNING ${COLUMNS}`,
      [merchantId, ...batchColumns(products.map(({ id, product }) => ({ id, fields: product }))), now],
    );
    return rows.map(toProduct);
  } catch (error) {
    if (isSkuClash(error)) throw skuConflict(products.map(({ product }) => product.sku).join(', '));
    throw error;
  }
}

/**
 * Many products changed in one statement (a bulk upsert's updates): each row is given whole, as
 * the caller read it under FOR UPDATE in this transaction with its changes applied, so one
 * UPDATE … FROM unnest covers any mix of changed columns. Version and update time move as PATCH moves them.
 */
export async function updateProductsForMerchant(
  tx: Queryable,
  merchantId: MerchantId,
  updates: Array<{ current: Product; changes: ProductChanges }>,
  now: Date,
): Promise<Product[]> {
  if (updates.length === 0) return [];
  const rows = updates.map(({ current, changes }) => ({ id: current.id, fields: { ...current, ...changes } }));
  try {
    const { rows: stored } = await tx.query<ProductRow>(
      `UPDATE ${TABLE} AS product
       SET sku = item.sku, title = item.title, description = item.description, price = item.price, currency = item.currency,
           status = item.status, inventory_quantity = item.inventory_quantity, attributes = item.attributes,
           version = product.version + 1, updated_at = $11
       FROM ${BATCH_ITEMS}
       WHERE product.merchant_id = $1 AND product.id = item.id
       RETURNING ${QUALIFIED_COLUMNS}`,
      [merchantId, ...batchColumns(rows), now],
    );
    return stored.map(toProduct);
  } catch (error) {
    if (isSkuClash(error)) throw skuConflict(updates.map(({ current, changes }) => changes.sku ?? current.sku).join(', '));
    throw error;
  }
}

/** Oldest first after `afterId` (an export's stable order: every product once, new ones at the end). */
export async function exportProductsForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  afterId: string | undefined,
  limit: number,
  filters: ProductFilters,
): Promise<Product[]> {
  const conditions = ['merchant_id = $1'];
  const params: unknown[] = [merchantId];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    conditions.push(sql.replace('?', `$${params.length}`));
  };
  if (afterId) add('id > ?', afterId);
  if (filters.status) add('status = ?', filters.status);
  if (filters.sku) add('sku = ?', filters.sku);
  if (filters.currency) add('currency = ?', filters.currency);
  params.push(limit);
  const { rows } = await db.query<ProductRow>(
    `SELECT ${COLUMNS} FROM ${TABLE} WHERE ${conditions.join(' AND ')} ORDER BY id ASC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toProduct);
}
