import { randomBytes } from 'node:crypto';
import { call, createMerchant, issueToken } from '../src/harness/client.js';
import { REDIS_URL } from '../src/harness/distributed.js';
import type { Stack } from '../src/harness/stack.js';
import { getRequest, median, type Measurement, type Scenario } from './load.js';
import { startDistributedMode, startEmbeddedMode, type RunningMode } from './processes.js';

export const LIMITER_SCENARIOS = {
  on: 'GET /api/v1/products/{id} via gateway, limiter on (budget never exhausted)',
  off: 'GET /api/v1/products/{id} via gateway, limiter off (MERX_THROTTLE=off)',
} as const;

const huge = { capacity: 1_000_000_000, refill_per_second: 1_000_000_000 };
const endless = { limit: 1_000_000_000, window_seconds: 3600 };
const HUGE_PLANS = JSON.stringify(
  Object.fromEntries(['sandbox', 'standard', 'scale'].map((plan) => [plan, { burst: huge, sustained: endless, writes: huge, sensitive: endless }])),
);

export interface LimiterBenchDeps {
  /** Starts a mode and registers its stop with the run's cleanups. */
  started<T extends RunningMode>(start: Promise<T>): Promise<T>;
  /** Warms each scenario up, then alternates their measured runs (load.ts measureInTurns). */
  measuredInTurns(entries: Array<{ scenario: Scenario; logs?: Record<string, string> }>, results: Measurement[]): Promise<void>;
  progress(text: string): void;
}

/**
 * The limiter's cost: the same GET through the gateway with every class counting (limits so
 * high they never refuse) and with MERX_THROTTLE=off, each on its own start of the mode.
 * Distributed: the gateway counts in Redis (one script per lease of units: lease-store.ts); embedded: in memory.
 *
 * Both starts run side by side and their runs alternate (on, off, on, off, ...). Measured one
 * setting after the other, the host's drift over those minutes read as the limiter's cost: one
 * run gave the catalog, which does the same work either way, 17 % more CPU per request with the
 * limiter on. The idle start costs the measured one little (its processes wait on sockets).
 */
export async function benchLimiter(name: 'embedded' | 'distributed', results: Measurement[], deps: LimiterBenchDeps): Promise<string> {
  const modes: RunningMode[] = [];
  const entries: Array<{ scenario: Scenario; logs: Record<string, string> }> = [];
  try {
    for (const setting of ['on', 'off'] as const) {
      const unique = randomBytes(5).toString('hex');
      const env: Record<string, string> = { MERX_THROTTLE: setting, MERX_THROTTLE_PLANS: HUGE_PLANS };
      // Its own deployment's Redis keys and queues, removed when the mode stops.
      if (name === 'distributed') Object.assign(env, { REDIS_URL });
      deps.progress(`${name} mode: starting with MERX_THROTTLE=${setting}`);
      const mode = await deps.started(name === 'embedded' ? startEmbeddedMode(env) : startDistributedMode(env));
      modes.push(mode);
      const stack = { baseUrl: mode.publicUrl, operatorToken: mode.operatorToken } as Stack;
      const token = mode.apiKey ? await issueToken(stack, mode.apiKey) : (await createMerchant(stack)).token;
      const created = await call(stack, 'POST', '/api/v1/products', {
        token,
        body: { sku: `bench-limiter-${unique}`, title: 'Read me', price: '19.99', currency: 'USD' },
      });
      if (created.status !== 201) throw new Error(`could not create the product to read: ${created.status} ${created.text}`);
      entries.push({
        scenario: {
          mode: name,
          name: LIMITER_SCENARIOS[setting],
          url: mode.gatewayUrl,
          expectStatus: 200,
          request: getRequest(`/api/v1/products/${created.body.id as string}`, token),
          processes: mode.processes,
          ...(mode.databaseName ? { database: mode.databaseName } : {}),
        },
        logs: mode.logs,
      });
    }
    const measuredBefore = results.length;
    await deps.measuredInTurns(entries, results);
    const [on, off] = results.slice(measuredBefore);
    const cost = limiterCost(on!, off!);
    const cpu = cost.cpu === undefined ? 'CPU not sampled' : `CPU per request ${signedPercent(cost.cpu)} (target < 10%: ${cost.cpu < 0.1 ? 'met' : 'not met'})`;
    return `Limiter cost, ${name} (median of ${on!.runs.length} pairs of runs, taken in turns): ${Math.round(on!.requestsPerSecond)} req/s with every class counting vs ${Math.round(off!.requestsPerSecond)} req/s with MERX_THROTTLE=off (${signedPercent(cost.throughput)}); ${cpu}.`;
  } finally {
    for (const mode of modes) await mode.stop();
  }
}

/** Each pair of runs, on then off, taken back to back: the CPU per request it added, as a fraction. */
export function pairedCosts(on: Measurement, off: Measurement): number[] {
  return on.runs.flatMap((run, index) => {
    const [cpuOn, cpuOff] = [run.cpuPerOperation?.sum, off.runs[index]?.cpuPerOperation?.sum];
    return cpuOn !== undefined && cpuOff ? [cpuOn / cpuOff - 1] : [];
  });
}

/**
 * What counting costs, as changes from off to on: CPU ms per request, the median of the pairs'
 * (the headline: work added per request), and req/s from the settings' medians (throughput,
 * which steal blurs).
 */
export function limiterCost(on: Measurement, off: Measurement): { cpu: number | undefined; throughput: number } {
  const costs = pairedCosts(on, off);
  return { cpu: costs.length ? median(costs) : undefined, throughput: on.requestsPerSecond / off.requestsPerSecond - 1 };
}

export const signedPercent = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(value * 100).toFixed(1)} %`;
