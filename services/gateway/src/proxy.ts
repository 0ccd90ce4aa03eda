import type { Context } from 'koa';
import type { RequestListener, Server } from 'node:http';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { InProcessDispatcher } from './in-process.js';
import { currentContext, inClientSpan, MAX_BODY_BYTES, PayloadTooLarge, TRACE_HEADERS, Unavailable } from '@merx/kit';

/** RFC 9110 §7.6.1: meaningful only for one hop, never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);
/** A client's trace headers stop at the edge: services join the gateway's trace, never one a caller names. */
const NOT_FORWARDED = new Set<string>([...HOP_BY_HOP, ...TRACE_HEADERS]);
const NOT_COPIED_BACK = new Set([...HOP_BY_HOP, 'x-request-id', 'content-length']);
const MAX_BUFFERED_BYTES = 1024 * 1024;

export interface Upstream {
  name: string;
  origin: string;
  /** A keep-alive pool to the service's port, or the service's own handler when it runs in this process. */
  dispatcher: Dispatcher;
}

/** A service running in this process (the embedded mode): its request listener and its server. */
export interface InProcessService {
  handle: RequestListener;
  server: Server;
}

export function createUpstream(name: string, origin: string, inProcess?: InProcessService): Upstream {
  return {
    name,
    origin,
    dispatcher: inProcess
      ? new InProcessDispatcher(inProcess)
      : // Keep-alive connections to each service; pipelining stays off so one slow request never blocks another.
        new Pool(origin, { connections: 64, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000, headersTimeout: 30_000, bodyTimeout: 30_000 }),
  };
}

function forwardedHeaders(ctx: Context, requestId: string): Record<string, string> {
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
  return headers;
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
}

/**
 * Reads a request body of at most `limit` bytes, declared or not: a chunked body that grows past
 * the limit is a 413 here, not a connection the upstream cuts mid-stream (which the edge could
 * only report as a 503).
 */
export async function readBoundedBody(ctx: Context, limit: number): Promise<Buffer> {
  if (Number(ctx.get('content-length') || 0) > limit) throw new PayloadTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new PayloadTooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Sends the request (its body read whole, at most 1 MiB) to the upstream and the answer back.
 * `body`: the request body when the edge already had to read it (the token endpoint's form).
 */
export async function proxyTo(upstream: Upstream, ctx: Context, requestId: string, body?: Buffer): Promise<void> {
  const payload = body ?? (hasBody(ctx) ? await readBoundedBody(ctx, MAX_BODY_BYTES) : null);
  let response: Dispatcher.ResponseData;
  const headers = forwardedHeaders(ctx, requestId);
  try {
    response = await inClientSpan(upstream.name, ctx.method, `${upstream.origin}${ctx.url}`, headers, async (span) => {
      const answer = await upstream.dispatcher.request({ method: ctx.method as Dispatcher.HttpMethod, path: ctx.url, headers, body: payload });
      span?.setAttribute('http.response.status_code', answer.statusCode);
      return answer;
    });
  } catch (error) {
    if (error instanceof undiciErrors.UndiciError || (error as NodeJS.ErrnoException)?.code) {
      throw new Unavailable(`The ${upstream.name} service is unavailable; retry later.`, error);
    }
    throw error;
  }
  ctx.status = response.statusCode;
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined || NOT_COPIED_BACK.has(name)) continue;
    ctx.set(name, value as string | string[]);
  }
  if (ctx.status === 204 || ctx.status === 304 || ctx.method === 'HEAD') {
    await response.body.dump();
    ctx.body = null;
    return;
  }
  const length = Number(response.headers['content-length'] ?? NaN);
  if (length <= MAX_BUFFERED_BYTES) {
    // API answers are small: reading them whole is cheaper than streaming through Koa, and a
    // client that hangs up meanwhile cannot leave an errored stream behind.
    try {
      ctx.body = Buffer.from(await response.body.arrayBuffer());
    } catch (error) {
      throw new Unavailable(`The ${upstream.name} service stopped answering mid-response; retry later.`, error);
    }
    return;
  }
  // Large or unsized bodies stream. An upstream or client failure mid-stream must end this
  // response, never the process: an 'error' event without a listener would crash it.
  response.body.on('error', () => undefined);
  ctx.body = response.body;
}
