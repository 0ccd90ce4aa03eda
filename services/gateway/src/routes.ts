import type { Upstream } from './proxy.js';

export interface RouteTarget {
  upstream: Upstream;
  /** Checked at the edge; the service checks the token again itself. */
  requiresToken: boolean;
}

export interface Upstreams {
  oauth: Upstream;
  catalog: Upstream;
  audit: Upstream;
  webhooks: Upstream;
  merchants: Upstream;
  /** The merchant console's pages; absent when this gateway serves the API alone. */
  console?: Upstream;
}

/** Longest-prefix routing table. A new service adds its prefixes here; an unlisted /api/v1 path is a 404 at the edge. */
export function routeTable(upstreams: Upstreams): Array<[prefix: string, target: RouteTarget]> {
  const table: Array<[string, RouteTarget]> = [
    ['/api/v1/products', { upstream: upstreams.catalog, requiresToken: true }],
    ['/api/v1/audit', { upstream: upstreams.audit, requiresToken: true }],
    ['/api/v1/webhooks', { upstream: upstreams.webhooks, requiresToken: true }],
    ['/api/v1/events', { upstream: upstreams.webhooks, requiresToken: true }],
    ['/api/v1/merchant', { upstream: upstreams.merchants, requiresToken: true }],
    ['/api/v1/sources', { upstream: upstreams.merchants, requiresToken: true }],
    ['/api/v1/destinations', { upstream: upstreams.merchants, requiresToken: true }],
    ['/api/v1/rules', { upstream: upstreams.merchants, requiresToken: true }],
    ['/api/v1/connections', { upstream: upstreams.merchants, requiresToken: true }],
    ['/api/v1/sandbox', { upstream: upstreams.merchants, requiresToken: true }],
    ['/api/v1/api-keys', { upstream: upstreams.oauth, requiresToken: true }],
    ['/admin/v1/merchants', { upstream: upstreams.oauth, requiresToken: false }],
    ['/api/v1/apps', { upstream: upstreams.oauth, requiresToken: true }],
    ['/admin/v1/apps', { upstream: upstreams.oauth, requiresToken: false }],
    ['/admin/v1/signing-keys', { upstream: upstreams.oauth, requiresToken: false }],
    ['/admin/v1/bus', { upstream: upstreams.oauth, requiresToken: false }],
    ['/oauth', { upstream: upstreams.oauth, requiresToken: false }],
    // Browser pages with their own sessions: the console calls the API back through this gateway with the user's token.
    ...(upstreams.console ? [['/console', { upstream: upstreams.console, requiresToken: false }] as [string, RouteTarget]] : []),
  ];
  return table.sort((a, b) => b[0].length - a[0].length);
}

/** The target of `path`, with the prefix that matched (`/api/v1/products`): what the access log and metrics name the route by. */
export function resolveRoute(table: Array<[string, RouteTarget]>, path: string): (RouteTarget & { prefix: string }) | undefined {
  for (const [prefix, target] of table) {
    if (path === prefix || path.startsWith(`${prefix}/`)) return { ...target, prefix };
  }
  return undefined;
}
