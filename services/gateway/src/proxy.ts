import type { Context } from 'koa';
import type { RequestListener, Server } from 'node:http';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { AnswerCutShort, exchange, type UpstreamAnswer } from './exchange.js';
import { InProcessDispatcher } from './in-process.js';
import { currentContext, GATEWAY_CREDENTIAL_HEADER, inClientSpan, MAX_BODY_BYTES, readBoundedBody, TRACE_HEADERS, Unavailable } from '@merx/kit';

/** RFC 9110 §7.6.1: meaningful only for one hop, never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);
/**
 * A client's trace headers stop at the edge: services join the gateway's trace, never one a
 * caller names. Nor does a client's own gateway credential go through: the gateway sets it.
 */
const NOT_FORWARDED = new Set<string>([...HOP_BY_HOP, ...TRACE_HEADERS, GATEWAY_CREDENTIAL_HEADER]);
const NOT_COPIED_BACK = new Set([...HOP_BY_HOP, 'x-request-id', 'content-length']);
const MAX_BUFFERED_BYTES = 1024 * 1024;

export interface Upstream {
  name: string;
  origin: string;
  /** A keep-alive pool to the service's port, or the service's own handler when it runs in this process. */
  dispatcher: Dispatcher;
  /** The service credential, sent with every request: the service's API answers only the gateway. */
  credential?: string;
}

/** A service running in this process (the embedded mode): its request listener and its server. */
export interface InProcessService {
  handle: RequestListener;
  server: Server;
}

export function createUpstream(name: string, origin: string, inProcess?: InProcessService, credential?: string): Upstream {
  return {
    name,
    origin,
    ...(credential ? { credential } : {}),
    dispatcher: inProcess
      ? new InProcessDispatcher(inProcess)
      : // Keep-alive connections to each service; pipelining stays off so one slow request never blocks another.
        new Pool(origin, { connections: 64, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000, headersTimeout: 30_000, bodyTimeout: 30_000 }),
  };
}

function forwardedHeaders(ctx: Context, requestId: string, credential: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(ctx.request.headers)) {
    if (value === undefined || NOT_FORWARDED.has(name) || name.startsWith('x-forwarded-')) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  headers['x-request-id'] = requestId;
  // The client as far as our trusted proxies vouch (MERX_TRUSTED_PROXIES); services trust this hop.
  headers['x-forwarded-for'] = currentContext()?.ip ?? ctx.ip;
  headers['x-forwarded-host'] = ctx.host;
  headers['x-forwarded-proto'] = ctx.protocol;
  if (credential) headers[GATEWAY_CREDENTIAL_HEADER] = credential;
  return headers;
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
}

/**
 * Sends the request (its body read whole, at most 1 MiB) to the upstream and the answer back.
 * `body`: the request body when the edge already had to read it (the token endpoint's form).
 */
export async function proxyTo(upstream: Upstream, ctx: Context, requestId: string, body?: Buffer): Promise<void> {
  const payload = body ?? (hasBody(ctx) ? await readBoundedBody(ctx, MAX_BODY_BYTES) : null);
  let answer: UpstreamAnswer;
  const headers = forwardedHeaders(ctx, requestId, upstream.credential);
  try {
    answer = await inClientSpan(upstream.name, ctx.method, `${upstream.origin}${ctx.url}`, headers, async (span) => {
      // API answers are small: read whole they skip Koa's stream piping, and a client that hangs
      // up meanwhile cannot leave an errored stream behind. Larger or unsized ones stream.
      const answered = await exchange(
        upstream.dispatcher,
        { method: ctx.method as Dispatcher.HttpMethod, path: ctx.url, headers, body: payload },
        MAX_BUFFERED_BYTES,
      );
      span?.setAttribute('http.response.status_code', answered.statusCode);
      return answered;
    });
  } catch (error) {
    if (error instanceof AnswerCutShort) throw new Unavailable(`The ${upstream.name} service stopped answering mid-response; retry later.`, error.cause);
    if (error instanceof undiciErrors.UndiciError || (error as NodeJS.ErrnoException)?.code) {
      throw new Unavailable(`The ${upstream.name} service is unavailable; retry later.`, error);
    }
    throw error;
  }
  ctx.status = answer.statusCode;
  for (const name in answer.headers) {
    if (NOT_COPIED_BACK.has(name)) continue;
    ctx.set(name, answer.headers[name]!);
  }
  // Koa sets Content-Length from a buffer; a HEAD, 204 or 304 goes out without a body.
  ctx.body = answer.body;
}
