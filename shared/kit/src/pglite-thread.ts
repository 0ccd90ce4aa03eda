import { PGlite, type Transaction } from '@electric-sql/pglite';
import { parentPort, workerData } from 'node:worker_threads';
import { pgliteStatements } from './pglite-statements.js';

/**
 * The worker side of the embedded database (pglite-worker-db.ts): one PGlite, owned by this
 * thread, answering the main thread's statements. PGlite is single-threaded WebAssembly and does
 * most of the embedded mode's work; here it runs on the second core while the main thread serves
 * HTTP, gRPC and the bus. PGlite's own locks still order everything: a statement outside a
 * transaction waits until the open transaction ends, exactly as on the main thread.
 */

export type Request =
  | { id: number; op: 'query'; sql: string; params: unknown[] | undefined; tx?: number }
  | { id: number; op: 'exec'; sql: string; tx?: number }
  | { id: number; op: 'begin'; tx: number }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'close' };

export type Reply = { id: number; ok: true; value?: unknown } | { id: number; ok: false; error: SerializedError };

/** A database error as data: its class does not cross threads, its SQLSTATE and details must. */
export interface SerializedError {
  name: string;
  message: string;
  fields: Record<string, unknown>;
}

/** The fields of PostgreSQL's error that callers read (code above all: unique violations, unavailability). */
const ERROR_FIELDS = ['code', 'detail', 'hint', 'severity', 'schema', 'table', 'column', 'constraint', 'position', 'where', 'routine'];

export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const field of ERROR_FIELDS) {
    const value = (error as unknown as Record<string, unknown>)[field];
    if (value !== undefined) fields[field] = value;
  }
  return { name: error.name, message: error.message, fields };
}

interface OpenTransaction {
  /** Statements of this transaction, run one after another on its handle. */
  queue: Promise<unknown>;
  tx: Transaction;
  finish: (commit: boolean) => void;
  /** Settles once PGlite has committed or rolled back. */
  done: Promise<void>;
}

async function serve(): Promise<void> {
  const { dataDir } = workerData as { dataDir: string | undefined };
  // int8 as number, as the pg driver is set: both drivers must look alike to stores.
  const parsers = { 20: (value: string) => Number(value) };
  const pglite = await PGlite.create(dataDir ? { dataDir, parsers } : { parsers });
  const statements = pgliteStatements(pglite);
  const transactions = new Map<number, OpenTransaction>();
  const port = parentPort!;
  // Replies ready in one turn of this thread's loop go back as one message, as requests come
  // (pglite-worker-db.ts): a message's fixed cost is paid per batch, not per statement.
  let replies: Reply[] = [];
  const flushReplies = () => {
    const batch = replies;
    replies = [];
    port.postMessage(batch);
  };
  const reply = (message: Reply) => {
    if (replies.push(message) === 1) setImmediate(flushReplies);
  };
  const fail = (id: number, error: unknown) => reply({ id, ok: false, error: serializeError(error) });
  const answer = (id: number, work: () => Promise<unknown>) =>
    work().then(
      (value) => reply({ id, ok: true, value }),
      (error: unknown) => fail(id, error),
    );
  const closedTransaction = (id: number) => fail(id, new Error('the transaction is no longer open'));

  const begin = (id: number, txId: number) => {
    let begun = false;
    let open: OpenTransaction | undefined;
    const done = pglite.transaction(async (tx) => {
      const commit = await new Promise<boolean>((finish) => {
        open = { queue: Promise.resolve(), tx, finish, done };
        transactions.set(txId, open);
        begun = true;
        reply({ id, ok: true });
      });
      // Statements already sent end first (the main thread awaits each one, so there are none).
      await open!.queue;
      transactions.delete(txId);
      if (!commit) await tx.rollback();
    });
    // Before the callback ran, a failure is the begin's; after, the 'end' reports it.
    done.catch((error: unknown) => {
      if (!begun) fail(id, error);
    });
  };

  const handle = (request: Request) => {
    switch (request.op) {
      case 'query':
      case 'exec': {
        const run = (target: PGlite | Transaction) =>
          request.op === 'query' ? statements.query(request.sql, request.params ?? [], target !== pglite) : target.exec(request.sql).then(() => undefined);
        if (request.tx === undefined) {
          void answer(request.id, () => run(pglite));
          return;
        }
        const open = transactions.get(request.tx);
        if (!open) return closedTransaction(request.id);
        open.queue = open.queue.then(() => answer(request.id, () => run(open.tx)));
        return;
      }
      case 'begin':
        return begin(request.id, request.tx);
      case 'end': {
        const open = transactions.get(request.tx);
        if (!open) return closedTransaction(request.id);
        open.finish(request.commit);
        void answer(request.id, () => open.done);
        return;
      }
      case 'close':
        void answer(request.id, () => pglite.close());
        return;
    }
  };
  port.on('message', (batch: Request[]) => {
    for (const request of batch) handle(request);
  });
  port.postMessage({ id: 0, ok: true });
}

if (parentPort) {
  serve().catch((error: unknown) => parentPort!.postMessage({ id: 0, ok: false, error: serializeError(error) }));
}
