import { benchGrpc } from './grpc.js';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import path from 'node:path';
import { GATEWAY_CREDENTIAL_HEADER } from '@merx/kit';
import { call, createMerchant, issueToken } from '../src/harness/client.js';
import { repoRoot, tail } from '../src/harness/distributed.js';
import type { Stack } from '../src/harness/stack.js';
import { createProductRequest, getRequest, measureInTurns, type LoadSettings, type Measurement, type Scenario } from './load.js';
import { listeningPorts, startDistributedMode, startEmbeddedMode, startHelloServer, type RunningMode } from './processes.js';
import { measureAuditLag } from './audit-lag.js';
import { watchProductEventsInDatabase, watchProductEventsInProcess, type ProductEventsWatcher } from './drain.js';
import { benchLimiter } from './limiter.js';
import { summariseProfiles } from './profile.js';
import { renderReport, SCENARIOS, type Skipped } from './report.js';
import { benchWebhookDelivery, WEBHOOK_KNOBS, type WebhookMeasurement } from './webhook-delivery.js';
import { benchNeighbours, NEIGHBOUR_KNOBS, type NeighbourRow } from './neighbours.js';

/**
 * `npm run bench`: the bare Node ceiling, then the embedded and the distributed mode, each server
 * in its own process and autocannon in this one. Every scenario is measured BENCH_REPEATS times
 * (default 3) and reported as the median, CPU ms per operation first. Knobs: BENCH_DURATION,
 * BENCH_WARMUP (seconds), BENCH_REPEATS, BENCH_CONNECTIONS, BENCH_MODES (embedded,distributed), BENCH_SCENARIOS (hello,post,get,direct,limiter,webhooks,grpc,neighbours), BENCH_GRPC_ITEMS,
 * BENCH_CPU_PROF (folder for --cpu-prof; profile one scenario at a time to tell them apart),
 * BENCH_DB_POOL_SIZE (the distributed services' PostgreSQL pool; their default otherwise),
 * BENCH_PG_HOST (a socket folder such as /var/run/postgresql: PostgreSQL over a Unix socket),
 * BENCH_PG_OPTIONS (server options for the distributed services' PostgreSQL sessions, e.g. auto_explain);
 * the webhook scenario's own BENCH_WEBHOOK_* (webhook-delivery.ts) and the neighbours scenario's
 * BENCH_NEIGHBOUR_SAMPLES (neighbours.ts); all listed in BENCHMARKS.md.
 */
function positiveEnv(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
}

const settings: LoadSettings = {
  connections: positiveEnv('BENCH_CONNECTIONS', 50),
  durationSeconds: positiveEnv('BENCH_DURATION', 10),
  warmupSeconds: positiveEnv('BENCH_WARMUP', 3),
  repeats: Math.max(1, Math.round(positiveEnv('BENCH_REPEATS', 3))),
};
const list = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',').map((item) => item.trim());
const modes = list('BENCH_MODES', 'embedded,distributed').map((mode) => {
  if (mode !== 'embedded' && mode !== 'distributed') throw new Error(`BENCH_MODES lists ${mode}; embedded and distributed exist`);
  return mode;
});
const scenarios = new Set(list('BENCH_SCENARIOS', 'hello,post,get,direct,limiter,webhooks,grpc,neighbours'));
const profileDir = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined;

