import pg from 'pg';

/**
 * When a POST product has been fully processed: its response is only the start. The catalog's
 * outbox relay publishes its `products.created`, then the audit service writes an entry and the
 * webhooks service stores and fans it out (the merchants service routes records, not products, so
 * nothing of it runs for a product). The POST scenario's CPU window closes only once all of that
 * is done for every product of the run, so CPU per operation is the whole operation's cost.
 *
 * Each watcher polls a condition with a deadline; the polls run only while the load is over, so
 * their own cost in the window is a few cheap queries.
 */
export interface ProductEventsWatcher {
  /** Resolves once every product the run created so far is consumed (see `ProductEventsBacklog`). */
  drained(succeededSoFar: number): Promise<void>;
  /** What the condition reads, for the report. */
  readonly covers: string;
  close(): Promise<void>;
}

const POLL_MS = 50;
const TIMEOUT_MS = 120_000;

/** Polls `backlog` until it reports nothing left, or fails after the deadline naming what was left. */
async function awaitEmpty(backlog: () => Promise<string | undefined>): Promise<void> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const left = await backlog();
    if (left === undefined) return;
    if (Date.now() > deadline) throw new Error(`the POST's events were not consumed within ${TIMEOUT_MS / 1000} s: ${left}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Distributed mode, read from the services' own tables in the run's database: the catalog's outbox
 * is empty (every event published), and audit has an entry and the webhooks service an inbox row
 * (it stored and fanned out the event in the same transaction) for every product in the catalog.
 */
export async function watchProductEventsInDatabase(databaseUrl: string): Promise<ProductEventsWatcher> {
  const client = new pg.Client({ connectionString: databaseUrl });
  // the database is dropped under it on Ctrl-C; the poll reports the failure, the client need not crash the run
  client.on('error', () => undefined);
  await client.connect();
  return {
    covers:
      'the load, then until every product has been published by the catalog outbox relay (outbox empty), recorded by audit (an entry per product) and fanned out by webhooks (an inbox row per product), read from the database',
    drained: () =>
      awaitEmpty(async () => {
        const { rows } = await client.query<{ products: number; unpublished: number; audited: number; fannedOut: number }>(
          `SELECT (SELECT count(*)::int FROM catalog.products) AS products,
                  (SELECT count(*)::int FROM catalog.outbox) AS unpublished,
                  (SELECT count(*)::int FROM audit.entries WHERE action = 'products.created') AS audited,
                  (SELECT count(*)::int FROM webhooks.inbox WHERE topic = 'products.created') AS "fannedOut"`,
        );
        const { products, unpublished, audited, fannedOut } = rows[0]!;
        return unpublished === 0 && audited >= products && fannedOut >= products
          ? undefined
          : `${products} products, ${unpublished} unpublished, ${audited} audited, ${fannedOut} fanned out`;
      }),
    close: () => client.end(),
  };
}

/**
 * The queues bound to `products.created` in the embedded process. Its bus counts per topic, not
 * per queue, so the count of consumers is stated here; the distributed watcher reads the same two
 * services' tables.
 */
const PRODUCT_EVENT_CONSUMERS = ['audit', 'webhooks'] as const;

/** One counter of the Prometheus text format, summed over its series whose labels include `labels`. */
export function counterValue(metrics: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const series = Object.fromEntries([...line.slice(name.length + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((match) => [match[1], match[2]]));
    if (Object.entries(labels).every(([key, value]) => series[key] === value)) total += Number(line.slice(close + 1).trim());
  }
  return total;
}

/**
 * Embedded mode: PGlite lives inside the process, so its tables cannot be read from outside; the
 * bus's counters on the admin listener can. Every product's event has been published (the outbox
 * relay ran: `products_before` plus every POST answered 201) and consumed by each bound queue.
 */
export function watchProductEventsInProcess(adminUrl: string, productsBefore: number): ProductEventsWatcher {
  const covers = `the load, then until the in-process bus has published every product's \`products.created\` (after its outbox) and ${PRODUCT_EVENT_CONSUMERS.join(' and ')} have each consumed it, read from the bus counters on /metrics`;
  return {
    covers,
    drained: (succeededSoFar) =>
      awaitEmpty(async () => {
        const response = await fetch(`${adminUrl}/metrics`);
        const metrics = await response.text();
        if (response.status !== 200) return `/metrics answered ${response.status}`;
        const topic = 'products.created';
        const published = counterValue(metrics, 'merx_bus_messages_total', { direction: 'published', topic });
        const consumed = counterValue(metrics, 'merx_bus_messages_total', { direction: 'consumed', topic });
        const expected = productsBefore + succeededSoFar;
        return published >= expected && consumed >= expected * PRODUCT_EVENT_CONSUMERS.length
          ? undefined
          : `${expected} products, ${published} events published, ${consumed} consumptions of ${expected * PRODUCT_EVENT_CONSUMERS.length}`;
      }),
    close: async () => undefined,
  };
}
