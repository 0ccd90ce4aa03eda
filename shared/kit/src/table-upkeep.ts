import type { Queryable } from './db.js';
import type { Logger } from './logger.js';

/** Tables smaller than this (64 KiB) are planned well enough on PostgreSQL's defaults. */
const MIN_PAGES = 8;
/** A table is vacuumed and analyzed again once it has this many times the pages it had last time. */
const GROWTH_FACTOR = 2;
export const DEFAULT_TABLE_UPKEEP_INTERVAL_MS = 2_000;

interface TableSize {
  name: string;
  /** Pages at the last VACUUM or ANALYZE; 0 if never. */
  relpages: number;
  /** -1 until the table is first vacuumed or analyzed. */
  reltuples: number;
  pages: number;
}

export interface TableUpkeep {
  /** Analyzes and vacuums every table that has grown enough since the last time; answers their names. */
  run(): Promise<string[]>;
  /** Ends the timer, once a run under way has finished. */
  stop(): Promise<void>;
}

/**
 * Autovacuum for the embedded database, which has none: PGlite never vacuums or analyzes a table
 * unless told to.
 * - Without statistics the planner guesses that any two equality conditions match a row or so.
 *   A lookup by a unique key (a batch's resent records by `(merchant, source, type, external_id)`)
 *   then went through the narrower `(merchant, source, id)` index, reading the source's every
 *   record per batch: resending 20,000 records took 38 s, against 2.4 s for the first send.
 * - Without VACUUM a queue table (the bus's messages, webhook deliveries) keeps every row it ever
 *   held as a dead tuple, and grows with every message for as long as the process runs.
 *
 * PGlite's activity counters (dead and inserted tuples) stay at zero, so the trigger is the size
 * on disk against the size the last VACUUM or ANALYZE recorded: a table is handled when it is
 * first worth it and again each time it doubles. A table that only grows costs O(log n) runs, each
 * ANALYZE bounded by PostgreSQL's sample (300 × default_statistics_target rows) and each VACUUM
 * skipping the pages it already found all-visible. A queue table, emptied as fast as it fills, is
 * truncated by the VACUUM and stays small.
 */
export function startTableUpkeep(db: Queryable, logger: Logger, options: { intervalMs?: number } = {}): TableUpkeep {
  const run = async (): Promise<string[]> => {
    const { rows } = await db.query<TableSize>(
      `SELECT format('%I.%I', n.nspname, c.relname) AS name, c.relpages, c.reltuples,
              pg_relation_size(c.oid) / current_setting('block_size')::int AS pages
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'`,
    );
    const grown = rows.filter(
      (table) => Number(table.pages) >= MIN_PAGES && (Number(table.reltuples) < 0 || Number(table.pages) >= GROWTH_FACTOR * Number(table.relpages)),
    );
    if (grown.length === 0) return [];
    // One ANALYZE and one VACUUM for all of them: each statement waits its turn behind the
    // transactions queued on the one connection, and under load that wait, not the work, is what
    // took the time (3–4 s a table when they went one by one). Statistics first: they are what
    // the plans of the next statements need.
    const names = grown.map((table) => table.name).join(', ');
    const started = performance.now();
    await db.exec(`ANALYZE ${names}`);
    const analyzed = performance.now();
    await db.exec(`VACUUM ${names}`);
    logger.debug(
      {
        tables: grown.map((table) => ({ name: table.name, pages: Number(table.pages), pages_last_time: Number(table.relpages) })),
        analyze_ms: Math.round(analyzed - started),
        vacuum_ms: Math.round(performance.now() - analyzed),
      },
      'tables analyzed and vacuumed',
    );
    return grown.map((table) => table.name);
  };

  // One run at a time; stopping waits for the one under way, so it never outlives the database.
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= run()
      .then(
        () => undefined,
        (error: unknown) => logger.warn({ err: error }, 'table upkeep failed'),
      )
      .finally(() => {
        running = undefined;
      });
  }, options.intervalMs ?? DEFAULT_TABLE_UPKEEP_INTERVAL_MS);
  timer.unref();
  return {
    run,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
