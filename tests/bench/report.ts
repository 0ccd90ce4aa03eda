import { cpus } from 'node:os';
import { percentOfCore, type CpuUsage } from './cpu.js';
import { LIMITER_SCENARIOS, limiterCost, pairedCosts, signedPercent } from './limiter.js';
import { median, medianCpuPerOperation, type LoadSettings, type Measurement } from './load.js';
import type { WebhookMeasurement } from './webhook-delivery.js';
import { neighboursSection, type NeighbourRow } from './neighbours.js';

export const SCENARIOS = {
  hello: 'bare `node:http` hello (ceiling)',
  post: 'POST /api/v1/products via gateway',
  getGateway: 'GET /api/v1/products/{id} via gateway',
  getDirect: 'GET /api/v1/products/{id} straight to catalog',
} as const;

/** A scenario that could not be measured, with the reason shown in its row. */
export interface Skipped {
  mode: string;
  name: string;
  reason: string;
}

export interface ReportInput {
  startedAt: Date;
  command: string;
  settings: LoadSettings;
  nproc: number;
  loadAverageAtStart: number[];
  measurements: Measurement[];
  /** The webhook scenario's runs (deliveries to a loopback receiver). */
  webhooks: WebhookMeasurement[];
  /** The neighbours scenario's comparisons (issue 29). */
  neighbours: NeighbourRow[];
  skipped: Skipped[];
  notes: string[];
}

const number = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => value.toFixed(1);
const ratio = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? 'n/a' : value.toFixed(2));

function find(measurements: Measurement[], mode: string, name: string): Measurement | undefined {
  return measurements.find((measurement) => measurement.mode === mode && measurement.name === name);
}

function unexpectedText(measurement: Measurement): string {
  const entries = Object.entries(measurement.unexpected);
  if (entries.length === 0) return '0';
  return entries.map(([status, count]) => `${number(count)}×${status}`).join(', ');
}

const cpuMs = (value: number) => value.toFixed(3);
/** `median (min–max)` of a figure over the runs; `central` replaces the median where the row defines its own. */
function spread(values: number[], format: (value: number) => string, central = values.length ? median(values) : undefined): string {
  if (values.length === 0 || central === undefined) return 'n/a';
  if (values.length === 1) return format(central);
  return `${format(central)} (${format(Math.min(...values))}–${format(Math.max(...values))})`;
}
const cpuPerOperationOfRuns = (m: Measurement) => m.runs.flatMap((run) => (run.cpuPerOperation ? [run.cpuPerOperation.sum!] : []));
/** Steal over the median run's window: ms per operation and % of the window's wall time (of one core). */
function stealText(cpu: CpuUsage | undefined, perOperation: Record<string, number> | undefined): string {
  if (!cpu || !perOperation) return 'n/a';
  return `${cpuMs(perOperation.steal!)} (${Math.round(percentOfCore(cpu).steal!)}%)`;
}

function resultsTable(input: ReportInput): string[] {
  const ceiling = find(input.measurements, 'node:http', SCENARIOS.hello)?.requestsPerSecond;
  const lines = [
    '| Mode | Scenario | CPU ms/op | steal ms/op (% of a core) | req/s (expected status) | vs ceiling | p50 ms | p99 ms | other statuses | conn. errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const m of input.measurements) {
    lines.push(
      `| ${m.mode} | ${m.name} | ${spread(cpuPerOperationOfRuns(m), cpuMs)} | ${stealText(m.medianRun.cpu, m.medianRun.cpuPerOperation)} | ${spread(
        m.runs.map((run) => run.requestsPerSecond),
        number,
      )} | ${ratio(ceiling ? m.requestsPerSecond / ceiling : undefined)} | ${ms(m.p50)} | ${ms(m.p99)} | ${unexpectedText(m)} | ${m.errors} |`,
    );
  }
  for (const skipped of input.skipped) lines.push(`| ${skipped.mode} | ${skipped.name} | not measured: ${skipped.reason} | | | | | | | |`);
  return lines;
}

