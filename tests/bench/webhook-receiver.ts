import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The webhook endpoint of the delivery benchmark: answers at once (200, or 500 for a chosen share
 * of first attempts), keeps every connection alive, and notes for each request when it arrived and
 * how long after its event's `created_at` (the moment the state change was about to commit). It
 * runs as its own process so its CPU is counted apart from the service's and the load generator's;
 * it prints its port on the first line, and the benchmark reads its figures from `/_control/…`.
 */

const KIND = { first: 0, firstFailed: 1, retry: 2, duplicate: 3 } as const;

interface Phase {
  /** Share of first attempts answered 500, in percent; their retries are answered 200. */
  failPercent: number;
  /** Per request, in arrival order: arrival (ms since the epoch), event-to-arrival latency (ms), kind. */
  arrivedAt: number[];
  latencyMs: number[];
  kind: number[];
  /** Deliveries (webhook-id + path) answered 200 once. */
  succeeded: Set<string>;
  /** Deliveries whose first attempt was answered 500 and that have not been retried yet. */
  awaitingRetry: Set<string>;
  unparsable: number;
  /** First attempts so far (answered 200 or 500): what the publisher's backlog cap counts. */
  firstAttempts: number;
}

const newPhase = (failPercent = 0): Phase => ({
  failPercent,
  arrivedAt: [],
  latencyMs: [],
  kind: [],
  succeeded: new Set(),
  awaitingRetry: new Set(),
  unparsable: 0,
  firstAttempts: 0,
});
let phase = newPhase();

/** FNV-1a: a cheap, deterministic choice of the failing deliveries, the same on every run. */
function hashPercent(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return ((hash >>> 0) % 10_000) / 100;
}

const CREATED_AT = '"created_at":"';

function answer(response: ServerResponse, status: number, body = ''): void {
  response.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

function receiveWebhook(request: IncomingMessage, body: string, response: ServerResponse): void {
  const now = Date.now();
  const start = body.indexOf(CREATED_AT);
  const createdAt = start < 0 ? NaN : Date.parse(body.slice(start + CREATED_AT.length, start + CREATED_AT.length + 24));
  const key = `${String(request.headers['webhook-id'])} ${request.url}`;
  if (Number.isNaN(createdAt)) phase.unparsable += 1;
  let kind: number;
  let status = 200;
  if (phase.awaitingRetry.delete(key)) {
    kind = KIND.retry;
    phase.succeeded.add(key);
  } else if (phase.succeeded.has(key)) {
    kind = KIND.duplicate;
  } else if (phase.failPercent > 0 && hashPercent(key) < phase.failPercent) {
    kind = KIND.firstFailed;
    status = 500;
    phase.awaitingRetry.add(key);
  } else {
    kind = KIND.first;
    phase.succeeded.add(key);
  }
  if (kind === KIND.first || kind === KIND.firstFailed) phase.firstAttempts += 1;
  phase.arrivedAt.push(now);
  phase.latencyMs.push(now - createdAt);
  phase.kind.push(kind);
  answer(response, status, status === 200 ? 'ok' : 'failing on purpose');
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function latencySummary(values: number[]) {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: percentile(sorted, 100) };
}

/** What arrived between `from` and `to` (ms since the epoch), and the totals of the phase. */
function statistics(from: number, to: number) {
  const first: number[] = [];
  const retries: number[] = [];
  let requests = 0;
  let succeeded = 0;
  for (let i = 0; i < phase.arrivedAt.length; i++) {
    const at = phase.arrivedAt[i]!;
    if (at < from || at > to) continue;
    requests += 1;
    const kind = phase.kind[i]!;
    if (kind === KIND.first || kind === KIND.retry) succeeded += 1;
    if (kind === KIND.first || kind === KIND.firstFailed) first.push(phase.latencyMs[i]!);
    else if (kind === KIND.retry) retries.push(phase.latencyMs[i]!);
  }
  // successes per whole second of the window, to see whether the rate holds or decays
  const seconds = Math.floor((to - from) / 1000);
  const perSecond = Array.from({ length: seconds > 0 && seconds <= 3_600 ? seconds : 0 }, () => 0);
  for (let i = 0; i < phase.arrivedAt.length; i++) {
    const second = Math.floor((phase.arrivedAt[i]! - from) / 1000);
    const kind = phase.kind[i]!;
    if (second >= 0 && second < perSecond.length && (kind === KIND.first || kind === KIND.retry)) perSecond[second]! += 1;
  }
  const total = (kind: number) => phase.kind.reduce((sum, value) => sum + (value === kind ? 1 : 0), 0);
  return {
    window: { requests, succeeded, perSecond, firstAttempt: latencySummary(first), retry: latencySummary(retries) },
    totals: {
      requests: phase.arrivedAt.length,
      succeeded: phase.succeeded.size,
      failedFirstAttempts: total(KIND.firstFailed),
      retries: total(KIND.retry),
      duplicates: total(KIND.duplicate),
      awaitingRetry: phase.awaitingRetry.size,
      unparsable: phase.unparsable,
      firstArrivalAt: phase.arrivedAt[0] ?? null,
      lastArrivalAt: phase.arrivedAt[phase.arrivedAt.length - 1] ?? null,
    },
  };
}

function control(url: URL, response: ServerResponse): void {
  if (url.pathname === '/_control/reset') {
    phase = newPhase(Number(url.searchParams.get('fail_percent') ?? 0));
    answer(response, 204);
  } else if (url.pathname === '/_control/count') {
    // polled several times a second while load runs: the cheapest answer
    answer(
      response,
      200,
      JSON.stringify({
        requests: phase.arrivedAt.length,
        firstAttempts: phase.firstAttempts,
        succeeded: phase.succeeded.size,
        lastArrivalAt: phase.arrivedAt[phase.arrivedAt.length - 1] ?? null,
      }),
    );
  } else if (url.pathname === '/_control/stats') {
    const from = Number(url.searchParams.get('from') ?? 0);
    const to = Number(url.searchParams.get('to') ?? Number.MAX_SAFE_INTEGER);
    answer(response, 200, JSON.stringify(statistics(from, to)));
  } else {
    answer(response, 404);
  }
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
    if (request.url?.startsWith('/_control/')) control(new URL(request.url, 'http://receiver'), response);
    else receiveWebhook(request, body, response);
  });
});
// longer than the sender's 30 s keep-alive, so the sender is the side that closes idle connections
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
