import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import { pgliteStatements } from './pglite-statements.js';
import { dbStatements } from './metrics.js';
import { traceQuery, traceTransaction } from './tracing.js';
import { withUnitsOfWork, type BaseDb, type UnitsOfWork } from './unit-of-work.js';

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

export interface Db extends Queryable, UnitsOfWork {
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
 * the text, so two texts never share a name. Our statements have fixed shapes (batches go through
 * `unnest` of arrays, never a VALUES list per row), so the set stays small; past the cap the rest
 * run unnamed, so no connection's set grows without bound. `unnamed` sends none at all, for a
 * transaction-pooling PgBouncer, where the next transaction may land on another server connection.
 */
export type PreparedStatements = 'named' | 'unnamed';
const MAX_NAMED_STATEMENTS = 2_000;
const statementNames = new Map<string, string>();
function preparedQuery(sql: string, params: unknown[] | undefined, mode: PreparedStatements): pg.QueryConfig {
  if (!params || params.length === 0) return { text: sql };
  if (mode === 'unnamed') return { text: sql, values: params };
  let name = statementNames.get(sql);
  if (!name) {
    if (statementNames.size >= MAX_NAMED_STATEMENTS) return { text: sql, values: params };
    name = `merx_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`;
    statementNames.set(sql, name);
  }
  return { text: sql, values: params, name };
}

/** Every statement goes through here: counted (merx_db_statements_total) and traced. */
export function observedStatement<T>(system: 'postgres' | 'pglite', sql: string, work: () => Promise<T>): Promise<T> {
  dbStatements.inc({ driver: system === 'postgres' ? 'pg' : 'pglite' });
  return traceQuery(system, sql, work);
}

export interface PostgresOptions {
  maxConnections?: number;
  applicationName?: string;
  /** How long to wait for a connection (new or from the pool) before the request fails with 503; default 5 s. */
  connectTimeoutMs?: number;
  /** The server cancels a statement running longer (57014, a 503); default 30 s, 0 for none (migrations). */
  statementTimeoutMs?: number;
  /** `named` (default) or `unnamed` behind a transaction-pooling PgBouncer. */
  preparedStatements?: PreparedStatements;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

export function createPostgresDb(connectionString: string, options: PostgresOptions = {}): Db {
  const statementTimeout = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const prepared = options.preparedStatements ?? 'named';
  // A request never waits on a database that does not answer longer than these: without them a
  // lost server holds every request (and pool slot) until the kernel gives up on the socket.
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    ...(statementTimeout > 0 ? { statement_timeout: statementTimeout } : {}),
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return withUnitsOfWork<BaseDb & Omit<Db, keyof UnitsOfWork>>({
    kind: 'postgres' as const,
    async query<Row>(sql: string, params?: unknown[]) {
      const result = await observedStatement('postgres', sql, () => pool.query(preparedQuery(sql, params, prepared)));
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await pool.query(sql);
    },
    transaction: <T>(work: (tx: Queryable) => Promise<T>) =>
      traceTransaction(async () => {
        const client = await pool.connect();
        // The pool listens for errors only on idle clients: a connection lost while this one is
        // checked out (the server restarting between two statements, or while the work awaits the
        // broker) would be an unhandled 'error' and end the process. The next statement fails with
        // it instead, and release discards the broken client.
        let lost: Error | undefined;
        const onLost = (error: Error) => {
          lost = error;
        };
        client.on('error', onLost);
        try {
          await client.query('BEGIN');
          const tx: Queryable = {
            async query<Row>(sql: string, params?: unknown[]) {
              const result = await observedStatement('postgres', sql, () => client.query(preparedQuery(sql, params, prepared)));
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
          client.off('error', onLost);
          client.release(lost);
        }
      }),
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.end();
    },
  });
}

/**
 * For a database of one connection (PGlite, here or on its thread): a statement through the outer
 * Db inside a transaction callback would wait for that very transaction, forever. `guard` refuses
 * it; `insideTransaction.run(true, …)` marks a callback.
 */
export function singleConnectionGuard() {
  const insideTransaction = new AsyncLocalStorage<boolean>();
  const guard = () => {
    if (insideTransaction.getStore()) {
      throw new Error('db.query called inside a transaction: use the transaction handle');
    }
  };
  return { guard, insideTransaction };
}

/**
 * PGlite is one connection: a transaction holds it exclusively, so statements issued outside
 * the transaction by other requests wait their turn. We remember the open transaction in
 * AsyncLocalStorage only to detect the one mistake that would deadlock: using the outer Db
 * from inside a transaction callback.
 */
export function createPgliteDb(pglite: PGlite): Db {
  const { guard, insideTransaction } = singleConnectionGuard();
  const statements = pgliteStatements(pglite);
  return withUnitsOfWork<BaseDb & Omit<Db, keyof UnitsOfWork>>({
    kind: 'pglite' as const,
    async query<Row>(sql: string, params?: unknown[]) {
      guard();
      return observedStatement('pglite', sql, () => statements.query<Row>(sql, params ?? [], false));
    },
    async exec(sql: string) {
      guard();
      await pglite.exec(sql);
    },
    async transaction<T>(work: (tx: Queryable) => Promise<T>) {
      guard();
      return traceTransaction(() =>
        pglite.transaction(async (transaction: Transaction) =>
          insideTransaction.run(true, () =>
            work({
              async query<Row>(sql: string, params?: unknown[]) {
                return observedStatement('pglite', sql, () => statements.query<Row>(sql, params ?? [], true));
              },
              async exec(sql: string) {
                await transaction.exec(sql);
              },
            }),
          ),
        ),
      );
    },
    async ping() {
      await pglite.query('SELECT 1');
    },
    async close() {
      // The embedded launcher owns the PGlite instance and closes it once, after every service.
    },
  });
}

/** SQLSTATE classes and codes that say the database is unreachable or busy, not that the statement is wrong. */
const UNAVAILABLE_SQLSTATES = new Set(['57014', '57P01', '57P02', '57P03', '53300', '53400']);
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES = [
  /timeout exceeded when trying to connect/i,
  /connection terminated/i,
  /not queryable/i,
  /connection timeout/i,
  /Connection closed/i,
];

/**
 * True when an error means the database could not serve the statement (down, restarting, out of
 * connections, too slow), so the answer is 503 and a retry may succeed, not a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const candidate = error as { code?: unknown; message?: unknown } | undefined;
  if (!candidate || typeof candidate !== 'object') return false;
  const code = typeof candidate.code === 'string' ? candidate.code : '';
  if (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08') || UNAVAILABLE_NODE_CODES.has(code)) return true;
  const message = typeof candidate.message === 'string' ? candidate.message : '';
  return UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message));
}
