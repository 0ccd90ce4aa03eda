import pg from 'pg';

export interface AuditLag {
  entries: number;
  entriesPerSecond: number;
  lagP50Ms: number;
  lagP99Ms: number;
  /** From the end of the POST load until the last product's audit entry was written. */
  catchUpMs: number;
}

/**
 * The audit service's pace under the product-creation load: waits (bounded) until every product
 * has its entry, then reads from the database how fast entries were written and how long after
 * their event each one landed (recorded_at − occurred_at).
 */
export async function measureAuditLag(databaseUrl: string, loadEndedAt: Date, timeoutMs = 120_000): Promise<AuditLag> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await client.query<{ products: number; entries: number }>(
        `SELECT (SELECT count(*)::int FROM catalog.products) AS products,
                (SELECT count(*)::int FROM audit.entries WHERE action = 'products.created') AS entries`,
      );
      if (rows[0]!.entries >= rows[0]!.products) break;
      if (Date.now() > deadline) throw new Error(`audit did not catch up: ${rows[0]!.entries} of ${rows[0]!.products} entries`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { rows } = await client.query<{ entries: number; seconds: number; p50: number; p99: number; last: Date }>(
      `SELECT count(*)::int AS entries,
              GREATEST(EXTRACT(EPOCH FROM max(recorded_at) - min(recorded_at)), 0.001)::float8 AS seconds,
              (percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM recorded_at - occurred_at)) * 1000)::float8 AS p50,
              (percentile_cont(0.99) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM recorded_at - occurred_at)) * 1000)::float8 AS p99,
              max(recorded_at) AS last
         FROM audit.entries WHERE action = 'products.created'`,
    );
    const row = rows[0]!;
    return {
      entries: row.entries,
      entriesPerSecond: row.entries / row.seconds,
      lagP50Ms: row.p50,
      lagP99Ms: row.p99,
      catchUpMs: Math.max(0, row.last.getTime() - loadEndedAt.getTime()),
    };
  } finally {
    await client.end();
  }
}
