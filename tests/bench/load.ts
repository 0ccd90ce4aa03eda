import autocannon from 'autocannon';
import { cpuSnapshot, cpuUsage, msPerOperation, type CpuUsage } from './cpu.js';

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  /** Measured runs per scenario after one shared probe and warm-up; the report gives their median. */
  repeats: number;
}

export interface Scenario {
  mode: string;
  name: string;
  url: string;
  /** The status that counts as a success; anything else is reported, not counted. */
  expectStatus: number;
  request: autocannon.RequestSpec;
  /** Pids the CPU report names (the load generator is always one of them). */
  processes: Record<string, number>;
  /** The PostgreSQL database of the mode under test (distributed): its sessions' CPU is the scenario's. */
  database?: string;
  /**
   * For operations whose work goes on after the response (the POST's event, consumed by other
   * services): resolves once every operation that succeeded so far has been fully processed.
   * Awaited before each CPU window opens, so no earlier backlog is counted, and before it closes,
   * so the window holds each operation's whole cost. Given the successes of this scenario's
   * requests so far (probe and warm-up included).
   */
  drained?: (succeededSoFar: number) => Promise<void>;
  /** What the CPU window covers, for the report (defaults to the load alone). */
  windowCovers?: string;
}

/** One measured run: its own load, CPU window and figures. */
export interface MeasuredRun {
  /** Expected-status responses per second while the load ran. */
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Expected-status responses: the operations the CPU is divided by. */
  operations: number;
  /** Responses with any other status, by status. */
  unexpected: Record<string, number>;
  /** Connection errors and timeouts. */
  errors: number;
  total: number;
  cpu: CpuUsage | undefined;
  /** CPU ms per operation by group (`sum` is the headline), over the whole window. */
  cpuPerOperation: Record<string, number> | undefined;
  /** How long after the load's end the window closed (waiting for `drained`), ms. */
  drainMs: number;
}

/** The figures of a scenario: the median of its runs, with every run kept for ranges. */
export interface Measurement {
  mode: string;
  name: string;
  /** Median over the runs of expected-status responses per second. */
  requestsPerSecond: number;
  /** Medians over the runs. */
  p50: number;
  p99: number;
  /** Summed over the runs. */
  unexpected: Record<string, number>;
  errors: number;
  total: number;
  /** The run with the median CPU ms per operation (its per-process breakdown is the one shown). */
  medianRun: MeasuredRun;
  runs: MeasuredRun[];
  windowCovers: string;
}

/**
 * Runs a fixed number of requests rather than a fixed time: a duration run ends by cutting
 * connections with requests in flight, and counting whole requests keeps every response counted.
 * The guard only fires if the target stops answering.
 */
async function run(scenario: Scenario, connections: number, amount: number, guardSeconds: number): Promise<autocannon.Result> {
  const instance = autocannon({
    url: scenario.url,
    connections,
    amount: Math.max(amount, connections),
    timeout: 10,
    // the run's end is noticed at the next sample; autocannon's 1 s default would stretch short runs
    sampleInt: 10,
    title: `${scenario.mode} ${scenario.name}`,
    requests: [scenario.request],
  });
  const guard = setTimeout(() => instance.stop(), guardSeconds * 1000);
  try {
    return await instance;
  } finally {
    clearTimeout(guard);
  }
}

const rateOf = (result: autocannon.Result) =>
  Object.values(result.statusCodeStats).reduce((sum, stat) => sum + stat.count, 0) / Math.max(result.duration, 0.01);
const successesOf = (result: autocannon.Result, status: number) => result.statusCodeStats[String(status)]?.count ?? 0;

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The median over the runs of the summed CPU ms per operation; undefined when CPU was not sampled. */
export function medianCpuPerOperation(measurement: Measurement): number | undefined {
  const values = measurement.runs.flatMap((run) => (run.cpuPerOperation ? [run.cpuPerOperation.sum!] : []));
  return values.length ? median(values) : undefined;
}

