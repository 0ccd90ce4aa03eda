import Koa, { type Context, type Middleware } from 'koa';
import { clientAddress, proxyTrust, SERVICE_NETWORK, type ProxyTrust } from './client-address.js';
import { runWithContext } from './context.js';
import { isId, newId } from './ids.js';
import type { Logger } from './logger.js';
import { httpRequestDuration, readinessState } from './metrics.js';
import { problemMiddleware } from './problem.js';
import { requireGatewayCredential } from './service-credential.js';
import { jsonBodyMiddleware } from './request-input.js';
import { startServerSpan } from './tracing.js';

export { jsonBodyMiddleware, MAX_BODY_BYTES } from './request-input.js';

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
  /** The service credential: the merchant and operator API then answer only calls the gateway vouches for. */
  gatewayCredential?: string;
}

export interface RequestContextOptions {
  /** The edge makes its own ids and traces; services reuse the gateway's so one id and one trace follow a request. */
  trustIncomingRequestId?: boolean;
  /** Peers whose `X-Forwarded-For` names the client (default: the service network). */
  trustedProxies?: ProxyTrust;
  /** Writes one access line per request (method, route, status, ms, request id, merchant id). */
  logger?: Logger;
}

/**
 * Opens the request's context: its id, and the client's address as far as trusted proxies vouch
 * for it (a header from anyone else is ignored, so nobody can put another address in the audit
 * log or another client's throttle bucket). Ends with the access log line and the latency metric.
 */
export function requestContextMiddleware(service: string, options: RequestContextOptions = {}): Middleware {
  const trustIncoming = options.trustIncomingRequestId ?? true;
  const trust = options.trustedProxies ?? proxyTrust(SERVICE_NETWORK);
  const { logger } = options;
  return async function openRequestContext(ctx, next) {
    const incoming = ctx.get('x-request-id');
    const requestId = trustIncoming && isId(incoming, 'req') ? incoming : newId('req');
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    const span = startServerSpan({ service, method: ctx.method, path: ctx.path, headers: ctx.headers, continueIncomingTrace: trustIncoming });
    const handle = () => runWithContext({ requestId, ip: clientAddress(ctx.req, trust) }, next);
    try {
      await (span ? span.run(handle) : handle());
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const matched = (ctx as Context & { _matchedRoute?: string })._matchedRoute;
      const route = String(matched ?? 'unmatched');
      span?.end({
        status: ctx.status,
        ...(matched ? { route: String(matched) } : {}),
        requestId,
        merchantId: (ctx.state as { auth?: { merchantId?: string } }).auth?.merchantId ?? null,
      });
      httpRequestDuration.observe({ service, method: ctx.method, route, status: String(ctx.status) }, seconds);
      // Checked first: at `warn` (the benchmarks, most deployments under load) a request builds no log object.
      if (logger?.isLevelEnabled('info') && ctx.path !== '/healthz' && ctx.path !== '/readyz' && ctx.path !== '/metrics') {
        const merchantId = (ctx.state as { auth?: { merchantId?: string } }).auth?.merchantId ?? null;
        logger.info(
          {
            method: ctx.method,
            route,
            path: ctx.path,
            status: ctx.status,
            ms: Math.round(seconds * 10_000) / 10,
            request_id: requestId,
            merchant_id: merchantId,
          },
          'request',
        );
      }
    }
  };
}

const STATE_VALUES = { ok: 1, degraded: 0.5, failed: 0 } as const;

export type CheckState = 'ok' | 'degraded' | 'failed';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckState>;
  /** Why a check failed or is degraded: words for an operator, never for the public port. */
  details: Record<string, string>;
}

/** Runs every check; `failed` only for what the process itself needs to serve (a check that throws). */
export async function evaluateReadiness(service: string, readiness: ReadinessCheck[]): Promise<ReadinessReport> {
  const checks: Record<string, CheckState> = {};
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
      readinessState.set({ service, check: name }, STATE_VALUES[checks[name]!]);
    }),
  );
  return { ready: !Object.values(checks).includes('failed'), checks, details };
}

/**
 * What a load balancer needs on the public port: liveness, and readiness as a status alone.
 * Which dependency is degraded and why, and the metrics, are on the admin port
 * (admin-server.ts): error messages name internal hosts and must not leave the service network.
 */
export function healthRoutes(readiness: ReadinessCheck[], service = 'merx'): Middleware {
  return async function health(ctx, next) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/readyz') {
      const { ready } = await evaluateReadiness(service, readiness);
      ctx.status = ready ? 200 : 503;
      ctx.body = { status: ready ? 'ready' : 'not_ready' };
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
  app.use(requestContextMiddleware(options.service, { logger: options.logger }));
  app.use(problemMiddleware(options.logger));
  app.use(healthRoutes(options.readiness ?? [], options.service));
  if (options.gatewayCredential) app.use(requireGatewayCredential(options.gatewayCredential));
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
