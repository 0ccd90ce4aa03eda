import Koa from 'koa';
import { openApiDocument } from '@merx/contracts';
import {
  authenticate,
  authOf,
  currentContext,
  healthRoutes,
  listen,
  NotFound,
  problemMiddleware,
  requestContextMiddleware,
  type Logger,
  type ReadinessCheck,
  type RunningServer,
  type TokenVerifier,
} from '@merx/kit';
import { createUpstream, proxyTo, type Upstream } from './proxy.js';
import { resolveRoute, routeTable } from './routes.js';
import { createThrottle, type ThrottleDeps } from './throttle/limiter.js';

export interface GatewayDeps {
  logger: Logger;
  verifier: TokenVerifier;
  /** Extra /readyz checks beside the upstreams (the revocation list being loaded). */
  readiness?: ReadinessCheck[];
  /** Throttle classes; absent or `settings.enabled: false` serves without them. */
  throttle?: Omit<ThrottleDeps, 'logger'>;
  publicUrl: string;
  upstreams: { oauth: string; catalog: string; audit: string; webhooks: string; merchants: string };
  port: number;
  host?: string;
}

export interface RunningGateway extends RunningServer {
  stop(): Promise<void>;
}

async function checkUpstream(upstream: Upstream): Promise<void> {
  const response = await upstream.pool.request({ method: 'GET', path: '/healthz', headersTimeout: 2_000, bodyTimeout: 2_000 });
  await response.body.dump();
  if (response.statusCode !== 200) throw new Error(`${upstream.name} answered ${response.statusCode}`);
}

function servedDocument(publicUrl: string): string {
  return JSON.stringify({ ...openApiDocument, servers: [{ url: publicUrl, description: 'This Merx deployment' }] });
}

/** The only public origin: request ids, token checks at the edge, routing, problem+json for whatever goes wrong. */
export async function startGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const upstreams = {
    oauth: createUpstream('oauth', deps.upstreams.oauth),
    catalog: createUpstream('catalog', deps.upstreams.catalog),
    audit: createUpstream('audit', deps.upstreams.audit),
    webhooks: createUpstream('webhooks', deps.upstreams.webhooks),
    merchants: createUpstream('merchants', deps.upstreams.merchants),
  };
  const table = routeTable(upstreams);
  const document = servedDocument(deps.publicUrl);
  const verifyToken = authenticate(deps.verifier);
  const throttle = deps.throttle?.settings.enabled ? await createThrottle({ ...deps.throttle, logger: deps.logger }) : undefined;

  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestContextMiddleware('gateway', { trustIncomingRequestId: false }));
  app.use(problemMiddleware(deps.logger));
  app.use(
    healthRoutes([
      ...Object.values(upstreams).map((upstream) => ({ name: upstream.name, check: () => checkUpstream(upstream) })),
      ...(deps.readiness ?? []),
      ...(throttle ? [{ name: 'limiter', check: () => throttle.store.degradation() }] : []),
    ]),
  );
  app.use(async function routeRequest(ctx, next) {
    if (ctx.path === '/api/v1/openapi.json' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.type = 'application/json';
      ctx.body = document;
      return;
    }
    const target = resolveRoute(table, ctx.path);
    if (!target) throw new NotFound('route');
    const requestId = currentContext()!.requestId;
    if (target.requiresToken) {
      await verifyToken(ctx, async () => {
        const auth = authOf(ctx);
        await throttle?.merchantRequest(ctx, auth.merchantId, auth.plan);
        await proxyTo(target.upstream, ctx, requestId);
      });
    } else if (throttle && ctx.method === 'POST' && (ctx.path === '/oauth/token' || ctx.path === '/oauth/token/')) {
      await proxyTo(target.upstream, ctx, requestId, await throttle.tokenRequest(ctx));
    } else {
      await proxyTo(target.upstream, ctx, requestId);
    }
    return next;
  });

  const server = await listen(app, deps.port, deps.host);
  return {
    ...server,
    async stop() {
      await server.close();
      await throttle?.stop();
      await Promise.all(Object.values(upstreams).map((upstream) => upstream.pool.close()));
    },
  };
}
