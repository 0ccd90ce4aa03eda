import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import type Provider from 'oidc-provider';

/**
 * oidc-provider fixes its keystore when constructed, so a signing key rotation builds a new
 * provider and swaps it in here; requests already inside the old one finish there. Every
 * provider shares the database adapter, so codes, grants and refresh tokens carry over.
 */
export class ProviderSlot {
  #provider: Provider;

  constructor(provider: Provider) {
    this.#provider = provider;
  }

  get provider(): Provider {
    return this.#provider;
  }

  swap(provider: Provider): void {
    if (provider.issuer !== this.#provider.issuer) throw new Error('a swapped-in provider must keep the issuer');
    this.#provider = provider;
  }
}

/** What Express adds to a request it hands a mounted app; oidc-provider reads them to build URLs. */
type MountedRequest = IncomingMessage & { originalUrl?: string; baseUrl?: string };

/**
 * Mounts the provider under its issuer's path (`/oauth` for `http://host/oauth`).
 *
 * oidc-provider 8 runs on its own koa 2 application, which cannot run on this app's koa 3
 * context, so the request is handed to `provider.callback()` the way Express mounts it: the
 * prefix stripped from `req.url`, the full URL kept in `req.originalUrl` (from which the
 * provider derives its mount path for discovery URLs). The provider writes to the same raw
 * response, so headers set earlier on it (X-Request-Id) stay, and this app's `ctx.status`
 * reads the provider's status for metrics. The provider's `proxy` setting decides whether
 * X-Forwarded-Host/Proto count; `createProvider` turns it on.
 *
 * Requests under the prefix that the provider does not route fall through to this app (its
 * 404 and problem+json handling): the provider is told not to answer them and the headers it
 * set are put back as they were. Mount it before any body parser: oidc-provider reads the raw
 * request body itself.
 */
export function mountProvider(app: Koa, source: Provider | ProviderSlot): void {
  const current = () => (source instanceof ProviderSlot ? source.provider : source);
  const prefix = new URL(current().issuer).pathname.replace(/\/+$/, '');
  const unrouted = new WeakSet<IncomingMessage>();
  const handles = new WeakMap<Provider, ReturnType<Provider['callback']>>();
  const handleOf = (provider: Provider) => {
    let handle = handles.get(provider);
    if (handle) return handle;
    // `use` puts this ahead of the provider's own error handler, so it sees the final answer.
    provider.use(async (ctx, next) => {
      await next();
      // @koa/router names the matched route on the context; without one the provider's 404 is only "no such route".
      if (ctx.status === 404 && (ctx as { _matchedRoute?: unknown })._matchedRoute === undefined) {
        unrouted.add(ctx.req);
        ctx.respond = false;
      }
    });
    handle = provider.callback();
    handles.set(provider, handle);
    return handle;
  };
  handleOf(current());

  const stripPrefix = (path: string): string | undefined => {
    if (prefix === '') return path;
    if (path === prefix) return '/';
    return path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : undefined;
  };

  app.use(async (ctx, next) => {
    const inner = stripPrefix(ctx.path);
    if (inner === undefined) return next();
    const req: MountedRequest = ctx.req;
    const { url, originalUrl, baseUrl } = req;
    const headersBefore = ctx.res.getHeaders();
    // Discovery, redirects and form actions are built from the configured public origin, never
    // from what a client wrote in Host or X-Forwarded-*: a forged Host must not make the
    // provider advertise someone else's endpoints.
    const origin = new URL(current().issuer);
    req.headers['x-forwarded-host'] = origin.host;
    req.headers['x-forwarded-proto'] = origin.protocol.slice(0, -1);
    req.url = `${inner}${ctx.search}`;
    req.originalUrl = url;
    req.baseUrl = prefix;
    ctx.respond = false;
    try {
      await handleOf(current())(req, ctx.res);
    } finally {
      req.url = url;
      req.originalUrl = originalUrl;
      req.baseUrl = baseUrl;
    }
    if (!unrouted.has(req)) return;

    unrouted.delete(req);
    ctx.respond = true;
    for (const name of ctx.res.getHeaderNames()) ctx.res.removeHeader(name);
    for (const [name, value] of Object.entries(headersBefore)) {
      if (value !== undefined) ctx.res.setHeader(name, value);
    }
    ctx.res.statusCode = 404;
    await next();
  });
}
