import { randomBytes } from 'node:crypto';
import { call, createMerchant, issueToken } from '../src/harness/client.js';
import { REDIS_URL } from '../src/harness/distributed.js';
import type { Stack } from '../src/harness/stack.js';
import { getRequest, medianCpuPerOperation, type Measurement, type Scenario } from './load.js';
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
  measured(scenario: Scenario, results: Measurement[], logs?: Record<string, string>): Promise<void>;
  progress(text: string): void;
}

/**
 * The limiter's cost: the same GET through the gateway with every class counting (limits so
 * high they never refuse) and with MERX_THROTTLE=off, each on a fresh start of the mode.
 * Distributed: the gateway counts in Redis (one script per lease of units: lease-store.ts); embedded: in memory.
 */
export async function benchLimiter(name: 'embedded' | 'distributed', results: Measurement[], deps: LimiterBenchDeps): Promise<string> {
  const measurements: Partial<Record<'on' | 'off', Measurement>> = {};
  for (const setting of ['on', 'off'] as const) {
    const unique = randomBytes(5).toString('hex');
    const env: Record<string, string> = { MERX_THROTTLE: setting, MERX_THROTTLE_PLANS: HUGE_PLANS };
    // Its own deployment's Redis keys and queues, removed when the mode stops.
    if (name === 'distributed') Object.assign(env, { REDIS_URL });
    deps.progress(`${name} mode: starting with MERX_THROTTLE=${setting}`);
    const mode = await deps.started(name === 'embedded' ? startEmbeddedMode(env) : startDistributedMode(env));
    try {
      const stack = { baseUrl: mode.publicUrl, operatorToken: mode.operatorToken } as Stack;
      const token = mode.apiKey ? await issueToken(stack, mode.apiKey) : (await createMerchant(stack)).token;
      const created = await call(stack, 'POST', '/api/v1/products', {
        token,
        body: { sku: `bench-limiter-${unique}`, title: 'Read me', price: '19.99', currency: 'USD' },
      });
      if (created.status !== 201) throw new Error(`could not create the product to read: ${created.status} ${created.text}`);
      const path = `/api/v1/products/${created.body.id as string}`;
      await deps.measured(
        {
          mode: name,
          name: LIMITER_SCENARIOS[setting],
          url: mode.gatewayUrl,
          expectStatus: 200,
          request: getRequest(path, token),
          processes: mode.processes,
          ...(mode.databaseName ? { database: mode.databaseName } : {}),
        },
        results,
        mode.logs,
      );
      measurements[setting] = results[results.length - 1]!;
    } finally {
      await mode.stop();
    }
  }
  const cost = limiterCost(measurements.on!, measurements.off!);
  const cpu = cost.cpu === undefined ? 'CPU not sampled' : `CPU per request ${signedPercent(cost.cpu)} (target < 10%: ${cost.cpu < 0.1 ? 'met' : 'not met'})`;
  return `Limiter cost, ${name} (medians of ${measurements.on!.runs.length} runs): ${Math.round(measurements.on!.requestsPerSecond)} req/s with every class counting vs ${Math.round(measurements.off!.requestsPerSecond)} req/s with MERX_THROTTLE=off (${signedPercent(cost.throughput)}); ${cpu}.`;
}

/**
 * What counting costs, from the medians of both settings, as changes from off to on: CPU ms per
 * request (the headline: work added per request) and req/s (throughput, which steal blurs).
 */
export function limiterCost(on: Measurement, off: Measurement): { cpu: number | undefined; throughput: number } {
  const [cpuOn, cpuOff] = [medianCpuPerOperation(on), medianCpuPerOperation(off)];
  return { cpu: cpuOn !== undefined && cpuOff ? cpuOn / cpuOff - 1 : undefined, throughput: on.requestsPerSecond / off.requestsPerSecond - 1 };
}

export const signedPercent = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(value * 100).toFixed(1)} %`;