const cleanups: Array<() => Promise<void>> = [];
async function cleanUp(): Promise<void> {
  while (cleanups.length) await cleanups.pop()!().catch((error: unknown) => process.stderr.write(`cleanup failed: ${String(error)}\n`));
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping the servers\n`);
    void cleanUp().finally(() => process.exit(130));
  });
}

/** Registers a stop with the cleanups; the stop returned runs once, however often it is called. */
function track(stopOnce: () => Promise<void>): () => Promise<void> {
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await stopOnce();
  };
  cleanups.push(stop);
  return stop;
}

/** Starts a mode and registers its stop, so a failure anywhere later still stops it. */
async function started<T extends RunningMode>(start: Promise<T>): Promise<T> {
  const mode = await start;
  return { ...mode, stop: track(() => mode.stop()) };
}

const progress = (text: string) => process.stderr.write(`${text}\n`);
/** The spine scenarios measure without throttling; the limiter scenarios measure its cost on its own. */
const SPINE_ONLY = { MERX_THROTTLE: 'off' };
/** Lines the report adds under Notes (the audit service's pace). */
const auditNotes: string[] = [];

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Measures scenarios in turns (load.ts measureInTurns; one scenario: its runs back to back). A
 * server that died under load makes every later figure meaningless: stop there, with its log.
 */
async function measuredInTurns(entries: Array<{ scenario: Scenario; logs?: Record<string, string> }>, results: Measurement[]): Promise<void> {
  progress(`  ${entries.map(({ scenario }) => `${scenario.mode}: ${scenario.name}`).join(', in turns with ')}`);
  const measurements = await measureInTurns(
    entries.map(({ scenario }) => scenario),
    settings,
    (scenario, run, index) => {
      const cpu = run.cpuPerOperation ? `${run.cpuPerOperation.sum!.toFixed(3)} CPU ms/op (steal ${run.cpuPerOperation.steal!.toFixed(3)}), ` : '';
      const drain = scenario.drained ? `, drained ${Math.round(run.drainMs)} ms after the load` : '';
      const which = entries.length > 1 ? ` of ${scenario.name}` : '';
      progress(
        `    run ${index + 1}/${settings.repeats}${which}: ${cpu}${Math.round(run.requestsPerSecond)} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms${drain}`,
      );
    },
  );
  for (const { scenario, logs = {} } of entries) {
    for (const [name, pid] of Object.entries(scenario.processes)) {
      if (!isAlive(pid)) throw new Error(`${name} (pid ${pid}) died during "${scenario.name}":\n${logs[name] ? tail(logs[name]) : '(no log)'}`);
    }
  }
  results.push(...measurements);
}

const measured = (scenario: Scenario, results: Measurement[], logs: Record<string, string> = {}) => measuredInTurns([{ scenario, logs }], results);

/** The client helpers need only the public origin and the operator credential. */
const stackOf = (mode: RunningMode) => ({ baseUrl: mode.publicUrl, operatorToken: mode.operatorToken }) as Stack;

async function createProduct(mode: RunningMode, token: string): Promise<string> {
  const response = await call(stackOf(mode), 'POST', '/api/v1/products', {
    token,
    body: { sku: `bench-get-${Date.now()}`, title: 'Read me', price: '19.99', currency: 'USD' },
  });
  if (response.status !== 201) throw new Error(`could not create the product to read: ${response.status} ${response.text}`);
  return response.body.id as string;
}

/** A service's own port answers its API only to the gateway's credential: the direct scenario presents it as the gateway does. */
const vouched = (mode: RunningMode) => ({ [GATEWAY_CREDENTIAL_HEADER]: mode.serviceToken });

/** The embedded catalog listens on an ephemeral port: the one of the process's ports that serves the product. */
async function findEmbeddedCatalog(mode: RunningMode, productPath: string, token: string): Promise<string | undefined> {
  const gatewayPort = Number(new URL(mode.gatewayUrl).port);
  let ports: number[];
  try {
    ports = listeningPorts(mode.processes.merx!);
  } catch {
    return undefined;
  }
  for (const port of ports.filter((candidate) => candidate !== gatewayPort)) {
    const url = `http://127.0.0.1:${port}`;
    const response = await fetch(`${url}${productPath}`, { headers: { authorization: `Bearer ${token}`, ...vouched(mode) } }).catch(() => undefined);
    const text = (await response?.text()) ?? '';
    if (response?.status === 200 && text.includes(productPath.split('/').pop()!)) return url;
  }
  return undefined;
}

/** How the POST scenario knows its products' events have been consumed: the database, or the embedded process's bus counters. */
async function watchProductEvents(mode: RunningMode & { databaseUrl?: string }, productsBefore: number): Promise<ProductEventsWatcher> {
  if (mode.databaseUrl) return watchProductEventsInDatabase(mode.databaseUrl);
  if (mode.adminUrl) return watchProductEventsInProcess(mode.adminUrl, productsBefore);
  throw new Error('the mode offers neither its database nor its admin listener: the POST window could not wait for its consumers');
}

async function benchMode(name: 'embedded' | 'distributed', results: Measurement[], skipped: Skipped[]): Promise<void> {
  progress(`${name} mode: starting`);
  const mode = await started<RunningMode & { catalogUrl?: string; databaseUrl?: string }>(
    name === 'embedded' ? startEmbeddedMode(SPINE_ONLY) : startDistributedMode(SPINE_ONLY),
  );
  try {
    // embedded: the sandbox key `npm start` wrote to dev.json; distributed: a merchant made through the operator API
    const token = mode.apiKey ? await issueToken(stackOf(mode), mode.apiKey) : (await createMerchant(stackOf(mode))).token;
    const productPath = `/api/v1/products/${await createProduct(mode, token)}`;
    const catalogUrl = name === 'embedded' ? await findEmbeddedCatalog(mode, productPath, token) : mode.catalogUrl;
    const base = { mode: name, processes: mode.processes, ...(mode.databaseName ? { database: mode.databaseName } : {}) };
    if (scenarios.has('post')) {
      // one product so far: the one the GETs read
      const events = await watchProductEvents(mode, 1);
      try {
        await measured(
          {
            ...base,
            name: SCENARIOS.post,
            url: mode.gatewayUrl,
            expectStatus: 201,
            request: createProductRequest('/api/v1/products', token),
            drained: events.drained,
            windowCovers: events.covers,
          },
          results,
          mode.logs,
        );
      } finally {
        await events.close();
      }
      if (mode.databaseUrl) {
        const post = results[results.length - 1]!;
        // the window already waited for audit; the catch-up is counted from the last run's end of load
        const lastRun = post.runs[post.runs.length - 1]!;
        const lag = await measureAuditLag(mode.databaseUrl, new Date(Date.now() - lastRun.drainMs));
        // Keeping up means no backlog: every entry lands within a second of its event and none is left when the load stops.
        const keepsUp = lag.lagP99Ms < 1_000 && lag.catchUpMs < 1_000;
        auditNotes.push(
          `Audit under the ${name} POST load (${Math.round(post.requestsPerSecond)} products/s): ${lag.entries} entries, ${Math.round(lag.entriesPerSecond)} entries/s averaged from first to last (pauses between warm-up and measurement included), ` +
            `lag behind the event p50 ${Math.round(lag.lagP50Ms)} ms, p99 ${Math.round(lag.lagP99Ms)} ms, caught up ${Math.round(lag.catchUpMs)} ms after the load ended ` +
            `(target: keeps up, lag p99 < 1 s: ${keepsUp ? 'met' : 'not met'}).`,
        );
        progress(`    ${auditNotes[auditNotes.length - 1]}`);
      }
    }
    if (scenarios.has('get'))
      await measured(
        { ...base, name: SCENARIOS.getGateway, url: mode.gatewayUrl, expectStatus: 200, request: getRequest(productPath, token) },
        results,
        mode.logs,
      );
    if (scenarios.has('direct') && catalogUrl) {
      await measured(
        { ...base, name: SCENARIOS.getDirect, url: catalogUrl, expectStatus: 200, request: getRequest(productPath, token, vouched(mode)) },
        results,
        mode.logs,
      );
    } else if (scenarios.has('direct')) {
      skipped.push({ mode: name, name: SCENARIOS.getDirect, reason: 'the catalog port could not be found (needs /proc)' });
    }
  } finally {
    progress(`${name} mode: stopping`);
    await mode.stop();
  }
}

