import { performance } from 'node:perf_hooks';
import { AmqpBus, buildEvent, createLogger, type MerxEvent } from '@merx/kit';
import pg from 'pg';
import { Pool } from 'undici';
import { call, createMerchant, issueToken } from '../src/harness/client.js';
import { AMQP_URL, tail } from '../src/harness/distributed.js';
import type { Stack } from '../src/harness/stack.js';
import { cpuSnapshot, cpuUsage, msPerOperation, type CpuUsage } from './cpu.js';
import type { LoadSettings } from './load.js';
import { startDistributedMode, startEmbeddedMode, startWebhookReceiver, type BenchProcess, type RunningMode } from './processes.js';

/**
 * The webhook delivery engine under load: how many deliveries a second reach a receiver that
 * answers 200 at once, and how long after its event each one arrives (receiver's clock − the
 * event's `created_at`, which is set just before the state change commits; one machine, one clock).
 *
 * One merchant with `fanOut` subscriptions, all `*`, each a distinct path on the receiver, so
 * every event becomes `fanOut` deliveries. The load comes two ways:
 * - events published straight onto `merx.events` with publisher confirms, as the outbox relay
 *   does after a commit: the delivery engine (fan-out, claims, sending, recording) on its own.
 *   Saturating runs offer more than the engine can take but hold the backlog under a cap, so the
 *   engine always has work and the run drains in seconds; fixed-rate runs show latency under a
 *   load the engine can carry.
 * - POST /api/v1/products through the gateway at a fixed rate: from a real commit, through the
 *   catalog's outbox relay and RabbitMQ, to the receiver.
 * Every run waits until every delivery it caused has been answered 200 (retries included), so a
 * lost delivery shows as a shortfall, never as a faster figure; the embedded mode's engine is so
 * much slower that its wait is capped at 20 s and its shortfall reported.
 */

export interface WebhookMeasurement {
  mode: string;
  name: string;
  /** Which of the run's BENCH_REPEATS repetitions this is (1-based). */
  repeat: number;
  /** Deliveries per event: the merchant's subscriptions, all `*`. */
  fanOut: number;
  /** Deliveries per second the load asked for (events/s × fan-out). */
  offeredPerSecond: number;
  /** Deliveries answered 200 per second at the receiver over the measured window. */
  deliveredPerSecond: number;
  /** Requests of any answer per second over the window (first attempts and retries). */
  attemptsPerSecond: number;
  /** The publisher held back during the window because the backlog reached its cap: the engine was the limit. */
  saturated: boolean;
  /** Event created_at → first attempt at the receiver, over the window (ms). */
  p50: number | null;
  p99: number | null;
  max: number | null;
  /** Share of first attempts the receiver answered 500 (%), and what followed. */
  failPercent: number;
  failedFirstAttempts: number;
  retries: number;
  /** Event created_at → the successful retry at the receiver (ms), over the whole run. */
  retryP50: number | null;
  retryP99: number | null;
  /** Deliveries answered 200 more than once (at-least-once shows here). */
  duplicates: number;
  /** Deliveries the load caused, and the distinct ones answered 200 in the end. */
  expected: number;
  delivered: number;
  /** From the end of the load until the last expected delivery was answered 200. */
  drainMs: number;
  /** Requests the load generator made that did not succeed (POST runs: non-201 answers and errors). */
  loadErrors: number;
  /** Deliveries answered 200 in each whole second of the window: does the rate hold? */
  perSecond: number[];
  /** Dead row versions in the work-queue tables when the run ended (distributed; vacuumed before each run). */
  deadTuples: Record<string, number> | undefined;
  /** Distributed: the first attempts of the window's events, split by the service's own timestamps (p50 / p99, ms). */
  stages: LatencyStages | undefined;
  /** Distributed: PostgreSQL commits per delivery answered 200 over the window (every service of the database). */
  commitsPerDelivery: number | undefined;
  /** Distributed: deadlocks PostgreSQL detected (and broke after deadlock_timeout) from the start of the load until the run drained. */
  deadlocks: number | undefined;
  /** CPU over the measured window (the load; a saturating run's engine is busy throughout it). */
  cpu: CpuUsage | undefined;
  /** CPU ms per delivery answered 200 in the window, by group (`sum` is the headline). */
  cpuPerDelivery: Record<string, number> | undefined;
}

