import { cpus } from 'node:os';
import type { LoadSettings, Measurement } from './load.js';

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

const CPU_ORDER = ['loadgen', 'hello', 'merx', 'gateway', 'catalog', 'oauth', 'postgres', 'rabbitmq', 'other', 'steal', 'total'];

function cpuTable(measurements: Measurement[]): string[] {
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
    ...(input.notes.length ? ['', '## Notes', '', ...input.notes.map((note) => `- ${note}`)] : []),
    '',
  ].join('\n');
}
