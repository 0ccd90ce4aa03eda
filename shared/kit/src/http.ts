import Koa, { type Context, type Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { runWithContext } from './context.js';
import { UnsupportedMediaType } from './errors.js';
import { isId, newId } from './ids.js';
import type { Logger } from './logger.js';
import { httpRequestDuration, metricsRegistry } from './metrics.js';
import { problemMiddleware } from './problem.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export interface ReadinessCheck {
  name: string;
  /** Throws when not ready. Returning words means ready but degraded: reported as `degraded` with the words as its detail. */
  check(): Promise<void | string | undefined> | void | string | undefined;
}

export interface ServiceAppOptions {
  service: string;
  logger: Logger;
  readiness?: ReadinessCheck[];
  /** Mounts the service's routers; called after the shared middleware is in place. */
  routes(app: Koa): void;
  /** Mounts handlers that read the raw body themselves (oidc-provider's form posts) before JSON parsing. */
  beforeJsonBody?(app: Koa): void;
}

/** Reuses the gateway's request id so one id follows a request through every hop. */
export function requestContextMiddleware(service: string, options: { trustIncomingRequestId?: boolean } = {}): Middleware {
  const trustIncoming = options.trustIncomingRequestId ?? true;
  return async function openRequestContext(ctx, next) {
    const incoming = ctx.get('x-request-id');
    const requestId = trustIncoming && isId(incoming, 'req') ? incoming : newId('req');
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    await runWithContext({ requestId, ip: ctx.get('x-forwarded-for').split(',')[0]?.trim() || ctx.ip }, next);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
    httpRequestDuration.observe({ service, method: ctx.method, route: String(route), status: String(ctx.status) }, seconds);
  };
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * JSON only: a body sent with any other media type is a 415 before we read a byte of it,
 * bodies over 1 MiB are a 413, malformed JSON a 400 (the parsers' errors are mapped in problem.ts).
 * The parser takes every type the guard lets through (+json too), so no accepted body is silently dropped.
 */
export function jsonBodyMiddleware(): Middleware {
  const parse = koaBody({ json: true, jsonTypes: ['application/json', '+json'], jsonStrict: true, jsonLimit: MAX_BODY_BYTES, multipart: false, urlencoded: false, text: false, parsedMethods: ['POST', 'PUT', 'PATCH'] as never });
  return async function requireJsonBody(ctx, next) {
    if (!METHODS_WITH_BODY.has(ctx.method)) return next();
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (!hasBody) {
      ctx.request.body = undefined;
      return next();
    }
    if (!ctx.is('application/json', '+json')) throw new UnsupportedMediaType();
    return parse(ctx, next);
  };
}

export function healthRoutes(readiness: ReadinessCheck[]): Middleware {
  return async function health(ctx, next) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/readyz') {
      const checks: Record<string, 'ok' | 'degraded' | 'failed'> = {};
      const details: Record<string, string> = {};
      await Promise.all(
        readiness.map(async ({ name, check }) => {
          try {
            const degradation = await check();
            checks[name] = degradation ? 'degraded' : 'ok';
            if (degradation) details[name] = degradation;
          } catch (error) {
            checks[name] = 'failed';
            details[name] = error instanceof Error ? error.message : String(error);
          }
        }),
      );
      const ready = !Object.values(checks).includes('failed');
      ctx.status = ready ? 200 : 503;
      const withDetails = Object.keys(details).length > 0 ? { details } : {};
      ctx.body = { status: ready ? 'ready' : 'not_ready', checks, ...withDetails };
      return;
    }
    if (ctx.path === '/metrics') {
      ctx.type = metricsRegistry.contentType;
      ctx.body = await metricsRegistry.metrics();
      return;
    }
    return next();
  };
}

/** Mounts a router so a known path with the wrong method is a 405 problem with an Allow header. */
export function mountRouter(app: Koa, router: { routes(): unknown; allowedMethods(options?: object): unknown }): void {
  app.use(router.routes() as Middleware);
  // Not in throw mode: that mode omits the Allow header. A bodiless 405 becomes a problem in problem.ts.
  app.use(router.allowedMethods() as Middleware);
}

export function createServiceApp(options: ServiceAppOptions): Koa {
  const app = new Koa({ proxy: true });
  app.silent = true; // errors are rendered and logged by problemMiddleware, not by Koa's default handler
  app.use(requestContextMiddleware(options.service));
  app.use(problemMiddleware(options.logger));
  app.use(healthRoutes(options.readiness ?? []));
  options.beforeJsonBody?.(app);
  app.use(jsonBodyMiddleware());
  options.routes(app);
  return app;
}

/** The parsed JSON body (undefined when the request had none). */
export function requestBody(ctx: { request: unknown }): unknown {
  return (ctx.request as { body?: unknown }).body;
}
export type { Middleware } from 'koa';