export interface WebhookBenchDeps {
  started<T extends RunningMode>(start: Promise<T>): Promise<T>;
  /** Registers a stop with the run's cleanups (Ctrl-C, failures) and returns it, idempotent. */
  track(stop: () => Promise<void>): () => Promise<void>;
  progress(text: string): void;
}

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

/** Knobs of this scenario; the run lists the ones set in its command line. */
export const WEBHOOK_KNOBS = [
  'BENCH_WEBHOOK_SUBSCRIPTIONS',
  'BENCH_WEBHOOK_RATE',
  'BENCH_WEBHOOK_PEAK_RATE',
  'BENCH_WEBHOOK_BACKLOG',
  'BENCH_WEBHOOK_RUNS',
  'BENCH_WEBHOOK_VACUUM',
  'BENCH_WEBHOOK_MAX_IN_FLIGHT',
];

/** The runs of the scenario, by the names BENCH_WEBHOOK_RUNS takes (all by default; profile one at a time). */
const RUNS = ['bus-peak', 'bus-rate', 'bus-peak-failing', 'bus-rate-failing', 'post-rate'] as const;
type RunName = (typeof RUNS)[number];

const webhookSettings = () => ({
  fanOut: Math.round(envNumber('BENCH_WEBHOOK_SUBSCRIPTIONS', 10)),
  /** Deliveries/s of the fixed-rate runs: well under the target, to see latency without a queue. */
  rate: envNumber('BENCH_WEBHOOK_RATE', 1_000),
  /** Deliveries/s the saturating runs offer: twice the 3,000/s target. */
  peakRate: envNumber('BENCH_WEBHOOK_PEAK_RATE', 6_000),
  /** Deliveries published but not yet answered above which the saturating publisher waits. */
  backlog: envNumber('BENCH_WEBHOOK_BACKLOG', 5_000),
  runs: new Set(
    (process.env.BENCH_WEBHOOK_RUNS ?? RUNS.join(',')).split(',').map((run) => {
      const name = run.trim() as RunName;
      if (!RUNS.includes(name)) throw new Error(`BENCH_WEBHOOK_RUNS lists ${run}; ${RUNS.join(', ')} exist`);
      return name;
    }),
  ),
  vacuum: vacuumPolicy(process.env.BENCH_WEBHOOK_VACUUM ?? '1'),
});

/**
 * BENCH_WEBHOOK_VACUUM: a number of seconds (default 1) vacuums and analyzes the webhooks tables
 * before each run and vacuums the tables the engine queries that often during it; `between` only
 * before each run; `never` not at all. This machine's PostgreSQL runs with autovacuum off (a CI
 * setting), and without VACUUM the engine's prepared statements keep plans made when its tables
 * were nearly empty, whose cost then grows with the tables (BENCHMARKS.md); a VACUUM updates the
 * tables' sizes, which makes PostgreSQL plan them again. Once a second stands for a production
 * database whose tables are large and whose statistics are current.
 */
type VacuumPolicy = { between: boolean; everySeconds: number | undefined };
function vacuumPolicy(text: string): VacuumPolicy {
  if (text === 'between') return { between: true, everySeconds: undefined };
  if (text === 'never') return { between: false, everySeconds: undefined };
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`BENCH_WEBHOOK_VACUUM is between, never or a number of seconds (got ${text})`);
  return { between: true, everySeconds: seconds };
}

/**
 * Where an event's latency goes, from the webhooks service's own rows: `stored` = created_at →
 * the fan-out transaction that stored it began (outbox relay or bench publisher, RabbitMQ,
 * fan-out batching); `queued` = that → the worker started the first attempt (claim, the
 * in-flight cap); `sent` = the attempt's own duration as the sender measured it (HTTP).
 */
export type LatencyStages = Record<'stored' | 'queued' | 'sent', { p50: number; p99: number }>;

/** The tables the delivery engine reads and updates on every claim and attempt. */
const QUEUE_TABLES = ['webhooks.endpoints', 'webhooks.deliveries', 'webhooks.events', 'webhooks.claims', 'webhooks.queue'];

