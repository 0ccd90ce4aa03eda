import { openSecret, sealSecret, type MerchantId, type Queryable, type SealedColumns } from '@merx/kit';
import type { Resource } from '../domain/resource.js';
import { MERCHANTS_SCHEMA } from './migrations.js';

/** How a field is stored; its column has the field's (wire) name. */
export type ColumnType = 'text' | 'jsonb' | 'text[]' | 'boolean';

/** One configuration table: the columns of `fields`, next to id, merchant_id, version and times. */
export interface ResourceTable<F extends object> {
  name: string;
  columns: { [K in keyof F]-?: ColumnType };
  /** Text columns holding signing secrets: sealed on write, opened on read (MERX_SECRETS_KEYS). */
  sealed?: readonly string[];
}

/** A filter of a list: equality on a column, or membership in an array column. */
export type Condition = { column: string; equals: string | boolean } | { column: string; contains: string };

/** Row locks a caller may need: `update` to change the row, `key share` to keep it from being deleted meanwhile. */
export type RowLock = 'update' | 'key share';

const qualified = (table: ResourceTable<object>) => `${MERCHANTS_SCHEMA}.${table.name}`;
const columnsOf = <F extends object>(table: ResourceTable<F>) => Object.keys(table.columns) as (keyof F & string)[];
const cast = (type: ColumnType) => (type === 'jsonb' ? '::jsonb' : type === 'text[]' ? '::text[]' : '');
const toParam = (type: ColumnType, value: unknown) => (type === 'jsonb' ? (value === null ? null : JSON.stringify(value)) : value);

/** A field's value as its column stores it: JSON text for jsonb, sealed for a secret. */
function columnValue<F extends object>(
  table: ResourceTable<F>,
  column: keyof F & string,
  value: unknown,
  owner: { merchantId: string; recordId: string },
): unknown {
  if (table.sealed?.includes(column) && typeof value === 'string') return sealSecret(value, owner);
  return toParam(table.columns[column], value);
}

/** The sealed columns of a table, for `npm run secrets:reseal`. */
export function sealedColumnsOf(table: ResourceTable<object>): SealedColumns {
  return { table: qualified(table), columns: [...(table.sealed ?? [])] };
}

function selectList<F extends object>(table: ResourceTable<F>): string {
  return ['merchant_id', 'id', ...columnsOf(table), 'version', 'created_at', 'updated_at'].join(', ');
}

function toResource<F extends object>(table: ResourceTable<F>, row: Record<string, unknown>): Resource<F> {
  const fields = {} as F;
  const owner = { merchantId: row.merchant_id as string, recordId: row.id as string };
  for (const column of columnsOf(table)) {
    const value = row[column];
    (fields as Record<string, unknown>)[column] = table.sealed?.includes(column) && typeof value === 'string' ? openSecret(value, owner) : value;
  }
  return {
    id: row.id as string,
    merchantId: row.merchant_id as string,
    fields,
    version: Number(row.version),
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

export async function insertResourceForMerchant<F extends object>(
  db: Queryable,
  table: ResourceTable<F>,
  merchantId: MerchantId,
  resource: Resource<F>,
): Promise<Resource<F>> {
  const columns = columnsOf(table);
  const params: unknown[] = [merchantId, resource.id, resource.version, resource.createdAt, resource.updatedAt];
  const placeholders = columns.map((column) => {
    params.push(columnValue(table, column, resource.fields[column], { merchantId, recordId: resource.id }));
    return `$${params.length}${cast(table.columns[column])}`;
  });
  const { rows } = await db.query<Record<string, unknown>>(
    `INSERT INTO ${qualified(table)} (merchant_id, id, version, created_at, updated_at, ${columns.join(', ')})
     VALUES ($1, $2, $3, $4, $5, ${placeholders.join(', ')}) RETURNING ${selectList(table)}`,
    params,
  );
  return toResource(table, rows[0]!);
}

export async function findResourceForMerchant<F extends object>(
  db: Queryable,
  table: ResourceTable<F>,
  merchantId: MerchantId,
  id: string,
  lock?: RowLock,
): Promise<Resource<F> | undefined> {
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT ${selectList(table)} FROM ${qualified(table)} WHERE merchant_id = $1 AND id = $2${lock ? ` FOR ${lock.toUpperCase()}` : ''}`,
    [merchantId, id],
  );
  return rows[0] ? toResource(table, rows[0]) : undefined;
}

/** Several rows by id, locked in id order (concurrent writers never wait on each other crosswise). */
export async function findResourcesForMerchant<F extends object>(
  db: Queryable,
  table: ResourceTable<F>,
  merchantId: MerchantId,
  ids: string[],
  lock?: RowLock,
): Promise<Resource<F>[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT ${selectList(table)} FROM ${qualified(table)} WHERE merchant_id = $1 AND id = ANY($2::text[]) ORDER BY id${lock ? ` FOR ${lock.toUpperCase()}` : ''}`,
    [merchantId, ids],
  );
  return rows.map((row) => toResource(table, row));
}

/** Newest first by id (ids sort by creation); `limit + 1` rows tell whether another page exists. */
export async function listResourcesForMerchant<F extends object>(
  db: Queryable,
  table: ResourceTable<F>,
  merchantId: MerchantId,
  page: { limit: number; after?: string | undefined },
  conditions: Condition[],
): Promise<Resource<F>[]> {
  const params: unknown[] = [merchantId];
  const where = ['merchant_id = $1'];
  for (const condition of conditions) {
    if (!(condition.column in table.columns)) throw new Error(`${condition.column} is not a column of ${table.name}`);
    if ('equals' in condition) {
      params.push(condition.equals);
      where.push(`${condition.column} = $${params.length}`);
    } else {
      params.push(condition.contains);
      where.push(`$${params.length} = ANY(${condition.column})`);
    }
  }
  if (page.after) {
    params.push(page.after);
    where.push(`id < $${params.length}`);
  }
  params.push(page.limit + 1);
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT ${selectList(table)} FROM ${qualified(table)} WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map((row) => toResource(table, row));
}

export async function updateResourceForMerchant<F extends object>(
  tx: Queryable,
  table: ResourceTable<F>,
  merchantId: MerchantId,
  id: string,
  changes: Partial<F>,
  now: Date,
): Promise<Resource<F>> {
  const params: unknown[] = [merchantId, id, now];
  const sets = (Object.keys(changes) as (keyof F & string)[]).map((column) => {
    params.push(columnValue(table, column, changes[column], { merchantId, recordId: id }));
    return `${column} = $${params.length}${cast(table.columns[column])}`;
  });
  const { rows } = await tx.query<Record<string, unknown>>(
    `UPDATE ${qualified(table)} SET ${[...sets, 'version = version + 1', 'updated_at = $3'].join(', ')}
     WHERE merchant_id = $1 AND id = $2 RETURNING ${selectList(table)}`,
    params,
  );
  return toResource(table, rows[0]!);
}

export async function deleteResourceForMerchant(tx: Queryable, table: ResourceTable<object>, merchantId: MerchantId, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${qualified(table)} WHERE merchant_id = $1 AND id = $2`, [merchantId, id]);
}