/** The run whose CPU ms per operation is the median one (the first run when CPU was not sampled). */
function medianRunOf(runs: MeasuredRun[]): MeasuredRun {
  const sampled = runs.filter((candidate) => candidate.cpuPerOperation);
  if (sampled.length === 0) return runs[0]!;
  const sorted = [...sampled].sort((a, b) => a.cpuPerOperation!.sum! - b.cpuPerOperation!.sum!);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** A scenario past its probe and warm-up, ready for measured runs. */
export interface WarmLoad {
  scenario: Scenario;
  /** One measured run with its own CPU window. */
  runOnce(): Promise<MeasuredRun>;
  /** The scenario's figures from its measured runs. */
  summary(runs: MeasuredRun[]): Measurement;
}

/**
 * A probe and a warm-up (JIT, pools, caches) whose numbers are thrown away and which size the
 * measured runs to last about `durationSeconds` each.
 */
export async function warmUp(scenario: Scenario, settings: LoadSettings): Promise<WarmLoad> {
  const { connections } = settings;
  const probe = await run(scenario, connections, connections * 10, 60);
  let succeeded = successesOf(probe, scenario.expectStatus);
  let rate = rateOf(probe);
  if (settings.warmupSeconds > 0) {
    const warmup = await run(scenario, connections, Math.ceil(rate * settings.warmupSeconds), settings.warmupSeconds * 5 + 30);
    succeeded += successesOf(warmup, scenario.expectStatus);
    rate = rateOf(warmup);
  }
  return {
    scenario,
    async runOnce() {
      // the previous load's downstream work finishes outside every window
      await scenario.drained?.(succeeded);
      const before = cpuSnapshot();
      const result = await run(scenario, connections, Math.ceil(rate * settings.durationSeconds), settings.durationSeconds * 5 + 30);
      const loadEndedAt = performance.now();
      const counts = Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, stat]) => [status, stat.count]));
      const operations = counts[String(scenario.expectStatus)] ?? 0;
      succeeded += operations;
      await scenario.drained?.(succeeded);
      const drainMs = performance.now() - loadEndedAt;
      const after = cpuSnapshot();
      const cpu = cpuUsage(before, after, { loadgen: process.pid, ...scenario.processes }, scenario.database);
      return {
        requestsPerSecond: operations / result.duration,
        p50: result.latency.p50,
        p99: result.latency.p99,
        operations,
        unexpected: Object.fromEntries(Object.entries(counts).filter(([status]) => status !== String(scenario.expectStatus))),
        errors: result.errors,
        total: Object.values(counts).reduce((sum, count) => sum + count, 0),
        cpu,
        cpuPerOperation: cpu && msPerOperation(cpu, operations),
        drainMs,
      };
    },
    summary: (runs) => summarize(scenario, runs),
  };
}

function summarize(scenario: Scenario, runs: MeasuredRun[]): Measurement {
  const unexpected: Record<string, number> = {};
  for (const measuredRun of runs) for (const [status, count] of Object.entries(measuredRun.unexpected)) unexpected[status] = (unexpected[status] ?? 0) + count;
  return {
    mode: scenario.mode,
    name: scenario.name,
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    unexpected,
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    total: runs.reduce((sum, r) => sum + r.total, 0),
    medianRun: medianRunOf(runs),
    runs,
    windowCovers: scenario.windowCovers ?? 'the load alone (the work ends with the response)',
  };
}

/**
 * Scenarios measured in turns: each warmed up, then their measured runs alternate (A, B, A, B,
 * ...), `repeats` each. Scenarios that are compared with each other run this way, so the host's
 * speed, which drifts over minutes on a shared machine, weighs on both alike and each pair of
 * runs is a fair comparison. One scenario alone is measured in `repeats` runs back to back, the
 * warm-up shared: a second warm-up would only repeat the first.
 */
export async function measureInTurns(
  scenarios: Scenario[],
  settings: LoadSettings,
  onRun?: (scenario: Scenario, run: MeasuredRun, index: number) => void,
): Promise<Measurement[]> {
  const loads: WarmLoad[] = [];
  for (const scenario of scenarios) loads.push(await warmUp(scenario, settings));
  const runs = loads.map((): MeasuredRun[] => []);
  for (let index = 0; index < Math.max(1, settings.repeats); index++) {
    for (const [position, load] of loads.entries()) {
      const measuredRun = await load.runOnce();
      runs[position]!.push(measuredRun);
      onRun?.(load.scenario, measuredRun, index);
    }
  }
  return loads.map((load, position) => load.summary(runs[position]!));
}

/** One scenario: a probe and a warm-up, then `repeats` measured runs, each with its own CPU window. */
export async function measure(scenario: Scenario, settings: LoadSettings, onRun?: (run: MeasuredRun, index: number) => void): Promise<Measurement> {
  const [measurement] = await measureInTurns([scenario], settings, onRun && ((_scenario, measuredRun, index) => onRun(measuredRun, index)));
  return measurement!;
}

/** A new sku for every request, so every POST is a real insert and never a 409. */
export function createProductRequest(path: string, token: string): autocannon.RequestSpec {
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  let sequence = 0;
  return {
    method: 'POST',
    path,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    setupRequest(request) {
      sequence += 1;
      return { ...request, body: JSON.stringify({ sku: `bench-${run}-${sequence}`, title: `Bench product ${sequence}`, price: '19.99', currency: 'USD' }) };
    },
  };
}

/** `extraHeaders`: the gateway's credential, for a GET straight to a service's own port. */
export function getRequest(path: string, token?: string, extraHeaders: Record<string, string> = {}): autocannon.RequestSpec {
  return { method: 'GET', path, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extraHeaders } };
}