/**
 * The benchmark's own hand on its database: VACUUM between runs, so each run starts from the same
 * state whatever ran before it, and how many dead row versions a run left behind. (This machine's
 * PostgreSQL runs with autovacuum off; see BENCHMARKS.md.)
 */
class QueueTables {
  private vacuuming: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  private constructor(private readonly client: pg.Client) {}

  static async open(databaseUrl: string): Promise<QueueTables> {
    const client = new pg.Client({ connectionString: databaseUrl });
    // the database is dropped under it on Ctrl-C; queries report failures, the client need not crash the run
    client.on('error', () => undefined);
    await client.connect();
    return new QueueTables(client);
  }

  async vacuum(): Promise<void> {
    await this.client.query(`VACUUM (ANALYZE) ${[...QUEUE_TABLES, 'webhooks.attempts', 'webhooks.inbox', 'webhooks.outbox'].join(', ')}`);
  }

  /** VACUUM of the queue tables every `seconds` while a run lasts, as an eager autovacuum would. */
  vacuumEvery(seconds: number): void {
    this.timer = setInterval(() => {
      // a failure (the database dropped under a Ctrl-C) only means this VACUUM did not happen
      this.vacuuming ??= this.client
        .query(`VACUUM ${QUEUE_TABLES.join(', ')}`)
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => (this.vacuuming = undefined));
    }, seconds * 1000);
  }

  async stopVacuuming(): Promise<void> {
    clearInterval(this.timer);
    await this.vacuuming;
  }

  async latencyStages(from: Date, to: Date): Promise<LatencyStages> {
    const { rows } = await this.client.query<Record<string, number>>(
      `WITH firsts AS (
         SELECT EXTRACT(EPOCH FROM e.received_at - e.created_at) * 1000 AS stored,
                EXTRACT(EPOCH FROM a.started_at - e.received_at) * 1000 AS queued,
                a.duration_ms AS sent
           FROM webhooks.events e
           JOIN webhooks.deliveries d ON d.merchant_id = e.merchant_id AND d.event_id = e.id
           JOIN webhooks.attempts a ON a.merchant_id = d.merchant_id AND a.delivery_id = d.id AND a.number = 1
          WHERE e.created_at BETWEEN $1 AND $2)
       SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY stored)::float8 AS stored_p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY stored)::float8 AS stored_p99,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY queued)::float8 AS queued_p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY queued)::float8 AS queued_p99,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY sent)::float8 AS sent_p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY sent)::float8 AS sent_p99
         FROM firsts`,
      [from, to],
    );
    const row = rows[0]!;
    const stage = (name: string) => ({ p50: Number(row[`${name}_p50`] ?? NaN), p99: Number(row[`${name}_p99`] ?? NaN) });
    return { stored: stage('stored'), queued: stage('queued'), sent: stage('sent') };
  }

  /** Transactions committed in the benchmark's database so far (every service: webhooks, audit, catalog…). */
  async commits(): Promise<number> {
    return (await this.databaseCounters()).commits;
  }

  /** Deadlocks detected in the benchmark's database so far. */
  async deadlocks(): Promise<number> {
    return (await this.databaseCounters()).deadlocks;
  }

  private async databaseCounters(): Promise<{ commits: number; deadlocks: number }> {
    await this.client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await this.client.query<{ commits: string; deadlocks: string }>(
      'SELECT xact_commit AS commits, deadlocks FROM pg_stat_database WHERE datname = current_database()',
    );
    return { commits: Number(rows[0]!.commits), deadlocks: Number(rows[0]!.deadlocks) };
  }

  async deadTuples(): Promise<Record<string, number>> {
    // the statistics collector reports with a delay of up to half a second
    await this.client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await this.client.query<{ name: string; dead: string }>(
      `SELECT schemaname || '.' || relname AS name, n_dead_tup AS dead FROM pg_stat_user_tables WHERE schemaname || '.' || relname = ANY($1)`,
      [QUEUE_TABLES.slice(0, 2)],
    );
    return Object.fromEntries(rows.map((row) => [row.name, Number(row.dead)]));
  }

  async close(): Promise<void> {
    await this.stopVacuuming();
    await this.client.end();
  }
}

