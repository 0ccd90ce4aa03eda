import { performance } from 'node:perf_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, type Dispatcher } from 'undici';
import { guardedLookup, KeptValues, policyHostname, refuseLiteralHost, type HostResolver, type TargetPolicy } from '@merx/kit';

/**
 * The HTTP transport of the delivery engine: one POST, one outcome. It never throws for anything
 * the network or the receiver does; every failure becomes a classified outcome the retry logic
 * and the attempt log understand.
 */

export type SendFailure = 'timeout' | 'dns' | 'connection' | 'http' | 'blocked';

export interface SendOutcome {
  /** A 2xx arrived, and the response (up to the excerpt limit) was read, within the total timeout. */
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  error: SendFailure | null;
  /** One short line for the attempt log; never a stack. */
  errorMessage: string | null;
  /** The first bytes of the response body as UTF-8 text; null when no response arrived. */
  responseExcerpt: string | null;
  /** The receiver's Retry-After on 429 and 503, in ms; null otherwise. */
  retryAfterMs: number | null;
}

export interface WebhookSenderOptions {
  /** Where requests may go; `requireHttps` only matters when a URL is saved and is ignored here. */
  policy: TargetPolicy;
  connectTimeoutMs?: number;
  /** From the first byte sent to the last byte of the excerpt read. */
  totalTimeoutMs?: number;
  lookup?: HostResolver;
  maxResponseBytes?: number;
  connectionsPerOrigin?: number;
}

const DEFAULT_HEADERS = { 'content-type': 'application/json', 'user-agent': 'Merx-Webhooks/1' };
const KEEP_ALIVE_MS = 30_000;
const MAX_MESSAGE_LENGTH = 200;

export class WebhookSender {
  private readonly agent: Agent;
  private readonly policy: TargetPolicy;
  private readonly connectTimeoutMs: number;
  private readonly totalTimeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly targets = new KeptValues<string, Target | { refused: SendFailure; message: string }>(KEPT_TARGETS);

  constructor(options: WebhookSenderOptions) {
    this.policy = options.policy;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.totalTimeoutMs = options.totalTimeoutMs ?? 15_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 4_096;
    // One agent for every endpoint: keep-alive saves a TCP and TLS handshake per webhook to busy
    // receivers. undici 7 follows no redirects unless the redirect interceptor is composed, which
    // is what we want: a 3xx could point anywhere, so it is reported as a failure.
    this.agent = new Agent({
      keepAliveTimeout: KEEP_ALIVE_MS,
      connections: options.connectionsPerOrigin ?? 10,
      // undici's own timers only back up the total timeout below, so they are set not to fire first.
      headersTimeout: this.totalTimeoutMs + 1_000,
      bodyTimeout: this.totalTimeoutMs + 1_000,
      connect: { timeout: this.connectTimeoutMs, lookup: guardedLookup(this.policy, options.lookup) },
    });
  }

  async send(request: { url: string; headers: Record<string, string>; body: string }): Promise<SendOutcome> {
    const startedAt = performance.now();
    const finish = (outcome: Omit<SendOutcome, 'durationMs'>): SendOutcome => ({
      ...outcome,
      durationMs: Math.round(performance.now() - startedAt),
    });
    const failure = (error: SendFailure, errorMessage: string, statusCode: number | null = null) =>
      finish({ ok: false, statusCode, error, errorMessage, responseExcerpt: null, retryAfterMs: null });

    const url = this.targetOf(request.url);
    if ('refused' in url) return failure(url.refused, url.message);

    return new Promise<SendOutcome>((resolve) => {
      const classify = (error: unknown) => classifyFailure(error, { hostname: url.hostname, connectTimeoutMs: this.connectTimeoutMs });
      const exchange = new Exchange(this.maxResponseBytes, classify, (outcome) => {
        clearTimeout(timer);
        resolve(finish(outcome));
      });
      // One timer for the whole exchange: undici's timeouts restart on every chunk, so a receiver
      // trickling a byte a second would otherwise hold a worker slot for ever.
      const timer = setTimeout(() => exchange.timeOut(`no complete response within ${this.totalTimeoutMs} ms`), this.totalTimeoutMs);
      // dispatch rather than request(): the response is read by the handler below, without a
      // stream, an async iterator or an AbortSignal per attempt.
      this.agent.dispatch(
        {
          origin: url.origin,
          path: url.path,
          method: 'POST',
          headers: { ...DEFAULT_HEADERS, ...request.headers },
          body: request.body,
        },
        exchange,
      );
    });
  }

  /**
   * Where a URL sends a request, or why it may not: parsed and checked once per URL, since an
   * endpoint's URL is the same for all its deliveries. The policy is fixed for the sender's life.
   */
  private targetOf(text: string): Target | { refused: SendFailure; message: string } {
    return this.targets.get(text, (url) => parseTarget(url, this.policy));
  }

  /** Waits for requests in flight, then closes the kept-alive connections. */
  async close(): Promise<void> {
    await this.agent.close();
  }
}

type Outcome = Omit<SendOutcome, 'durationMs'>;

interface Target {
  origin: string;
  path: string;
  hostname: string;
}

/** URLs whose parse and check are kept (the oldest goes first): far more than the endpoints one worker sends to at once. */
const KEPT_TARGETS = 4_096;

