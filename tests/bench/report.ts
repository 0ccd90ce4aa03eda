import { cpus } from 'node:os';
import type { CpuShare } from './cpu.js';
import type { LoadSettings, Measurement } from './load.js';
import type { WebhookMeasurement } from './webhook-delivery.js';

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

function resultsTable(input: ReportInput): string[] {
  const ceiling = find(input.measurements, 'node:http', SCENARIOS.hello)?.requestsPerSecond;
  const lines = [
    '| Mode | Scenario | req/s (expected status) | vs ceiling | p50 ms | p99 ms | other statuses | conn. errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const measurement of input.measurements) {
    lines.push(
      `| ${measurement.mode} | ${measurement.name} | ${number(measurement.requestsPerSecond)} | ${ratio(ceiling ? measurement.requestsPerSecond / ceiling : undefined)} | ${ms(measurement.p50)} | ${ms(measurement.p99)} | ${unexpectedText(measurement)} | ${measurement.errors} |`,
    );
  }
  for (const skipped of input.skipped) lines.push(`| ${skipped.mode} | ${skipped.name} | not measured: ${skipped.reason} | | | | | |`);
  return lines;
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
  'postgres',
  'rabbitmq',
  'other',
  'steal',
  'total',
];

function cpuTable(measurements: Array<{ mode: string; name: string; cpu: CpuShare | undefined }>): string[] {
  const measured = measurements.filter((measurement) => measurement.cpu);
  if (measured.length === 0) return ['(CPU shares need /proc; not available on this system.)'];
  const present = new Set(measured.flatMap((measurement) => Object.keys(measurement.cpu!)));
  const columns = [...CPU_ORDER.filter((column) => present.has(column)), ...[...present].filter((column) => !CPU_ORDER.includes(column))];
  return [
    `| Mode | Scenario | ${columns.join(' | ')} |`,
    `|---|---|${columns.map(() => '---:').join('|')}|`,
    ...measured.map((measurement) => {
      const cells = columns.map((column) => (measurement.cpu![column] === undefined ? '' : `${Math.round(measurement.cpu![column]!)}`));
      return `| ${measurement.mode} | ${measurement.name} | ${cells.join(' | ')} |`;
    }),
  ];
}

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
      `| ${m.mode} | ${m.name} | ${number(m.offeredPerSecond)} | ${delivered} | ${ratio(ceiling ? m.deliveredPerSecond / ceiling : undefined)} | ${nullableMs(m.p50)} | ${nullableMs(m.p99)} | ${nullableMs(m.max)} | ${retries} | ${complete} | ${m.delivered >= m.expected ? `${number(m.drainMs)} ms` : `still delivering ${number(m.drainMs)} ms after`} | ${number(m.duplicates)} |`,
    );
  }
  return lines;
}

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
    .map((m) => `| p99 < 250 ms to the receiver: ${m.name} | ${nullableMs(m.p99)} ms | ${verdict(m.p99 === null ? undefined : m.p99 < 250)} |`);
  return ['| Target (distributed mode, 2 cores) | Measured | Verdict |', '|---|---:|---|', throughputRow(false), throughputRow(true), ...latencyRows];
}

/** CPU time per delivery answered 200, by process: where one delivery's cost goes. */
function webhookCpuPerDelivery(webhooks: WebhookMeasurement[]): string[] {
  const measured = webhooks.filter((m) => m.cpu && m.deliveredPerSecond > 0);
  if (measured.length === 0) return [];
  const columns = CPU_ORDER.filter((column) => column !== 'steal' && measured.some((m) => (m.cpu![column] ?? 0) >= 0.5));
  return [
    '',
    'CPU per delivery answered 200, in ms (CPU % ÷ 100 ÷ deliveries/s × 1000):',
    '',
    `| Mode | Load | ${columns.join(' | ')} |`,
    `|---|---|${columns.map(() => '---:').join('|')}|`,
    ...measured.map(
      (m) =>
        `| ${m.mode} | ${m.name} | ${columns.map((column) => (m.cpu![column] === undefined ? '' : ((m.cpu![column]! * 10) / m.deliveredPerSecond).toFixed(3))).join(' | ')} |`,
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
        `| ${m.mode} | ${m.name} | ${pair(m.stages!.stored)} | ${pair(m.stages!.queued)} | ${pair(m.stages!.sent)} | ${m.commitsPerDelivery === undefined ? 'n/a' : m.commitsPerDelivery.toFixed(3)} | ${m.deadlocks ?? 'n/a'} |`,
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
    'CPU during each measured window (% of one core):',
    '',
    ...cpuTable(input.webhooks),
    ...webhookCpuPerDelivery(input.webhooks),
  ];
}

export function renderReport(input: ReportInput): string {
  const { settings } = input;
  const overheads = ['distributed', 'embedded']
    .map((mode) => [mode, gatewayOverhead(input.measurements, mode)] as const)
    .filter(([, value]) => value !== undefined)
    .map(([mode, value]) => `${mode} ${ratio(value)}`);
  return [
    `# Merx benchmark, ${input.startedAt.toISOString()}`,
    '',
    `- Command: \`${input.command}\``,
    `- Machine: ${input.nproc} cores (\`nproc\`), ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${process.platform}`,
    `- Load average at start: ${input.loadAverageAtStart.map((value) => value.toFixed(2)).join(' / ')} (1/5/15 min)`,
    `- Load: autocannon ${settings.connections} connections, ${settings.warmupSeconds} s warm-up then ${settings.durationSeconds} s measured per scenario; the load generator runs in its own process, every server in another`,
    '',
    '## Results',
    '',
    ...resultsTable(input),
    '',
    `Gateway overhead ratio (GET via gateway ÷ GET straight to catalog): ${overheads.join(', ') || 'n/a'}.`,
    '',
    '## Targets',
    '',
    ...targetsTable(input.measurements),
    '',
    '## CPU during each measured run (% of one core; the machine has ' + `${input.nproc * 100}%)`,
    '',
    ...cpuTable(input.measurements),
    '',
    '`loadgen` is autocannon, `merx` the single embedded process, `postgres` and `rabbitmq` every process of those servers on the machine, `other` the rest of the busy time (kernel, other users), `steal` time the hypervisor gave our virtual CPUs to someone else; `total` is the busy time without steal.',
    ...webhookSection(input),
    ...(input.notes.length ? ['', '## Notes', '', ...input.notes.map((note) => `- ${note}`)] : []),
    '',
  ].join('\n');
}