/**
 * What the webhooks service needs to deliver to the loopback receiver in the benchmark: the one
 * private host allowed, and a short retry schedule so the failing runs' retries fall inside the run.
 */
export const WEBHOOK_BENCH_ENV: Record<string, string> = { MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS: '127.0.0.1', MERX_WEBHOOK_RETRY_SCHEDULE: '1s' };
// the service's own cap (10 per endpoint) unless the run asks for another, to see whether the cap is the limit
if (process.env.BENCH_WEBHOOK_MAX_IN_FLIGHT) WEBHOOK_BENCH_ENV.MERX_WEBHOOK_MAX_IN_FLIGHT = process.env.BENCH_WEBHOOK_MAX_IN_FLIGHT;

const FAIL_PERCENT = 5;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const thousands = (value: number) => Math.round(value).toLocaleString('en-US');

export interface ReceiverCount {
  requests: number;
  firstAttempts: number;
  succeeded: number;
  lastArrivalAt: number | null;
}

export interface LatencySummary {
  count: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
}

export interface ReceiverStats {
  window: { requests: number; succeeded: number; perSecond: number[]; firstAttempt: LatencySummary; retry: LatencySummary };
  totals: { requests: number; succeeded: number; failedFirstAttempts: number; retries: number; duplicates: number; awaitingRetry: number; unparsable: number };
}

/** The benchmark's side of the receiver's control endpoints. */
export class ReceiverControl {
  constructor(readonly url: string) {}

  async reset(failPercent: number): Promise<void> {
    const response = await fetch(`${this.url}/_control/reset?fail_percent=${failPercent}`, { method: 'POST' });
    await response.arrayBuffer();
  }

  async count(): Promise<ReceiverCount> {
    return (await (await fetch(`${this.url}/_control/count`)).json()) as ReceiverCount;
  }

  async stats(from: number, to: number): Promise<ReceiverStats> {
    return (await (await fetch(`${this.url}/_control/stats?from=${from}&to=${to}`)).json()) as ReceiverStats;
  }

  /** Until nothing has arrived for `quietMs` (the set-up's own events: subscription_created and the like). */
  async settle(quietMs = 1_500, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = await this.count();
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      await sleep(200);
      const now = await this.count();
      if (now.requests !== last.requests) quietSince = Date.now();
      else if (Date.now() - quietSince >= quietMs) return;
      last = now;
    }
    throw new Error(`the receiver kept receiving for ${timeoutMs} ms after the set-up`);
  }

  /** Until `expected` distinct deliveries were answered 200; answers when the last one arrived. */
  async drained(expected: number, timeoutMs: number): Promise<ReceiverCount> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const count = await this.count();
      if (count.succeeded >= expected || Date.now() > deadline) return count;
      await sleep(50);
    }
  }
}

/** How a run makes its load: `start` begins at once and resolves when the load has ended. */
interface Load {
  label: string;
  /** Deliveries per second asked for. */
  offeredPerSecond: number;
  run(window: {
    warmupMs: number;
    measuredMs: number;
    onWindowStart(): void;
    onWindowEnd(): void;
  }): Promise<{ expected: number; saturated: boolean; errors: number }>;
}

/**
 * Events straight onto `merx.events`, on a schedule of `eventsPerSecond` (open loop), holding back
 * only while more than `backlogCap` deliveries are unanswered. Each event is built (its
 * created_at taken) right before it is published, as the outbox relay publishes right after commit.
 */