/** One row of the headline table: CPU ms per operation over the runs, against the issue's target. */
interface HeadlineRow {
  operation: string;
  /** CPU ms per operation of each run; empty when not measured. */
  values: number[];
  target: string;
  /** Met when the median is at or under the target (and any further condition holds). */
  met: ((median: number) => boolean) | undefined;
  /** Further figures after the CPU cell (req/s, p99). */
  besides: string;
  /** How a value prints: CPU ms unless the row is a ratio. */
  format?: (value: number) => string;
  /** The figure judged, where it is not the median of `values` (which then give the range only). */
  central?: number;
}

const verdictOf = (met: boolean | undefined) => (met === undefined ? 'not measured' : met ? 'met' : '**not met**');

function scenarioRow(measurements: Measurement[], mode: string, name: string, operation: string, targetMs: number): HeadlineRow {
  const m = find(measurements, mode, name);
  const values = m ? cpuPerOperationOfRuns(m) : [];
  return {
    operation,
    values,
    target: `≤ ${targetMs} ms`,
    met: (value) => value <= targetMs,
    besides: m
      ? `${spread(
          m.runs.map((run) => run.requestsPerSecond),
          number,
        )} req/s, p50 ${ms(m.p50)} / p99 ${ms(m.p99)} ms`
      : '',
  };
}

/**
 * The issue's table, measured: each operation's CPU ms summed over every process that does its
 * work (ours, PostgreSQL, RabbitMQ, Redis, the load generator), median of the runs with their range.
 */
function headlineTable(input: ReportInput): string[] {
  const { measurements, webhooks } = input;
  const rows: HeadlineRow[] = [
    scenarioRow(measurements, 'distributed', SCENARIOS.getGateway, 'distributed GET product via gateway', 0.35),
    scenarioRow(measurements, 'distributed', SCENARIOS.getDirect, 'distributed GET product straight to catalog', 0.15),
    scenarioRow(measurements, 'distributed', SCENARIOS.post, 'distributed POST product, with its event consumed (audit, webhooks)', 1.2),
    webhookHeadlineRow(webhooks),
    limiterHeadlineRow(measurements),
    embeddedPostRow(measurements),
    scenarioRow(measurements, 'embedded', SCENARIOS.getGateway, 'embedded GET product via gateway', 0.4),
  ];
  return [
    `| operation | CPU ms/op, median of ${input.settings.repeats} (range) | target | verdict | besides |`,
    '|---|---:|---:|---|---|',
    ...rows.map((row) => {
      const middle = row.values.length ? (row.central ?? median(row.values)) : undefined;
      const cell = spread(row.values, row.format ?? cpuMs, middle);
      return `| ${row.operation} | ${cell} | ${row.target} | ${verdictOf(middle === undefined || !row.met ? undefined : row.met(middle))} | ${row.besides} |`;
    }),
  ];
}

/** The saturating bus run without failures: the engine's cost per delivery answered 200. */
function webhookHeadlineRow(webhooks: WebhookMeasurement[]): HeadlineRow {
  const runs = webhooks.filter((m) => m.mode === 'distributed' && m.failPercent === 0 && m.name.includes('saturating') && m.cpuPerDelivery);
  const fanOut = runs[0]?.fanOut ?? 10;
  return {
    operation: `distributed webhook delivery (saturated, ${fanOut} subscriptions)`,
    values: runs.map((m) => m.cpuPerDelivery!.sum!),
    target: '≤ 0.35 ms',
    met: (value) => value <= 0.35,
    besides: runs.length
      ? `${spread(
          runs.map((m) => m.deliveredPerSecond),
          number,
        )} deliveries/s`
      : '',
  };
}

/**
 * The limiter's share: the CPU per request each pair of runs added with every class counting over
 * MERX_THROTTLE=off, as a fraction; the median pair is the figure. The two settings run on their
 * own starts of the mode side by side, their runs in turns (limiter.ts), so each pair was taken
 * back to back.
 */
