import { randomUUID } from 'node:crypto';
import { ConnectionError, MerxError, TimeoutError, type ProblemDocument } from './errors.js';
import type { RequestOptions, ResponseMeta } from './options.js';
import { Page, PagePromise, type ListAnswer, type ListParams } from './pagination.js';
import type { TokenCache } from './tokens.js';
import type { GrpcConnection } from '../grpc/connection.js';
import { VERSION } from '../version.js';

/** What goes in `Authorization: Bearer`: access tokens of an API key, or the operator's static token. */
export type Credentials = { kind: 'oauth'; tokens: TokenCache } | { kind: 'static'; token: string };

export interface RequestorSettings {
  baseUrl: string;
  credentials: Credentials;
  /** Milliseconds per attempt. */
  timeout: number;
  maxRetries: number;
  defaultHeaders: Record<string, string>;
  fetch: typeof fetch;
  /** The gRPC port of an API key client, for the gRPC helpers; none for the operator's client. */
  grpc?: GrpcConnection | undefined;
}

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: object | undefined;
  body?: unknown;
  /** `form` for the token endpoint (application/x-www-form-urlencoded). */
  encoding?: 'json' | 'form';
  /** False for the operations that take no credentials (health, the token endpoint itself). */
  authenticated?: boolean;
  options?: RequestOptions | undefined;
}

export interface ApiAnswer {
  /** The parsed JSON, the text of a non-JSON answer, or undefined for 204. */
  body: unknown;
  meta: ResponseMeta;
}

const MAX_BACKOFF_MS = 8_000;
const MAX_RETRY_AFTER_MS = 60_000;
const USER_AGENT = `merx-node/${VERSION} node/${process.versions.node}`;

/**
 * Sends one API call: builds the request (auth, User-Agent, Idempotency-Key, If-Match), retries
 * what is safe to retry with exponential backoff and jitter (honouring Retry-After), refreshes
 * the token once on a 401 and turns error answers into the MerxError of their status.
 */
export class Requestor {
  private readonly debug = (process.env.MERX_LOG ?? '').toLowerCase() === 'debug';

  constructor(private readonly settings: RequestorSettings) {}

  get grpc(): GrpcConnection | undefined {
    return this.settings.grpc;
  }

  async request(call: ApiRequest): Promise<ApiAnswer> {
    const options = call.options ?? {};
    const maxRetries = options.maxRetries ?? this.settings.maxRetries;
    const timeout = options.timeout ?? this.settings.timeout;
    // One key for every attempt: a create retried after a lost answer is replayed by the server, not repeated.
    const idempotencyKey = options.idempotencyKey ?? (call.method === 'POST' ? randomUUID() : undefined);
    const url = this.settings.baseUrl + call.path + encodeQuery(call.query);
    const authenticated = call.authenticated !== false;
    let refreshedToken = false;
    for (let attempt = 0; ; attempt += 1) {
      const token = authenticated ? await this.bearerToken() : undefined;
      const headers = this.headersFor(call, options, idempotencyKey, token);
      const started = Date.now();
      const timeoutSignal = AbortSignal.timeout(timeout);
      const signal = options.signal ? AbortSignal.any([options.signal, timeoutSignal]) : timeoutSignal;
      let response: Response;
      let text: string;
      try {
        response = await this.settings.fetch(url, { method: call.method, headers, body: encodeBody(call), signal });
        text = await response.text();
      } catch (cause) {
        if (options.signal?.aborted) throw cause; // the caller cancelled: not ours to retry
        const timedOut = timeoutSignal.aborted;
        this.log(call, undefined, started, undefined, attempt, timedOut ? 'timeout' : describe(cause));
        if (attempt < maxRetries) {
          await pause(backoff(attempt), options.signal);
          continue;
        }
        const message = `${call.method} ${call.path} ${timedOut ? `timed out after ${timeout} ms` : `got no answer: ${describe(cause)}`}`;
        throw timedOut ? new TimeoutError(message, { cause }) : new ConnectionError(message, { cause });
      }
      const meta = metaOf(response);
      this.log(call, response.status, started, meta.requestId, attempt, undefined);
      if (response.status < 400) return { body: parseBody(response, text, meta), meta };

      if (response.status === 401 && token !== undefined && !refreshedToken && this.settings.credentials.kind === 'oauth') {
        // The token expired early or was revoked server side: one fresh token, one more try.
        refreshedToken = true;
        this.settings.credentials.tokens.invalidate(token);
        attempt -= 1;
        continue;
      }
      const problem = problemOf(text);
      const wait = retryAfterMs(meta.headers);
      // A wait longer than a minute (a sustained throttle window) is not sat out inside the call:
      // the RateLimitError says how long, and the caller decides.
      if (attempt < maxRetries && retryable(response.status, problem) && !(wait !== undefined && wait > MAX_RETRY_AFTER_MS)) {
        await pause(wait ?? backoff(attempt), options.signal);
        continue;
      }
      throw MerxError.fromResponse(response.status, problem, meta.headers, meta.requestId);
    }
  }

