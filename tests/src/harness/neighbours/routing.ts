import assert from 'node:assert/strict';
import { call, type ApiResponse } from '../client.js';
import type { Stack } from '../stack.js';
import { eventually } from '../wait.js';
import { sequentialLatencies, type LatencyFigures } from './latency.js';

/**
 * Rule routing under a hostile neighbour (issue 29): merchant B's rule is quadratic in the
 * length of a record's list, and its records carry lists long enough for every evaluation to
 * run out of time; merchant A's orders go through a connection without rules.
 */
interface RoutingMerchant {
  merchantId: string;
  token: string;
}

/** B's condition: nine million additions for three thousand numbers, more than any deadline of a record's rules. */
export const QUADRATIC_CONDITION = 'data.items.all(x, data.items.all(y, x + y >= 0.0))';

const order = (externalId: string, data: Record<string, unknown>) => ({
  type: 'order',
  external_id: externalId,
  occurred_at: '2026-11-28T10:00:00.000Z',
  data,
});

async function created(stack: Stack, merchant: RoutingMerchant, path: string, body: unknown): Promise<{ id: string }> {
  const response = await call(stack, 'POST', path, { token: merchant.token, body });
  assert.equal(response.status, 201, `${path}: ${response.text}`);
  return response.body as { id: string };
}

async function ingest(stack: Stack, merchant: RoutingMerchant, sourceId: string, records: unknown[]): Promise<ApiResponse> {
  const response = await call(stack, 'POST', `/api/v1/sources/${sourceId}/records`, { token: merchant.token, body: { records } });
  assert.equal(response.status, 200, response.text);
  assert.equal(response.body.accepted, records.length, response.text);
  return response;
}

/**
 * A's side: a source and a rule-less connection to a destination (never called here: the
 * measure ends when routing has committed and published `internal.record_routed`).
 */
export async function routingVictim(stack: Stack, merchant: RoutingMerchant, destinationUrl: string) {
  const source = await created(stack, merchant, '/api/v1/sources', { name: 'Storefront', kind: 'storefront' });
  const destination = await created(stack, merchant, '/api/v1/destinations', { name: 'ERP', url: destinationUrl });
  await created(stack, merchant, '/api/v1/connections', {
    source_id: source.id,
    destination_id: destination.id,
    rule_ids: [],
    event_types: ['orders.created'],
  });
  let sent = 0;
  return {
    /** Ingests one order and answers how long until it was routed, in ms. */
    async routeOneOrder(timeoutMs = 60_000): Promise<number> {
      const externalId = `A-${Date.now()}-${sent++}`;
      const started = performance.now();
      const answer = await ingest(stack, merchant, source.id, [order(externalId, { total: 10, currency: 'EUR' })]);
      const recordId = answer.body.results[0].record_id as string;
      await stack.events.waitFor(
        (event) => event.topic === 'internal.record_routed' && event.merchant_id === merchant.merchantId && event.data.object.record_id === recordId,
        timeoutMs,
        `the routing of ${externalId}`,
      );
      return performance.now() - started;
    },
  };
}

export interface RuleBombOptions {
  orders: number;
  connections: number;
  /** Numbers in each order's `data.items`: 3,000 by default (the issue's attack had 1,000, which a fast core evaluates within 500 ms). */
  items?: number;
}

/**
 * B's attack: its rule on `connections` connections, then `orders` orders in batches of at most
 * 40. Answers once every order's event is on the bus.
 */
export async function launchRuleBomb(stack: Stack, merchant: RoutingMerchant, destinationUrl: string, options: RuleBombOptions) {
  const source = await created(stack, merchant, '/api/v1/sources', { name: 'Flood', kind: 'storefront' });
  const destination = await created(stack, merchant, '/api/v1/destinations', { name: 'Sink', url: destinationUrl });
  const rule = await created(stack, merchant, '/api/v1/rules', {
    name: 'Quadratic',
    event_types: ['orders.created'],
    condition: QUADRATIC_CONDITION,
    action: 'forward',
  });
  for (let i = 0; i < options.connections; i++) {
    await created(stack, merchant, '/api/v1/connections', {
      source_id: source.id,
      destination_id: destination.id,
      rule_ids: [rule.id],
      event_types: ['orders.created'],
    });
  }
  const items = Array.from({ length: options.items ?? 3_000 }, (_, i) => i + 0.5);
  const prefix = `B-${Date.now()}`;
  // 40 records of 3,000 numbers are about 800 KB, within the gateway's 1 MiB body.
  for (let first = 0; first < options.orders; first += 40) {
    const batch = Array.from({ length: Math.min(40, options.orders - first) }, (_, i) => order(`${prefix}-${first + i}`, { total: 1, currency: 'EUR', items }));
    await ingest(stack, merchant, source.id, batch);
  }
  await floodTakenIn(stack, merchant, options.orders);
  return { sourceId: source.id, orders: options.orders, connections: options.connections };
}