function limiterHeadlineRow(measurements: Measurement[]): HeadlineRow {
  const on = find(measurements, 'distributed', LIMITER_SCENARIOS.on);
  const off = find(measurements, 'distributed', LIMITER_SCENARIOS.off);
  const costs = on && off ? pairedCosts(on, off) : [];
  const cost = on && off ? limiterCost(on, off) : undefined;
  const cpuOf = (m: Measurement) => {
    const value = medianCpuPerOperation(m);
    return value === undefined ? 'n/a' : cpuMs(value);
  };
  return {
    operation: 'limiter cost on GET via gateway (on vs off, distributed)',
    values: costs,
    target: '< 10 %',
    met: (value) => value < 0.1,
    format: signedPercent,
    ...(cost?.cpu === undefined ? {} : { central: cost.cpu }),
    besides:
      on && off && cost
        ? `CPU ms/op ${cpuOf(on)} on vs ${cpuOf(off)} off; req/s ${number(on.requestsPerSecond)} vs ${number(off.requestsPerSecond)} (${signedPercent(cost.throughput)})`
        : '',
  };
}

/** Embedded POST: CPU per product and, at 50 connections, p99 under 200 ms. */
function embeddedPostRow(measurements: Measurement[]): HeadlineRow {
  const row = scenarioRow(measurements, 'embedded', SCENARIOS.post, 'embedded POST product (everything in one process)', 2);
  const post = find(measurements, 'embedded', SCENARIOS.post);
  return { ...row, target: '≤ 2 ms, p99 < 200 ms', met: (value) => value <= 2 && post !== undefined && post.p99 < 200 };
}

/** What each scenario's CPU window spans, where it is more than the load (the POST's consumers). */
function windowNotes(measurements: Measurement[]): string[] {
  const defaultCovers = 'the load alone (the work ends with the response)';
  return measurements
    .filter((m) => m.windowCovers !== defaultCovers)
    .map(
      (m) =>
        `- ${m.mode}, ${m.name}: ${m.windowCovers}; the window closed ${spread(
          m.runs.map((run) => run.drainMs),
          number,
        )} ms after the load ended (median (range) of the runs).`,
    );
}

export function gatewayOverhead(measurements: Measurement[], mode: string): number | undefined {
  const viaGateway = find(measurements, mode, SCENARIOS.getGateway);
  const direct = find(measurements, mode, SCENARIOS.getDirect);
  return viaGateway && direct ? viaGateway.requestsPerSecond / direct.requestsPerSecond : undefined;
}

function targetsTable(measurements: Measurement[]): string[] {
  const mode = 'distributed';
  const overhead = gatewayOverhead(measurements, mode);
  const post = find(measurements, mode, SCENARIOS.post);
  const merxRows = [SCENARIOS.post, SCENARIOS.getGateway, SCENARIOS.getDirect].map((name) => find(measurements, mode, name)).filter((m) => m !== undefined);
  const worstP99 = merxRows.length ? Math.max(...merxRows.map((m) => m.p99)) : undefined;
  const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : '**not met**');
  return [
    '| Target (distributed mode, 2 cores, 50 connections) | Measured | Verdict |',
    '|---|---:|---|',
    `| GET via gateway ≥ 50% of GET straight to catalog | ${overhead === undefined ? 'n/a' : `${(overhead * 100).toFixed(0)}%`} | ${verdict(overhead === undefined ? undefined : overhead >= 0.5)} |`,
    `| POST ≥ 1,500 req/s | ${post ? number(post.requestsPerSecond) : 'n/a'} | ${verdict(post ? post.requestsPerSecond >= 1500 : undefined)} |`,
    `| p99 < 50 ms (worst of the three Merx scenarios) | ${worstP99 === undefined ? 'n/a' : `${ms(worstP99)} ms`} | ${verdict(worstP99 === undefined ? undefined : worstP99 < 50)} |`,
  ];
}

