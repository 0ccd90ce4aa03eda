import type { Db, Queryable } from './db.js';

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/**
 * How many rows of `relation` a statement read, by running it under EXPLAIN ANALYZE: those it
 * returned and those it read only to throw away, over every loop. Runs in a transaction that is
 * rolled back, so a statement that locks or writes leaves nothing behind. The proof that a lookup
 * goes by its key, whatever the planner's statistics say.
 */
export async function rowsReadBy(db: Pick<Db, 'transaction'>, relation: string, sql: string, params: unknown[]): Promise<number> {
  const rollback = new Error('rolled back after EXPLAIN ANALYZE');
  let plan: PlanNode | undefined;
  try {
    await db.transaction(async (tx) => {
      const { rows } = await tx.query<Record<string, unknown>>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      const value = rows[0]!['QUERY PLAN'];
      plan = ((typeof value === 'string' ? JSON.parse(value) : value) as Array<{ Plan: PlanNode }>)[0]!.Plan;
      throw rollback;
    });
  } catch (error) {
    if (error !== rollback) throw error;
  }
  const read = (node: PlanNode): number =>
    (node['Relation Name'] === relation
      ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * (node['Actual Loops'] ?? 1)
      : 0) + (node.Plans ?? []).reduce((sum, child) => sum + read(child), 0);
  return read(plan!);
}

/** A Queryable that notes every statement it passes on: what a store function actually sends. */
export function recordingStatements(target: Queryable): { db: Queryable; statements: Array<{ sql: string; params: unknown[] }> } {
  const statements: Array<{ sql: string; params: unknown[] }> = [];
  return {
    statements,
    db: {
      query: (sql, params = []) => {
        statements.push({ sql, params });
        return target.query(sql, params);
      },
      exec: (sql) => target.exec(sql),
    },
  };
}
