import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { PGlite, Transaction } from '@electric-sql/pglite';

export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

/** What a store needs from a database: parameterised SQL and transactions. */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<Row>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  /** Runs `work` in one transaction: commit when it resolves, rollback when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Cheap liveness probe used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
  readonly kind: 'postgres' | 'pglite';
}

// NUMERIC and BIGINT come back as strings from both drivers unless told otherwise; int8 counts
// we use are small enough for numbers, and timestamps we want as Date.
pg.types.setTypeParser(20, (value) => Number(value));

/**
 * Parameterised statements are sent as named prepared statements, so each pooled connection
 * parses and plans a given SQL text once rather than on every request. The name is derived from
 * the text, so two texts never share a name.
 */
const statementNames = new Map<string, string>();
function preparedQuery(sql: string, params?: unknown[]): pg.QueryConfig {
  if (!params || params.length === 0) return { text: sql };
  let name = statementNames.get(sql);
  if (!name) {
    name = `merx_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`;
    if (statementNames.size < 5_000) statementNames.set(sql, name);
  }
  return { text: sql, values: params, name };
}

export function createPostgresDb(connectionString: string, options: { maxConnections?: number; applicationName?: string } = {}): Db {
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return {
    kind: 'postgres',
    async query<Row>(sql: string, params?: unknown[]) {
      const result = await pool.query(preparedQuery(sql, params));
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await pool.query(sql);
    },
    async transaction<T>(work: (tx: Queryable) => Promise<T>) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const tx: Queryable = {
          async query<Row>(sql: string, params?: unknown[]) {
            const result = await client.query(preparedQuery(sql, params));
            return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
          },
          async exec(sql: string) {
            await client.query(sql);
          },
        };
        const value = await work(tx);
        await client.query('COMMIT');
        return value;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.end();
    },
  };
}

/**
 * PGlite is one connection: a transaction holds it exclusively, so statements issued outside
 * the transaction by other requests wait their turn. We remember the open transaction in
 * AsyncLocalStorage only to detect the one mistake that would deadlock: using the outer Db
 * from inside a transaction callback.
 */
export function createPgliteDb(pglite: PGlite): Db {
  const insideTransaction = new AsyncLocalStorage<boolean>();
  const toResult = <Row>(result: { rows: unknown[]; affectedRows?: number }): QueryResult<Row> => ({
    rows: result.rows as Row[],
    rowCount: result.affectedRows ?? result.rows.length,
  });
  const guard = () => {
    if (insideTransaction.getStore()) {
      throw new Error('db.query called inside a transaction: use the transaction handle');
    }
  };
  return {
    kind: 'pglite',
    async query<Row>(sql: string, params?: unknown[]) {
      guard();
      return toResult<Row>(await pglite.query(sql, params as unknown[]));
    },
    async exec(sql: string) {
      guard();
      await pglite.exec(sql);
    },
    async transaction<T>(work: (tx: Queryable) => Promise<T>) {
      guard();
      return pglite.transaction(async (transaction: Transaction) =>
        insideTransaction.run(true, () =>
          work({
            async query<Row>(sql: string, params?: unknown[]) {
              return toResult<Row>(await transaction.query(sql, params as unknown[]));
            },
            async exec(sql: string) {
              await transaction.exec(sql);
            },
          }),
        ),
      );
    },
    async ping() {
      await pglite.query('SELECT 1');
    },
    async close() {
      // The embedded launcher owns the PGlite instance and closes it once, after every service.
    },
  };
}