const CPU_ORDER = [
  'loadgen',
  'hello',
  'receiver',
  'merx',
  'gateway',
  'catalog',
  'oauth',
  'audit',
  'webhooks',
  'merchants',
  'console',
  'postgres',
  'rabbitmq',
  'redis',
  'sum',
  'other',
  'steal',
  'total',
];

/** A table of figures by CPU group, one row per measurement; `format` prints a cell. */
function cpuTable(
  rows: Array<{ mode: string; name: string; figures: Record<string, number> | undefined }>,
  format: (value: number) => string,
  keep: (column: string) => boolean = () => true,
): string[] {
  const measured = rows.filter((row) => row.figures);
  if (measured.length === 0) return ['(CPU figures need /proc; not available on this system.)'];
  const present = new Set(measured.flatMap((row) => Object.keys(row.figures!)).filter(keep));
  const columns = [...CPU_ORDER.filter((column) => present.has(column)), ...[...present].filter((column) => !CPU_ORDER.includes(column))];
  return [
    `| Mode | Scenario | ${columns.join(' | ')} |`,
    `|---|---|${columns.map(() => '---:').join('|')}|`,
    ...measured.map((row) => {
      const cells = columns.map((column) => (row.figures![column] === undefined ? '' : format(row.figures![column]!)));
      return `| ${row.mode} | ${row.name} | ${cells.join(' | ')} |`;
    }),
  ];
}

const wholePercent = (value: number) => `${Math.round(value)}`;

const nullableMs = (value: number | null) => (value === null ? 'n/a' : number(value));

function webhookResultsTable(input: ReportInput): string[] {
  const ceiling = find(input.measurements, 'node:http', SCENARIOS.hello)?.requestsPerSecond;
  const lines = [
    '| Mode | Load | offered deliveries/s | delivered/s (200) | vs ceiling | p50 ms | p99 ms | max ms | first attempts failed → retried (retry p50 / p99 ms) | delivered / expected | last delivery after load end | duplicates |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const m of input.webhooks) {
    const delivered = `${number(m.deliveredPerSecond)}${m.saturated ? ' (saturated)' : ''}`;
    const retries = m.failPercent > 0 ? `${number(m.failedFirstAttempts)} → ${number(m.retries)} (${nullableMs(m.retryP50)} / ${nullableMs(m.retryP99)})` : '—';
    const complete = `${number(m.delivered)} / ${number(m.expected)}${m.delivered >= m.expected ? '' : ' **incomplete**'}${m.loadErrors ? ` (${number(m.loadErrors)} load errors)` : ''}`;
    lines.push(
      `| ${m.mode} | ${webhookLabel(m)} | ${number(m.offeredPerSecond)} | ${delivered} | ${ratio(ceiling ? m.deliveredPerSecond / ceiling : undefined)} | ${nullableMs(m.p50)} | ${nullableMs(m.p99)} | ${nullableMs(m.max)} | ${retries} | ${complete} | ${m.delivered >= m.expected ? `${number(m.drainMs)} ms` : `still delivering ${number(m.drainMs)} ms after`} | ${number(m.duplicates)} |`,
    );
  }
  return lines;
}

/** A webhook run's load, with its repetition when there are several. */
const webhookLabel = (m: WebhookMeasurement) => `${m.name}, run ${m.repeat}`;

function webhookTargetsTable(webhooks: WebhookMeasurement[]): string[] {
  const distributed = webhooks.filter((m) => m.mode === 'distributed');
  const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : '**not met**');
  const saturating = (failing: boolean) => distributed.find((m) => m.saturated && m.failPercent > 0 === failing && m.name.startsWith('events'));
  const throughputRow = (failing: boolean) => {
    const run = saturating(failing) ?? distributed.find((m) => m.name.includes('saturating') && m.failPercent > 0 === failing);
    const value = run ? `${number(run.deliveredPerSecond)}/s${run.saturated ? '' : ' (not saturated: at least this)'}` : 'n/a';
    return `| ≥ 3,000 deliveries/s${failing ? ', 5% of first attempts failing' : ''} (events on the bus, saturating) | ${value} | ${verdict(run ? run.deliveredPerSecond >= 3000 : undefined)} |`;
  };
  const latencyRows = distributed
    .filter((m) => !m.saturated && !m.name.includes('saturating'))
    .map((m) => `| p99 < 250 ms to the receiver: ${webhookLabel(m)} | ${nullableMs(m.p99)} ms | ${verdict(m.p99 === null ? undefined : m.p99 < 250)} |`);
  return ['| Target (distributed mode, 2 cores) | Measured | Verdict |', '|---|---:|---|', throughputRow(false), throughputRow(true), ...latencyRows];
}

