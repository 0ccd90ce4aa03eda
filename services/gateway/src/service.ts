import Koa from 'koa';
import { openApiDocument } from '@merx/contracts';
import {
  authenticate,
  authOf,
  currentContext,
  healthRoutes,
  listen,
  MalformedRequest,
  NotFound,
  problemMiddleware,
  requestContextMiddleware,
  proxyTrust,
  type Logger,
  type ReadinessCheck,
  type RunningServer,
  type TokenVerifier,
} from '@merx/kit';
import { canonicalPath } from './canonical-path.js';
import { apiReferenceRoutes, loadApiReference, type ApiReference } from './docs.js';
import type { GrpcConnectionSettings } from './grpc/connections.js';
import { startGrpcEdge, type RunningGrpcEdge } from './grpc/edge.js';
import { createUpstream, proxyTo, type InProcessService, type Upstream } from './proxy.js';
import { resolveRoute, routeTable } from './routes.js';
import { createThrottle, httpThrottleOverridesLoader, type ThrottleDeps } from './throttle/limiter.js';

export interface GatewayDeps {
  logger: Logger;
  verifier: TokenVerifier;
  /** Extra /readyz checks beside the upstreams (the revocation list being loaded). */
  readiness?: ReadinessCheck[];
  /** Throttle classes; absent or `settings.enabled: false` serves without them. */
  throttle?: Omit<ThrottleDeps, 'logger'>;
  publicUrl: string;
  /** The /docs renderer, loaded by main before anything starts; loaded here when absent. */
  apiReference?: ApiReference;
  /** `console` is optional: without it /console is not routed (a gateway in front of the API alone). */
  upstreams: { oauth: string; catalog: string; audit: string; webhooks: string; merchants: string; console?: string };
  /**
   * Services running in this process (the embedded mode), by upstream name: requests go to their
   * request listeners directly instead of through their ports (in-process.ts).
   */
  inProcessUpstreams?: Partial<Record<keyof GatewayDeps['upstreams'], InProcessService>>;
  /**
   * Proxies in front of the gateway (an ingress, a load balancer) whose `X-Forwarded-For` names
   * the client; empty trusts nobody and the socket's peer is the client.
   */
  trustedProxies?: string[];
  /**
   * MERX_SERVICE_TOKEN: presented to the oauth service's internal routes, and sent with every
   * forwarded request and gRPC call, whose services answer only calls the gateway vouches for.
   */
  serviceToken: string;
  port: number;
  host?: string;
  /** The public gRPC port and the internal gRPC address (`host:port`) of each service that owns a gRPC service; absent serves HTTP alone (component tests). */
  grpc?: { port: number; upstreams: { catalog: string; merchants: string; webhooks: string }; connections?: GrpcConnectionSettings };
}

export interface RunningGateway extends RunningServer {
  /** Every check of the public /readyz (upstreams, revocations, limiter), for the admin listener's detailed one. */
  readiness: ReadinessCheck[];
  grpc?: RunningGrpcEdge;
  stop(): Promise<void>;
}

/**
 * An upstream that does not answer degrades the gateway without taking it out of its load
 * balancer: its routes answer 503 problem+json while every other service's routes keep working.
 */
async function checkUpstream(upstream: Upstream): Promise<string | undefined> {
  try {
    const response = await upstream.dispatcher.request({ method: 'GET', path: '/healthz', headersTimeout: 2_000, bodyTimeout: 2_000 });
    await response.body.dump();
    return response.statusCode === 200 ? undefined : `${upstream.name} answered ${response.statusCode}: its routes answer 503`;
  } catch (error) {
    return `${upstream.name} is unreachable (${(error as Error).message}): its routes answer 503`;
  }
}

function servedDocument(publicUrl: string): string {
  return JSON.stringify({ ...openApiDocument, servers: [{ url: publicUrl, description: 'This Merx deployment' }] });
}