function busLoad(
  bus: AmqpBus,
  receiver: ReceiverControl,
  merchantId: string,
  product: Record<string, unknown>,
  fanOut: number,
  deliveriesPerSecond: number,
  backlogCap: number,
): Load {
  const eventsPerSecond = deliveriesPerSecond / fanOut;
  return {
    label: 'events published on merx.events',
    offeredPerSecond: deliveriesPerSecond,
    async run({ warmupMs, measuredMs, onWindowStart, onWindowEnd }) {
      let published = 0;
      let answered = 0;
      let saturated = false;
      let inWindow = false;
      let polling = true;
      // the receiver's count, a few times a second, for the backlog cap
      const poller = (async () => {
        while (polling) {
          answered = (await receiver.count()).firstAttempts;
          await sleep(50);
        }
      })();
      const started = performance.now();
      const windowStart = setTimeout(() => {
        inWindow = true;
        onWindowStart();
      }, warmupMs);
      try {
        for (;;) {
          const elapsed = performance.now() - started;
          if (elapsed >= warmupMs + measuredMs) break;
          const due = Math.floor((eventsPerSecond * elapsed) / 1000) - published;
          const room = Math.floor((backlogCap - (published * fanOut - answered)) / fanOut);
          if (due > room && inWindow) saturated = true;
          const batch = Math.min(due, room, 500);
          if (batch > 0) {
            const now = new Date();
            const events: MerxEvent[] = Array.from({ length: batch }, () => buildEvent('products.created', merchantId, { object: product }, now));
            await bus.publish(events);
            published += batch;
          } else {
            await sleep(2);
          }
        }
      } finally {
        clearTimeout(windowStart);
        polling = false;
        await poller;
      }
      onWindowEnd();
      return { expected: published * fanOut, saturated, errors: 0 };
    },
  };
}