/** CPU time per delivery answered 200, by process: where one delivery's cost goes. */
function webhookCpuPerDelivery(webhooks: WebhookMeasurement[]): string[] {
  const measured = webhooks.filter((m) => m.cpuPerDelivery);
  if (measured.length === 0) return [];
  return [
    '',
    'CPU per delivery answered 200 in the window, in ms (CPU ms of the window ÷ deliveries answered 200 in it; `sum` is the headline figure):',
    '',
    ...cpuTable(
      measured.map((m) => ({ mode: m.mode, name: webhookLabel(m), figures: m.cpuPerDelivery })),
      cpuMs,
    ),
  ];
}

/** Where an event's time goes, from the service's own timestamps, and PostgreSQL commits per delivery. */
function webhookStagesTable(webhooks: WebhookMeasurement[]): string[] {
  const staged = webhooks.filter((m) => m.stages);
  if (staged.length === 0) return [];
  const pair = (stage: { p50: number; p99: number }) => `${number(stage.p50)} / ${number(stage.p99)}`;
  return [
    '',
    'Where the latency goes (first attempts of the window’s events, p50 / p99 ms, from the webhooks service’s rows): `stored` = created_at → the fan-out transaction that stored the event began (outbox relay or bench publisher, RabbitMQ, fan-out batching); `queued` = → the worker started the first attempt (waiting for a claim under the in-flight cap); `sent` = the attempt’s HTTP exchange as the sender timed it. Commits: PostgreSQL transactions committed in the database (all services) per delivery answered 200. Deadlocks: detected by PostgreSQL in the database from the start of the load until the run drained; each one stalls its transactions for `deadlock_timeout` (1 s) before one is cancelled and retried.',
    '',
    '| Mode | Load | stored | queued | sent | commits per delivery | deadlocks |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...staged.map(
      (m) =>
        `| ${m.mode} | ${webhookLabel(m)} | ${pair(m.stages!.stored)} | ${pair(m.stages!.queued)} | ${pair(m.stages!.sent)} | ${m.commitsPerDelivery === undefined ? 'n/a' : m.commitsPerDelivery.toFixed(3)} | ${m.deadlocks ?? 'n/a'} |`,
    ),
  ];
}

function webhookSection(input: ReportInput): string[] {
  if (input.webhooks.length === 0) return [];
  return [
    '',
    '## Webhook delivery',
    '',
    'One merchant, every subscription `*` on its own path of a loopback receiver (node:http in its own process, answering at once with keep-alive); every event becomes one delivery per subscription. ' +
      'Latency: the receiver’s clock at arrival − the event’s `created_at` (taken just before the state change commits), first attempts, over the measured window. ' +
      'Events on the bus are published onto `merx.events` with confirms, as the outbox relay does after a commit; a saturating run holds back only while its backlog is at the cap, so the engine is never idle and the latency there is mostly queueing. ' +
      'The failing runs answer 500 to a fixed 5% of first attempts (by hash of webhook-id and path) and 200 to their retries (retry schedule 1 s). Every run then waits until every delivery it caused has been answered 200 (the embedded one at most 20 s). Only the POST run starts at a real commit; on the bus runs the publish stands in for the outbox relay’s.',
    '',
    ...webhookResultsTable(input),
    '',
    ...webhookTargetsTable(input.webhooks),
    ...webhookStagesTable(input.webhooks),
    '',
    ...webhookCpuPerDelivery(input.webhooks),
    '',
    'CPU during each measured window (% of one core):',
    '',
    ...cpuTable(
      input.webhooks.map((m) => ({ mode: m.mode, name: webhookLabel(m), figures: m.cpu && percentOfCore(m.cpu) })),
      wholePercent,
    ),
  ];
}

