import autocannon from 'autocannon';
import { cpuShare, cpuSnapshot, type CpuShare } from './cpu.js';

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
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
}

export interface Measurement {
  mode: string;
  name: string;
  /** Expected-status responses per second over the measured window. */
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Responses with any other status, by status. */
  unexpected: Record<string, number>;
  /** Connection errors and timeouts. */
  errors: number;
  total: number;
  cpu: CpuShare | undefined;
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

/**
 * A warm-up (JIT, pools, caches) whose numbers are thrown away and which sizes the measured run
 * to last about `durationSeconds`; CPU is sampled around the measured run only.
 */
export async function measure(scenario: Scenario, settings: LoadSettings): Promise<Measurement> {
  const { connections } = settings;
  const probe = await run(scenario, connections, connections * 10, 60);
  let rate = rateOf(probe);
  if (settings.warmupSeconds > 0) rate = rateOf(await run(scenario, connections, Math.ceil(rate * settings.warmupSeconds), settings.warmupSeconds * 5 + 30));
  const before = cpuSnapshot();
  const result = await run(scenario, connections, Math.ceil(rate * settings.durationSeconds), settings.durationSeconds * 5 + 30);
  const after = cpuSnapshot();
  const counts = Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, stat]) => [status, stat.count]));
  const successes = counts[String(scenario.expectStatus)] ?? 0;
  const unexpected = Object.fromEntries(Object.entries(counts).filter(([status]) => status !== String(scenario.expectStatus)));
  return {
    mode: scenario.mode,
    name: scenario.name,
    requestsPerSecond: successes / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    unexpected,
    errors: result.errors,
    total: Object.values(counts).reduce((sum, count) => sum + count, 0),
    cpu: cpuShare(before, after, { loadgen: process.pid, ...scenario.processes }),
  };
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

export function getRequest(path: string, token?: string): autocannon.RequestSpec {
  return { method: 'GET', path, headers: token ? { authorization: `Bearer ${token}` } : {} };
}
