import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { guardedLookup, policyHostname, refuseLiteralHost, type HostResolver, type TargetPolicy } from '@merx/kit';

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

    const url = URL.canParse(request.url) ? new URL(request.url) : null;
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return failure('connection', 'not an http or https URL');
    // net.connect does not call `lookup` for IP literals, so guardedLookup never sees them.
    const refusal = refuseLiteralHost(url.hostname, this.policy);
    if (refusal) return failure('blocked', refusal.message);

    // One timer for the whole exchange: undici's timeouts restart on every chunk, so a receiver
    // trickling a byte a second would otherwise hold a worker slot for ever.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.totalTimeoutMs);
    let statusCode: number | null = null;
    try {
      const response = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...DEFAULT_HEADERS, ...request.headers },
        body: request.body,
        signal: controller.signal,
      });
      statusCode = response.statusCode;
      const responseExcerpt = await readExcerpt(response.body, this.maxResponseBytes);
      const retryAfterMs = statusCode === 429 || statusCode === 503 ? parseRetryAfter(response.headers['retry-after']) : null;
      if (statusCode >= 200 && statusCode < 300) {
        return finish({ ok: true, statusCode, error: null, errorMessage: null, responseExcerpt, retryAfterMs });
      }
      const redirect = statusCode >= 300 && statusCode < 400 ? ' (redirects are not followed)' : '';
      return finish({ ok: false, statusCode, error: 'http', errorMessage: `HTTP ${statusCode}${redirect}`, responseExcerpt, retryAfterMs });
    } catch (error) {
      if (timedOut) return failure('timeout', `no complete response within ${this.totalTimeoutMs} ms`, statusCode);
      const { kind, message } = classifyFailure(error, { hostname: url.hostname, connectTimeoutMs: this.connectTimeoutMs });
      return failure(kind, message, statusCode);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits for requests in flight, then closes the kept-alive connections. */
  async close(): Promise<void> {
    await this.agent.close();
  }
}

/**
 * The first `limit` bytes of a body as text. The rest is not read: destroying the stream closes the
 * connection, so a receiver streaming megabytes costs us one chunk, not the download.
 */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    length += chunk.length;
    if (length >= limit) break; // leaving the loop destroys the stream
  }
  body.destroy();
  const bytes = Buffer.concat(chunks).subarray(0, limit);
  // When the body was cut, `stream: true` holds back a trailing half character instead of
  // decoding it to U+FFFD; invalid bytes elsewhere still become U+FFFD.
  const text = new TextDecoder().decode(bytes, { stream: length > limit });
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