export function renderReport(input: ReportInput): string {
  const { settings } = input;
  const overheads = ['distributed', 'embedded']
    .map((mode) => [mode, gatewayOverhead(input.measurements, mode)] as const)
    .filter(([, value]) => value !== undefined)
    .map(([mode, value]) => `${mode} ${ratio(value)}`);
  const medianRuns = input.measurements.map((m) => ({ mode: m.mode, name: m.name, run: m.medianRun }));
  return [
    `# Merx benchmark, ${input.startedAt.toISOString()}`,
    '',
    `- Command: \`${input.command}\``,
    `- Machine: ${input.nproc} cores (\`nproc\`), ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${process.platform}`,
    `- Load average at start: ${input.loadAverageAtStart.map((value) => value.toFixed(2)).join(' / ')} (1/5/15 min)`,
    `- Load: autocannon ${settings.connections} connections; per scenario a probe and a ${settings.warmupSeconds} s warm-up, then ${settings.repeats} measured runs of about ${settings.durationSeconds} s each, reported as their median (and range); the load generator runs in its own process, every server in another`,
    '',
    `## CPU per operation (median of ${settings.repeats} runs)`,
    '',
    ...headlineTable(input),
    '',
    'CPU ms/op: CPU time of every process that does the work (ours, PostgreSQL, RabbitMQ, Redis and the load generator, from `/proc`) over a measured window, ÷ the operations that succeeded in it. ' +
      'Steal slows a run but is nobody’s work, so this figure moves far less with a noisy neighbour than req/s. ' +
      'Limiter: CPU ms per request with every class counting ÷ the same with MERX_THROTTLE=off, − 1, for each pair of runs taken in turns; the median pair, with the range of the pairs. Webhook delivery: the saturating run on the bus, CPU over its window ÷ deliveries answered 200 in it.',
    ...(windowNotes(input.measurements).length ? ['', 'Windows longer than the load:', '', ...windowNotes(input.measurements)] : []),
    '',
    '## Results',
    '',
    ...resultsTable(input),
    '',
    'CPU ms/op and req/s: median (range) of the runs; p50 and p99: medians; steal: of the median run (by CPU ms/op).',
    '',
    `Gateway overhead ratio (GET via gateway ÷ GET straight to catalog, req/s): ${overheads.join(', ') || 'n/a'}.`,
    '',
    '## Throughput targets (before CPU per operation)',
    '',
    ...targetsTable(input.measurements),
    '',
    '## CPU per operation by process (ms; the median run of each scenario)',
    '',
    ...cpuTable(
      medianRuns.map(({ mode, name, run }) => ({ mode, name, figures: run.cpuPerOperation })),
      cpuMs,
    ),
    '',
    '`loadgen` is autocannon (the benchmark’s own process), `merx` the single embedded process, `postgres`, `rabbitmq` and `redis` every process of those servers on the machine; `sum` is all of those, the headline figure. `other` is the rest of the machine’s busy time (kernel, other users), `steal` time the hypervisor gave our virtual CPUs to someone else, `total` the busy time without steal: none of the three is in `sum`.',
    '',
    `## CPU during the median run (% of one core; the machine has ${input.nproc * 100}%)`,
    '',
    ...cpuTable(
      medianRuns.map(({ mode, name, run }) => ({ mode, name, figures: run.cpu && percentOfCore(run.cpu) })),
      wholePercent,
    ),
    ...webhookSection(input),
    ...neighboursSection(input.neighbours),
    ...(input.notes.length ? ['', '## Notes', '', ...input.notes.map((note) => `- ${note}`)] : []),
    '',
  ].join('\n');
}