  /** A JSON answer with its metadata attached as a non-enumerable `lastResponse`. */
  async json<T>(call: ApiRequest): Promise<T> {
    const { body, meta } = await this.request(call);
    return withResponse(body, meta) as T;
  }

  async text(call: ApiRequest): Promise<string> {
    return String((await this.request(call)).body ?? '');
  }

  async none(call: ApiRequest): Promise<void> {
    await this.request(call);
  }

  page<T>(path: string, query: ListParams, options: RequestOptions | undefined): PagePromise<T> {
    const load = async (params: ListParams): Promise<Page<T>> => {
      const { body, meta } = await this.request({ method: 'GET', path, query: params, options });
      return new Page<T>(body as ListAnswer<T>, meta, (cursor) => load({ ...params, cursor }));
    };
    return new PagePromise(() => load(query));
  }

  private async bearerToken(): Promise<string> {
    const credentials = this.settings.credentials;
    return credentials.kind === 'oauth' ? credentials.tokens.get() : credentials.token;
  }

  private headersFor(call: ApiRequest, options: RequestOptions, idempotencyKey: string | undefined, token: string | undefined): Record<string, string> {
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': USER_AGENT, ...this.settings.defaultHeaders };
    if (token !== undefined) headers.Authorization = `Bearer ${token}`;
    if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
    if (options.ifMatch !== undefined) headers['If-Match'] = options.ifMatch;
    if (call.body !== undefined) headers['Content-Type'] = call.encoding === 'form' ? 'application/x-www-form-urlencoded' : 'application/json';
    return { ...headers, ...options.headers };
  }

  /** MERX_LOG=debug: one line per attempt, never a header or a body (they hold secrets). */
  private log(call: ApiRequest, status: number | undefined, started: number, requestId: string | undefined, attempt: number, error: string | undefined): void {
    if (!this.debug) return;
    const parts = [`[merx] ${call.method} ${call.path} ${status ?? 'no answer'} ${Date.now() - started}ms`];
    if (requestId) parts.push(`request_id=${requestId}`);
    if (attempt > 0) parts.push(`retry=${attempt}`);
    if (error) parts.push(`error="${error}"`);
    process.stderr.write(`${parts.join(' ')}\n`);
  }
}

export function withResponse(body: unknown, meta: ResponseMeta): unknown {
  if (body !== null && typeof body === 'object') Object.defineProperty(body, 'lastResponse', { value: meta, enumerable: false });
  return body;
}

function encodeQuery(query: object | undefined): string {
  if (!query) return '';
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) search.set(name, value.map(String).join(','));
    else search.set(name, value instanceof Date ? value.toISOString() : String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

function encodeBody(call: ApiRequest): string | undefined {
  if (call.body === undefined) return undefined;
  if (call.encoding === 'form')
    return new URLSearchParams(Object.entries(call.body as Record<string, unknown>).map(([name, value]) => [name, String(value)])).toString();
  return JSON.stringify(call.body);
}

function parseBody(response: Response, text: string, meta: ResponseMeta): unknown {
  if (response.status === 204 || text === '') return undefined;
  if (!/json/i.test(response.headers.get('content-type') ?? '')) return text;
  try {
    return JSON.parse(text);
  } catch (cause) {
    // Something between us and Merx (a proxy's error page) answered: say so rather than leak a SyntaxError.
    throw new MerxError(`${response.status} answer is not the JSON it claims to be${meta.requestId ? ` [request ${meta.requestId}]` : ''}`, {
      status: response.status,
      headers: meta.headers,
      ...(meta.requestId === undefined ? {} : { requestId: meta.requestId }),
      cause,
    });
  }
}

function metaOf(response: Response): ResponseMeta {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  return { status: response.status, headers, requestId: headers['x-request-id'], etag: headers.etag };
}

function problemOf(text: string): ProblemDocument {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as ProblemDocument) : {};
  } catch {
    return {};
  }
}

function retryable(status: number, problem: ProblemDocument): boolean {
  return status === 408 || status === 429 || status >= 500 || (status === 409 && problem.code === 'idempotency_key_in_use');
}

/** Retry-After (seconds or an HTTP date) or retry-after-ms, in milliseconds. */
function retryAfterMs(headers: Record<string, string>): number | undefined {
  let wait: number | undefined;
  const milliseconds = headers['retry-after-ms'];
  const header = headers['retry-after'];
  if (milliseconds !== undefined && Number.isFinite(Number(milliseconds))) wait = Number(milliseconds);
  else if (header !== undefined && header.trim() !== '' && Number.isFinite(Number(header))) wait = Number(header) * 1000;
  else if (header !== undefined && !Number.isNaN(Date.parse(header))) wait = Date.parse(header) - Date.now();
  return wait !== undefined && Number.isFinite(wait) ? Math.max(0, wait) : undefined;
}

/** Exponential backoff from half a second, capped at 8 s, less up to a quarter of jitter. */
function backoff(attempt: number): number {
  return Math.min(500 * 2 ** attempt, MAX_BACKOFF_MS) * (1 - 0.25 * Math.random());
}

/** Waits `ms`, or until the caller's signal aborts (then rejects with its reason: no more retries). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : '';
    return `${cause.message}${inner}`;
  }
  return String(cause);
}