/**
 * Every consumer has taken B's orders in: the routing engine holds them all (in memory or
 * parked), audit has appended them and the webhooks service has stored them. What B's ingestion
 * itself costs (its records are large, and every service writes them) is then behind us, and
 * what remains is the routing of its backlog: the engine under test.
 */
async function floodTakenIn(stack: Stack, merchant: RoutingMerchant, orders: number): Promise<void> {
  const count = async (path: string) => {
    const page = await call(stack, 'GET', path, { token: merchant.token });
    assert.equal(page.status, 200, page.text);
    return (page.body.data as unknown[]).length;
  };
  await eventually(
    async () => [
      stack.events.forMerchant(merchant.merchantId).filter((event) => event.topic === 'orders.created').length,
      await count('/api/v1/audit?action=orders.created&limit=100'),
      await count('/api/v1/events?topic=orders.created&limit=100'),
    ],
    (seen) => seen.every((n) => n >= Math.min(orders, 100)),
    `B's ${orders} orders taken in by routing, audit and webhooks`,
    60_000,
    200,
  );
}

type Bomb = { sourceId: string; orders: number; connections: number };
type Route = { outcome: string; reason: string | null };

/** The routes of every record of the flood, and how many records still wait for some (their routing shows as pending). */
export async function floodRouting(stack: Stack, merchant: RoutingMerchant, bomb: Bomb): Promise<{ routes: Route[]; pending: number }> {
  const routes: Route[] = [];
  let pending = 0;
  let cursor: string | undefined;
  do {
    const page = await call(stack, 'GET', `/api/v1/sources/${bomb.sourceId}/records?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token: merchant.token });
    assert.equal(page.status, 200, page.text);
    for (const record of page.body.data as Array<{ routes: Route[] }>) {
      if (record.routes.length < bomb.connections) pending += 1;
      routes.push(...record.routes);
    }
    cursor = page.body.has_more ? page.body.next_cursor : undefined;
  } while (cursor);
  return { routes, pending };
}

/** Every record of the source with one route per connection: routed, filtered or dropped, each with its reason. */
export async function everyRecordRouted(stack: Stack, merchant: RoutingMerchant, bomb: Bomb, timeoutMs: number): Promise<Route[]> {
  const done = await eventually(
    () => floodRouting(stack, merchant, bomb),
    (routing) => routing.pending === 0,
    `routing of all ${bomb.orders} of B's records`,
    timeoutMs,
    1_000,
  );
  return done.routes;
}

export interface RoutingNeighbours {
  quiet: LatencyFigures;
  attacked: LatencyFigures;
  bomb: Bomb;
  /** B's records still waiting for a route when A's last order was routed: the attack lasted the whole measure if above 0. */
  pendingAtEnd: number;
}

/**
 * The comparison of the neighbours test and bench: A's order routing over `samples` orders quiet,
 * then as many again while B's flood is routed. Each side routes through `destinations`.
 */
export async function measureRoutingNeighbours(
  stack: Stack,
  merchants: { a: RoutingMerchant; b: RoutingMerchant },
  options: { samples: number; bomb: RuleBombOptions; destinations: { a: string; b: string } },
): Promise<RoutingNeighbours> {
  const victim = await routingVictim(stack, merchants.a, options.destinations.a);
  await victim.routeOneOrder(); // the first routing starts the workers: not a quiet sample
  const quiet = await sequentialLatencies(options.samples, () => victim.routeOneOrder());
  const bomb = await launchRuleBomb(stack, merchants.b, options.destinations.b, options.bomb);
  const attacked = await sequentialLatencies(options.samples, () => victim.routeOneOrder());
  const { pending } = await floodRouting(stack, merchants.b, bomb);
  return { quiet, attacked, bomb, pendingAtEnd: pending };
}
