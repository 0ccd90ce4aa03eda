import Koa from 'koa';
import { openApiDocument } from '@merx/contracts';
import {
  authenticate,
  currentContext,
  healthRoutes,
  listen,
  NotFound,
  problemMiddleware,
  requestContextMiddleware,
  type Logger,
  type RunningServer,
  type TokenVerifier,
} from '@merx/kit';
import { createUpstream, proxyTo, type Upstream } from './proxy.js';
import { resolveRoute, routeTable } from './routes.js';

export interface GatewayDeps {
  logger: Logger;
  verifier: TokenVerifier;
  publicUrl: string;
  upstreams: { oauth: string; catalog: string };
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
  };
  const table = routeTable(upstreams);
  const document = servedDocument(deps.publicUrl);
  const verifyToken = authenticate(deps.verifier);

  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestContextMiddleware('gateway', { trustIncomingRequestId: false }));
  app.use(problemMiddleware(deps.logger));
  app.use(healthRoutes(Object.values(upstreams).map((upstream) => ({ name: upstream.name, check: () => checkUpstream(upstream) }))));
  app.use(async function routeRequest(ctx, next) {
    if (ctx.path === '/api/v1/openapi.json' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.type = 'application/json';
      ctx.body = document;
      return;
    }
    const target = resolveRoute(table, ctx.path);
    if (!target) throw new NotFound('route');
    const requestId = currentContext()!.requestId;
    if (target.requiresToken) await verifyToken(ctx, () => proxyTo(target.upstream, ctx, requestId));
    else await proxyTo(target.upstream, ctx, requestId);
    return next;
  });

  const server = await listen(app, deps.port, deps.host);
  return {
    ...server,
    async stop() {
      await server.close();
      await Promise.all(Object.values(upstreams).map((upstream) => upstream.pool.close()));
    },
  };
}