/** POST /api/v1/products through the gateway on a schedule (open loop): each 201 is a committed product and its event. */
function postLoad(gatewayUrl: string, token: string, fanOut: number, deliveriesPerSecond: number): Load {
  const productsPerSecond = deliveriesPerSecond / fanOut;
  return {
    label: 'POST /api/v1/products via gateway',
    offeredPerSecond: deliveriesPerSecond,
    async run({ warmupMs, measuredMs, onWindowStart, onWindowEnd }) {
      const pool = new Pool(gatewayUrl, { connections: 32 });
      const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
      let sent = 0;
      let created = 0;
      let errors = 0;
      const requests = new Set<Promise<void>>();
      const post = async (sequence: number) => {
        try {
          const response = await pool.request({
            path: '/api/v1/products',
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ sku: `bench-wh-${run}-${sequence}`, title: `Webhook bench ${sequence}`, price: '19.99', currency: 'USD' }),
          });
          await response.body.dump();
          if (response.statusCode === 201) created += 1;
          else errors += 1;
        } catch {
          errors += 1;
        }
      };
      const started = performance.now();
      const windowStart = setTimeout(onWindowStart, warmupMs);
      try {
        for (;;) {
          const elapsed = performance.now() - started;
          if (elapsed >= warmupMs + measuredMs) break;
          const due = Math.floor((productsPerSecond * elapsed) / 1000) - sent;
          for (let i = 0; i < due; i++) {
            const request = post((sent += 1)).finally(() => requests.delete(request));
            requests.add(request);
          }
          await sleep(2);
        }
        onWindowEnd();
        await Promise.all([...requests]);
      } finally {
        clearTimeout(windowStart);
        await pool.close();
      }
      return { expected: created * fanOut, saturated: false, errors };
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface RunContext {
  mode: string;
  settings: LoadSettings;
  receiver: ReceiverControl;
  fanOut: number;
  /** Pids the CPU table names. */
  processes: Record<string, number>;
  /** Distributed mode: the run's PostgreSQL database, whose sessions count. */
  database: string | undefined;
  logs: Record<string, string>;
  progress(text: string): void;
  /** Distributed mode: the work-queue tables, vacuumed before each run. */
  tables: QueueTables | undefined;
  vacuum: VacuumPolicy;
}

async function measureDelivery(
  context: RunContext,
  load: Load,
  name: string,
  failPercent: number,
  repeat: { index: number; warmupSeconds: number },
): Promise<WebhookMeasurement> {
  const { receiver, settings } = context;
  context.progress(`  ${context.mode}: webhooks, ${name}, run ${repeat.index}/${settings.repeats}`);
  await receiver.reset(failPercent);
  if (context.vacuum.between) await context.tables?.vacuum();
  if (context.tables && context.vacuum.everySeconds) context.tables.vacuumEvery(context.vacuum.everySeconds);
  const deadlocksBefore = await context.tables?.deadlocks();
  let windowFrom = 0;
  let windowTo = 0;
  let cpuBefore: ReturnType<typeof cpuSnapshot>;
  let cpuAfter: ReturnType<typeof cpuSnapshot>;
  // read in the window's callbacks and awaited after the drain; a failure just leaves the figure out
  let commitsBefore: Promise<number | undefined> | undefined;
  let commitsAfter: Promise<number | undefined> | undefined;
  const commits = () => context.tables?.commits().catch(() => undefined);
  const outcome = await load.run({
    warmupMs: repeat.warmupSeconds * 1000,
    measuredMs: settings.durationSeconds * 1000,
    onWindowStart: () => {
      windowFrom = Date.now();
      cpuBefore = cpuSnapshot();
      commitsBefore = commits();
    },
    onWindowEnd: () => {
      windowTo = Date.now();
      cpuAfter = cpuSnapshot();
      commitsAfter = commits();
    },
  });
  const loadEndedAt = Date.now();
  // generous for the distributed engine (a backlog worked through at 500/s, plus the retries'
  // second); the embedded one is far slower, and its rate is the figure, not how long it takes to catch up
  const final = await receiver.drained(outcome.expected, context.mode === 'embedded' ? 20_000 : 30_000 + (outcome.expected / 500) * 1000);
  await context.tables?.stopVacuuming();
  const deadTuples = await context.tables?.deadTuples();
  const stages = await context.tables?.latencyStages(new Date(windowFrom), new Date(windowTo));
  const deadlocks = deadlocksBefore === undefined ? undefined : (await context.tables!.deadlocks()) - deadlocksBefore;
  const [before, after] = [await commitsBefore, await commitsAfter];
  const committed = before !== undefined && after !== undefined ? after - before : undefined;
  for (const [processName, pid] of Object.entries(context.processes)) {
    if (!isAlive(pid))
      throw new Error(
        `${processName} (pid ${pid}) died during "webhooks, ${name}":\n${context.logs[processName] ? tail(context.logs[processName]) : '(no log)'}`,
      );
  }
  const stats = await receiver.stats(windowFrom, windowTo);
  const seconds = Math.max(0.001, (windowTo - windowFrom) / 1000);
  const result: WebhookMeasurement = {
    mode: context.mode,
    name,
    repeat: repeat.index,
    fanOut: context.fanOut,
    offeredPerSecond: load.offeredPerSecond,
    deliveredPerSecond: stats.window.succeeded / seconds,
    attemptsPerSecond: stats.window.requests / seconds,
    saturated: outcome.saturated,
    p50: stats.window.firstAttempt.p50,
    p99: stats.window.firstAttempt.p99,
    max: stats.window.firstAttempt.max,
    failPercent,
    failedFirstAttempts: stats.totals.failedFirstAttempts,
    retries: stats.totals.retries,
    retryP50: null,
    retryP99: null,
    duplicates: stats.totals.duplicates,
    expected: outcome.expected,
    delivered: stats.totals.succeeded,
    drainMs: Math.max(0, (final.lastArrivalAt ?? loadEndedAt) - loadEndedAt),
    loadErrors: outcome.errors,
    perSecond: stats.window.perSecond,
    deadTuples,
    stages,
    deadlocks,
    commitsPerDelivery: committed === undefined || stats.window.succeeded === 0 ? undefined : committed / stats.window.succeeded,
    cpu: cpuUsage(cpuBefore!, cpuAfter!, context.processes, context.database),
    cpuPerDelivery: undefined,
  };
  result.cpuPerDelivery = result.cpu && msPerOperation(result.cpu, stats.window.succeeded);
  if (failPercent > 0) {
    const whole = await receiver.stats(0, Number.MAX_SAFE_INTEGER);
    result.retryP50 = whole.window.retry.p50;
    result.retryP99 = whole.window.retry.p99;
  }
  if (stats.totals.unparsable > 0) throw new Error(`${stats.totals.unparsable} webhooks arrived without a readable created_at`);
  context.progress(
    `    ${result.cpuPerDelivery ? `${result.cpuPerDelivery.sum!.toFixed(3)} CPU ms/delivery, ` : ''}${thousands(result.deliveredPerSecond)} deliveries/s (offered ${thousands(result.offeredPerSecond)}${result.saturated ? ', saturated' : ''}), ` +
      `p50 ${result.p50} ms, p99 ${result.p99} ms; ${thousands(result.delivered)} of ${thousands(result.expected)} delivered` +
      (failPercent > 0 ? `, ${result.failedFirstAttempts} first attempts failed, ${result.retries} retries` : '') +
      (result.delivered >= result.expected ? `, drained ${result.drainMs} ms after the load` : `, still delivering ${result.drainMs} ms after the load`) +
      `; per second: ${result.perSecond.join(' ')}` +
      (deadTuples ? `; dead tuples ${JSON.stringify(deadTuples)}` : '') +
      (result.commitsPerDelivery !== undefined ? `; ${result.commitsPerDelivery.toFixed(3)} commits per delivery` : '') +
      (deadlocks !== undefined ? `; ${deadlocks} deadlocks` : '') +
      (stages
        ? `; stages p50/p99 ${Object.entries(stages)
            .map(([stage, { p50, p99 }]) => `${stage} ${Math.round(p50)}/${Math.round(p99)}`)
            .join(', ')}`
        : ''),
  );
  return result;
}

const stackOf = (mode: RunningMode) => ({ baseUrl: mode.publicUrl, operatorToken: mode.operatorToken }) as Stack;

/** The merchant's subscriptions, through the public API as a merchant makes them; then the product the bus events carry. */
async function prepareMerchant(
  mode: RunningMode,
  receiverUrl: string,
  fanOut: number,
): Promise<{ merchantId: string; token: string; product: Record<string, unknown> }> {
  const stack = stackOf(mode);
  let token: string;
  if (mode.apiKey) token = await issueToken(stack, mode.apiKey);
  else token = (await createMerchant(stack)).token;
  for (let i = 0; i < fanOut; i++) {
    const created = await call(stack, 'POST', '/api/v1/webhooks/subscriptions', {
      token,
      body: { url: `${receiverUrl}/hooks/${i}`, topics: ['*'], description: `bench endpoint ${i}` },
    });
    if (created.status !== 201) throw new Error(`could not subscribe the receiver: ${created.status} ${created.text}`);
  }
  const product = await call(stack, 'POST', '/api/v1/products', {
    token,
    body: { sku: `bench-wh-${Date.now()}`, title: 'Webhook bench', price: '19.99', currency: 'USD' },
  });
  if (product.status !== 201) throw new Error(`could not create the product the events carry: ${product.status} ${product.text}`);
  // the token's own claim: the embedded sandbox merchant was not made here
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { merchant_id: string };
  return { merchantId: claims.merchant_id, token, product: product.body as Record<string, unknown> };
}

/**
 * The webhook scenario of one mode. Distributed: bus-fed runs (saturating and fixed rate, with and
 * without failures) and the POST-fed run; embedded (in-process bus, nothing to publish onto): the
 * POST-fed run only.
 */
export async function benchWebhookDelivery(
  name: 'embedded' | 'distributed',
  settings: LoadSettings,
  deps: WebhookBenchDeps,
): Promise<{ measurements: WebhookMeasurement[]; notes: string[] }> {
  const { fanOut, rate, peakRate, backlog, runs, vacuum } = webhookSettings();
  const measurements: WebhookMeasurement[] = [];
  // nothing to publish onto in the embedded mode: its bus is in-process
  const wanted = [...runs].filter((run) => name === 'distributed' || run === 'post-rate');
  if (wanted.length === 0) return { measurements, notes: [] };
  const receiverProcess: BenchProcess = await startWebhookReceiver();
  const stopReceiver = deps.track(receiverProcess.stop);
  try {
    deps.progress(`${name} mode: starting for the webhook scenario`);
    const mode = await deps.started<RunningMode & { databaseUrl?: string }>(
      name === 'embedded'
        ? startEmbeddedMode({ MERX_THROTTLE: 'off', ...WEBHOOK_BENCH_ENV })
        : startDistributedMode({ MERX_THROTTLE: 'off' }, WEBHOOK_BENCH_ENV),
    );
    let tables: QueueTables | undefined;
    let bus: AmqpBus | undefined;
    try {
      if (mode.databaseUrl) tables = await QueueTables.open(mode.databaseUrl);
      if (name === 'distributed')
        bus = await AmqpBus.connect({ url: AMQP_URL, service: 'bench', logger: createLogger('bench', 'warn'), deployment: mode.deployment! });
      const receiver = new ReceiverControl(receiverProcess.url);
      const { merchantId, token, product } = await prepareMerchant(mode, receiverProcess.url, fanOut);
      await receiver.settle();
      const context: RunContext = {
        mode: name,
        settings,
        receiver,
        fanOut,
        processes: { loadgen: process.pid, receiver: receiverProcess.pid, ...mode.processes },
        database: mode.databaseName,
        logs: mode.logs,
        progress: deps.progress,
        tables,
        vacuum,
      };
      const perEvent = `${fanOut} subscriptions`;
      const failing = `, ${FAIL_PERCENT}% of first attempts answered 500`;
      const saturating = `events on the bus × ${perEvent}, saturating (offered ${thousands(peakRate)}/s, backlog ≤ ${thousands(backlog)})`;
      const fixed = `events on the bus × ${perEvent}, ${thousands(rate)} deliveries/s`;
      const plans: Record<RunName, () => [Load, string, number]> = {
        'bus-peak': () => [busLoad(bus!, receiver, merchantId, product, fanOut, peakRate, backlog), saturating, 0],
        'bus-rate': () => [busLoad(bus!, receiver, merchantId, product, fanOut, rate, Number.POSITIVE_INFINITY), fixed, 0],
        'bus-peak-failing': () => [busLoad(bus!, receiver, merchantId, product, fanOut, peakRate, backlog), `${saturating}${failing}`, FAIL_PERCENT],
        'bus-rate-failing': () => [busLoad(bus!, receiver, merchantId, product, fanOut, rate, Number.POSITIVE_INFINITY), `${fixed}${failing}`, FAIL_PERCENT],
        'post-rate': () => [
          postLoad(mode.gatewayUrl, token, fanOut, rate),
          `POST /api/v1/products via gateway × ${perEvent}, ${thousands(rate)} deliveries/s (${thousands(rate / fanOut)} products/s)`,
          0,
        ],
      };
      for (const run of RUNS.filter((candidate) => wanted.includes(candidate))) {
        for (let index = 1; index <= settings.repeats; index++) {
          const [load, label, failPercent] = plans[run]();
          // The first repetition warms up fully; the later ones find the engine warm and only
          // need a second for the saturating publisher to build its backlog before the window opens.
          const warmupSeconds = index === 1 ? settings.warmupSeconds : Math.min(1, settings.warmupSeconds);
          measurements.push(await measureDelivery(context, load, label, failPercent, { index, warmupSeconds }));
        }
      }
    } finally {
      deps.progress(`${name} mode: stopping`);
      await bus?.close();
      await tables?.close();
      await mode.stop();
    }
  } finally {
    await stopReceiver();
  }
  const notes = measurements.map(
    (m) => `Webhook deliveries answered 200 in each second of the window, ${m.mode}, ${m.name}, run ${m.repeat}: ${m.perSecond.map(thousands).join(' · ')}.`,
  );
  if (name === 'distributed') {
    const policy = vacuum.everySeconds
      ? `VACUUM (ANALYZE) of the webhooks tables before each run and VACUUM of ${QUEUE_TABLES.join(', ')} every ${vacuum.everySeconds} s during it`
      : vacuum.between
        ? 'VACUUM (ANALYZE) of the webhooks tables before each run only'
        : 'no VACUUM at all';
    notes.push(
      `Webhook runs, distributed: ${policy} (BENCH_WEBHOOK_VACUUM; this PostgreSQL runs with autovacuum off). Webhooks service settings: ${Object.entries(
        WEBHOOK_BENCH_ENV,
      )
        .map(([key, value]) => `${key}=${value}`)
        .join(', ')}.`,
    );
  }
  return { measurements, notes };
}