function nproc(): number {
  try {
    return Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    return availableParallelism();
  }
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadAverageAtStart = loadavg();
  const results: Measurement[] = [];
  const webhooks: WebhookMeasurement[] = [];
  const neighbours: NeighbourRow[] = [];
  const skipped: Skipped[] = [];
  const notes: string[] = [];
  if (profileDir) {
    rmSync(profileDir, { recursive: true, force: true });
    notes.push(
      `Services ran under \`--cpu-prof\` (BENCH_CPU_PROF=${path.relative(repoRoot, profileDir)}); profiling slows them, so these figures are not the headline ones.`,
    );
  }

  if (scenarios.has('hello')) {
    progress('ceiling: bare node:http hello server');
    const hello = await startHelloServer();
    cleanups.push(hello.stop);
    await measured(
      { mode: 'node:http', name: SCENARIOS.hello, url: hello.url, expectStatus: 200, request: getRequest('/'), processes: { hello: hello.pid } },
      results,
    );
    await cleanups.pop()!();
  }

  const runsMode = ['post', 'get', 'direct'].some((scenario) => scenarios.has(scenario));
  for (const name of modes) {
    if (runsMode) await benchMode(name, results, skipped);
    if (scenarios.has('limiter')) notes.push(await benchLimiter(name, results, { started, measuredInTurns, progress }));
    // Distributed only: the issue's targets are for it, and on PGlite 20,000 items take minutes.
    if (scenarios.has('grpc') && name === 'distributed') {
      const restPostPerSecond = results.find((result) => result.mode === name && result.name === SCENARIOS.post)?.requestsPerSecond;
      notes.push(...(await benchGrpc(name, { started, progress, restPostPerSecond })));
    }
    if (scenarios.has('webhooks')) {
      const delivery = await benchWebhookDelivery(name, settings, { started, track, progress });
      webhooks.push(...delivery.measurements);
      notes.push(...delivery.notes);
    }
    if (scenarios.has('neighbours')) neighbours.push(...(await benchNeighbours(name, { progress, track })));
  }
  notes.push(...auditNotes);

  const knobs = [
    'BENCH_DURATION',
    'BENCH_WARMUP',
    'BENCH_REPEATS',
    'BENCH_CONNECTIONS',
    'BENCH_MODES',
    'BENCH_SCENARIOS',
    'BENCH_GRPC_ITEMS',
    'BENCH_CPU_PROF',
    'BENCH_DB_POOL_SIZE',
    'BENCH_PG_HOST',
    'BENCH_PG_OPTIONS',
    ...WEBHOOK_KNOBS,
    ...NEIGHBOUR_KNOBS,
  ];
  const command = [...knobs.filter((knob) => process.env[knob]).map((knob) => `${knob}=${process.env[knob]}`), 'npm run bench'].join(' ');
  let report = renderReport({ startedAt, command, settings, nproc: nproc(), loadAverageAtStart, measurements: results, webhooks, neighbours, skipped, notes });
  if (profileDir) report += ['', '## CPU profiles', '', ...summariseProfiles(profileDir)].join('\n');
  process.stdout.write(report);
  const out = path.join(repoRoot, 'bench-results');
  mkdirSync(out, { recursive: true });
  writeFileSync(path.join(out, 'latest.md'), report);
  progress(`written to ${path.relative(process.cwd(), path.join(out, 'latest.md')) || 'bench-results/latest.md'}`);
}

try {
  await main();
} catch (error) {
  process.exitCode = 1;
  process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
} finally {
  await cleanUp();
}