/** The only public origin: request ids, token checks at the edge, routing, problem+json for whatever goes wrong. */
export async function startGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const upstreams = {
    // The service credential vouches for every forwarded request: the services' APIs answer the gateway only.
    oauth: createUpstream('oauth', deps.upstreams.oauth, deps.inProcessUpstreams?.oauth, deps.serviceToken),
    catalog: createUpstream('catalog', deps.upstreams.catalog, deps.inProcessUpstreams?.catalog, deps.serviceToken),
    audit: createUpstream('audit', deps.upstreams.audit, deps.inProcessUpstreams?.audit, deps.serviceToken),
    webhooks: createUpstream('webhooks', deps.upstreams.webhooks, deps.inProcessUpstreams?.webhooks, deps.serviceToken),
    merchants: createUpstream('merchants', deps.upstreams.merchants, deps.inProcessUpstreams?.merchants, deps.serviceToken),
    ...(deps.upstreams.console ? { console: createUpstream('console', deps.upstreams.console, deps.inProcessUpstreams?.console) } : {}),
  };
  const table = routeTable(upstreams);
  const document = servedDocument(deps.publicUrl);
  const apiReference = deps.apiReference ?? loadApiReference();
  const verifyToken = authenticate(deps.verifier);
  const throttle = deps.throttle?.settings.enabled
    ? await createThrottle({ loadOverrides: httpThrottleOverridesLoader(deps.upstreams.oauth, deps.serviceToken), ...deps.throttle, logger: deps.logger })
    : undefined;

  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestContextMiddleware('gateway', { trustIncomingRequestId: false, trustedProxies: proxyTrust(deps.trustedProxies ?? []), logger: deps.logger }));
  app.use(problemMiddleware(deps.logger));
  const readiness: ReadinessCheck[] = [
    ...Object.values(upstreams).map((upstream) => ({ name: upstream.name, check: () => checkUpstream(upstream) })),
    ...(deps.readiness ?? []),
    ...(throttle ? [{ name: 'limiter', check: () => throttle.degradation() }] : []),
  ];
  app.use(healthRoutes(readiness, 'gateway'));
  app.use(apiReferenceRoutes(apiReference));
  app.use(async function routeRequest(ctx, next) {
    if (ctx.path === '/api/v1/openapi.json' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.type = 'application/json';
      ctx.body = document;
      return;
    }
    const canonical = canonicalPath(ctx.path);
    if ('refused' in canonical) throw new MalformedRequest(`The request path is not in canonical form: ${canonical.refused}.`);
    // What is classified is what is forwarded.
    if (canonical.path !== ctx.path) ctx.path = canonical.path;
    const target = resolveRoute(table, ctx.path);
    if (!target) throw new NotFound('route');
    // Proxied routes have no router match: label them by their prefix (bounded, unlike the path) instead of `unmatched`.
    (ctx as typeof ctx & { _matchedRoute?: string })._matchedRoute = `${target.prefix}/*`;
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
  let grpc: RunningGrpcEdge | undefined;
  try {
    if (deps.grpc)
      grpc = await startGrpcEdge({
        logger: deps.logger,
        verifier: deps.verifier,
        upstreams: deps.grpc.upstreams,
        port: deps.grpc.port,
        ...(deps.host ? { host: deps.host } : {}),
        ...(throttle ? { throttle } : {}),
        ...(deps.grpc.connections ? { connections: deps.grpc.connections } : {}),
        ...(deps.trustedProxies ? { trustedProxies: deps.trustedProxies } : {}),
        gatewayCredential: deps.serviceToken,
      });
  } catch (error) {
    await server.close();
    await throttle?.stop();
    throw error;
  }
  return {
    ...server,
    readiness,
    grpc,
    async stop() {
      await grpc?.stop();
      await server.close();
      await throttle?.stop();
      await Promise.all(Object.values(upstreams).map((upstream) => upstream.dispatcher.close()));
    },
  };
}