function parseTarget(text: string, policy: TargetPolicy): Target | { refused: SendFailure; message: string } {
  const url = URL.canParse(text) ? new URL(text) : null;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return { refused: 'connection', message: 'not an http or https URL' };
  // net.connect does not call `lookup` for IP literals, so guardedLookup never sees them.
  const refusal = refuseLiteralHost(url.hostname, policy);
  if (refusal) return { refused: 'blocked', message: refusal.message };
  return { origin: url.origin, path: `${url.pathname}${url.search}`, hostname: url.hostname };
}

/**
 * One request's side of undici's dispatch: it keeps the status, the Retry-After and the first
 * bytes of the body, and settles once with what the attempt log needs. The rest of a long body is
 * not read: aborting closes the connection, so a receiver streaming megabytes costs us one chunk,
 * not the download.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private settled = false;
  private timedOut: string | undefined;
  private statusCode: number | null = null;
  private retryAfterMs: number | null = null;
  private readonly chunks: Buffer[] = [];
  private received = 0;

  constructor(
    private readonly limit: number,
    private readonly classify: (error: unknown) => { kind: SendFailure; message: string },
    private readonly settle: (outcome: Outcome) => void,
  ) {}

  /** The total timeout ran out: whatever undici is doing for this request stops. */
  timeOut(message: string): void {
    this.timedOut = message;
    this.finish({ ok: false, statusCode: this.statusCode, error: 'timeout', errorMessage: message, responseExcerpt: null, retryAfterMs: null });
    this.controller?.abort(new Error(message));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Timed out while waiting for a connection: nothing is sent.
    if (this.timedOut !== undefined) controller.abort(new Error(this.timedOut));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.statusCode = statusCode;
    if (statusCode === 429 || statusCode === 503) this.retryAfterMs = parseRetryAfter(headers['retry-after']);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.chunks.push(chunk);
    this.received += chunk.length;
    if (this.received < this.limit) return;
    this.answered();
    controller.abort(new Error('the excerpt of the response is read'));
  }

  onResponseEnd(): void {
    this.answered();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    const { kind, message } = this.classify(error);
    this.finish({ ok: false, statusCode: this.statusCode, error: kind, errorMessage: message, responseExcerpt: null, retryAfterMs: null });
  }

  /** The response, or its first `limit` bytes, has arrived. */
  private answered(): void {
    const statusCode = this.statusCode!;
    const responseExcerpt = excerptOf(this.chunks, this.received, this.limit);
    if (statusCode >= 200 && statusCode < 300) {
      this.finish({ ok: true, statusCode, error: null, errorMessage: null, responseExcerpt, retryAfterMs: this.retryAfterMs });
      return;
    }
    const redirect = statusCode >= 300 && statusCode < 400 ? ' (redirects are not followed)' : '';
    this.finish({ ok: false, statusCode, error: 'http', errorMessage: `HTTP ${statusCode}${redirect}`, responseExcerpt, retryAfterMs: this.retryAfterMs });
  }

  private finish(outcome: Outcome): void {
    if (this.settled) return;
    this.settled = true;
    this.settle(outcome);
  }
}

/** The first `limit` bytes of a body as text. */
function excerptOf(chunks: Buffer[], received: number, limit: number): string {
  if (received === 0) return '';
  const bytes = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).subarray(0, limit);
  // When the body was cut, `stream: true` holds back a trailing half character instead of
  // decoding it to U+FFFD; invalid bytes elsewhere still become U+FFFD.
  const text = new TextDecoder().decode(bytes, { stream: received > limit });
  return text.replaceAll('\u0000', '\ufffd');
}

/** Retry-After as delta-seconds or an HTTP-date, in ms from now; null when absent or unparsable. */
export function parseRetryAfter(header: string | string[] | undefined, now = Date.now()): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1_000;
  // Only real dates: Date.parse also accepts things like "1" or "2024", which are not HTTP-dates.
  if (!/[a-z]/i.test(value)) return null;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'ENODATA']);

/** The errno-style code of an error, looking through undici's causes and Node's AggregateError. */
function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 5; depth += 1) {
    const { code, cause, errors } = current as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string') return code;
    current = cause ?? (Array.isArray(errors) ? errors[0] : undefined);
  }
  return undefined;
}

/** The first line of an error's message (AggregateError's own message is often empty), shortened. */
function shortMessage(error: unknown): string {
  const candidates = [error, (error as { errors?: unknown[] })?.errors?.[0], (error as { cause?: unknown })?.cause];
  const text = candidates.map((candidate) => (candidate instanceof Error ? candidate.message : '')).find(Boolean) ?? String(error);
  return shorten(text.split('\n')[0]!.trim());
}

function shorten(line: string): string {
  return line.length > MAX_MESSAGE_LENGTH ? `${line.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : line;
}

/** Sorts a network error into the kinds the attempt log shows. */
export function classifyFailure(error: unknown, context: { hostname: string; connectTimeoutMs: number }): { kind: SendFailure; message: string } {
  const code = errorCode(error);
  if (code === 'EMERX_BLOCKED_ADDRESS') return { kind: 'blocked', message: shortMessage(error) };
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') {
    return { kind: 'timeout', message: `could not connect within ${context.connectTimeoutMs} ms` };
  }
  if (code && TIMEOUT_CODES.has(code)) return { kind: 'timeout', message: shortMessage(error) };
  if (code && DNS_CODES.has(code)) {
    return { kind: 'dns', message: `could not resolve ${policyHostname(context.hostname)} (${code})` };
  }
  const message = shortMessage(error);
  return { kind: 'connection', message: shorten(code && !message.includes(code) ? `${code}: ${message}` : message) };
}
