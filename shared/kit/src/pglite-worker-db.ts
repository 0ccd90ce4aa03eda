import { Worker } from 'node:worker_threads';
import { observedStatement, singleConnectionGuard, type Db, type Queryable, type QueryResult } from './db.js';
import type { Reply, Request, SerializedError } from './pglite-thread.js';
import { claimDataDir } from './runtime.js';
import { traceTransaction } from './tracing.js';
import { withUnitsOfWork, type BaseDb, type UnitsOfWork } from './unit-of-work.js';

/** An error from the database thread, with PostgreSQL's fields (code, constraint, ...) as they were. */
class PgliteThreadError extends Error {
  constructor(serialized: SerializedError) {
    super(serialized.message);
    this.name = serialized.name;
    Object.assign(this, serialized.fields);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface PgliteThread {
  db: Db;
  /** Closes PGlite (its last checkpoint included) and ends the thread; the data directory's lock goes last. */
  close(): Promise<void>;
}

/**
 * The embedded database on its own thread (pglite-thread.ts): PGlite is single-threaded
 * WebAssembly and does most of the embedded mode's CPU work, so on the main thread it left the
 * second core idle while requests queued behind it. The Db it gives behaves as createPgliteDb's:
 * one connection, transactions exclusive, statements outside a transaction waiting their turn.
 * Durability is unchanged: the thread dies with the process, and PostgreSQL's WAL replay
 * restores every committed transaction on the next open.
 */
export async function openPgliteThread(dataDir: string | undefined): Promise<PgliteThread> {
  const release = dataDir ? claimDataDir(dataDir) : () => undefined;
  const worker = new Worker(new URL('./pglite-thread.js', import.meta.url), { workerData: { dataDir } });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  let nextTransaction = 1;
  let failure: Error | undefined;
  const opened = new Promise<void>((resolve, reject) => pending.set(0, { resolve: () => resolve(), reject }));
  worker.on('message', (replies: Reply | Reply[]) => {
    for (const reply of Array.isArray(replies) ? replies : [replies]) {
      const waiting = pending.get(reply.id);
      if (!waiting) continue;
      pending.delete(reply.id);
      if (reply.ok) waiting.resolve(reply.value);
      else waiting.reject(new PgliteThreadError(reply.error));
    }
  });
  // A thread that died takes its open statements with it: they fail as if the connection dropped.
  const failAll = (error: Error) => {
    failure = error;
    for (const waiting of pending.values()) waiting.reject(error);
    pending.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`Connection closed: the database thread exited (${code})`)));
  // Statements sent in one turn of the event loop (the requests read from every socket that was
  // ready) cross to the thread as one message: each message has a fixed cost (a structured clone
  // and a wake-up of the other thread), and postMessage was 6 % of the main thread on an
  // embedded GET, one per statement. Order is kept: the thread takes a batch in the order sent.
  let outgoing: Request[] = [];
  const flush = () => {
    const batch = outgoing;
    outgoing = [];
    worker.postMessage(batch);
  };
  const send = <T>(request: DistributiveOmit<Request, 'id'>): Promise<T> => {
    if (failure) return Promise.reject(failure);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      if (outgoing.push({ ...request, id } as Request) === 1) setImmediate(flush);
    });
  };
  try {
    await opened;
  } catch (error) {
    await worker.terminate();
    release();
    throw error;
  }

  const { guard, insideTransaction } = singleConnectionGuard();
  const db = withUnitsOfWork<BaseDb & Omit<Db, keyof UnitsOfWork>>({
    kind: 'pglite' as const,
    async query<Row>(sql: string, params?: unknown[]) {
      guard();
      return observedStatement('pglite', sql, () => send<QueryResult<Row>>({ op: 'query', sql, params }));
    },
    async exec(sql: string) {
      guard();
      await send({ op: 'exec', sql });
    },
    async transaction<T>(work: (tx: Queryable) => Promise<T>) {
      guard();
      return traceTransaction(async () => {
        const tx = nextTransaction++;
        await send({ op: 'begin', tx });
        let value: T;
        try {
          value = await insideTransaction.run(true, () =>
            work({
              query: <Row>(sql: string, params?: unknown[]) => observedStatement('pglite', sql, () => send<QueryResult<Row>>({ op: 'query', sql, params, tx })),
              exec: async (sql: string) => void (await send({ op: 'exec', sql, tx })),
            }),
          );
        } catch (error) {
          // The work's own error is what the caller sees; a failed rollback only adds to it.
          await send({ op: 'end', tx, commit: false }).catch(() => undefined);
          throw error;
        }
        await send({ op: 'end', tx, commit: true });
        return value;
      });
    },
    async ping() {
      await send({ op: 'query', sql: 'SELECT 1', params: undefined });
    },
    async close() {
      // The embedded launcher owns the thread and closes it once, after every service.
    },
  });
  let closing: Promise<void> | undefined;
  return {
    db,
    close() {
      closing ??= (async () => {
        try {
          if (!failure) await send({ op: 'close' });
        } finally {
          await worker.terminate();
          release();
        }
      })();
      return closing;
    },
  };
}
