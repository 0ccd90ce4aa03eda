import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { errors } from 'oidc-provider';
import type { Adapter, ClientInstance, Configuration, GrantHandler, KoaContextWithOIDC, TokenInstance } from 'oidc-provider';
import type { Db } from '@merx/kit';
import { scopeNames } from '@merx/contracts';
import { createPostgresAdapterFactory } from './adapter.js';
import { parseApiKey, parseClientId, verifyApiKey } from './api-keys.js';

/** What the key store knows about one API key; the plaintext key is never part of it. */
export interface ApiKeyClient {
  clientId: string;
  /** `hashApiKey(apiKey)`. */
  secretHash: string;
  merchantId: string;
  scopes: string[];
  status: 'active' | 'revoked';
  merchantStatus: 'active' | 'suspended';
}

export interface TokenIssued {
  clientId: string;
  merchantId: string;
  /** Space separated, as in the token. */
  scope: string;
}

export interface CreateProviderOptions {
  /** `{base_url}/oauth`; its path is also where `mountProvider` mounts the provider. */
  issuer: string;
  /** Resource indicator and `aud` of every access token, e.g. `urn:merx:api`. */
  audience: string;
  accessTokenTtlSeconds: number;
  /** Signs oidc-provider's cookies (none are used by client credentials; later interactions will). */
  cookieKeys: string[];
  /** Private signing keys; the first one signs. */
  jwks: { keys: JWK[] };
  db: Db;
  /** Schema of the `oidc_payloads` table; default `oauth`. */
  schema?: string;
  findApiKeyClient(clientId: string): Promise<ApiKeyClient | undefined>;
  /** Awaited after a token is minted and before it is answered; a throw fails the request. */
  onTokenIssued?(info: TokenIssued): void | Promise<void>;
}

const MERX_SCOPES: ReadonlySet<string> = new Set(scopeNames);

function scopeSet(scope: unknown): Set<string> {
  return new Set(typeof scope === 'string' && scope.length > 0 ? scope.split(' ') : []);
}

// oidc-provider 8 names Ed25519 signatures by their JWS family name, EdDSA.
const ALG_BY_CURVE: Record<string, string> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512', Ed25519: 'EdDSA' };

function signingAlgorithm(jwk: JWK): string {
  if (typeof jwk.alg === 'string') return jwk.alg;
  if (jwk.kty === 'RSA') return 'RS256';
  const alg = typeof jwk.crv === 'string' ? ALG_BY_CURVE[jwk.crv] : undefined;
  if (!alg) throw new Error(`cannot tell the signing algorithm of the ${jwk.kty ?? 'unknown'} key ${jwk.kid ?? ''}: set its alg`);
  return alg;
}

function merchantIdOf(client: ClientInstance | undefined): string | undefined {
  const value = client?.merchant_id;
  return typeof value === 'string' ? value : undefined;
}

/**
 * API keys are not registered clients: each token request looks its client up through
 * `findApiKeyClient`, so a revoked key or a suspended merchant stops working at once.
 * oidc-provider reads client metadata through the `Client` model's adapter, which is the seam
 * used here. `client_secret` carries the stored hash, never a secret: `compareClientSecret`
 * is replaced on this provider's Client class to verify the presented key against it.
 */
function apiKeyClientAdapter(findApiKeyClient: CreateProviderOptions['findApiKeyClient']): Adapter {
  const managedElsewhere = async (): Promise<never> => {
    throw new Error('API key clients are managed by the key store, not by oidc-provider');
  };
  return {
    async find(clientId) {
      if (!parseClientId(clientId)) return undefined;
      const record = await findApiKeyClient(clientId);
      if (!record || record.clientId !== clientId || record.status !== 'active' || record.merchantStatus !== 'active') {
        return undefined;
      }
      const scope = record.scopes.filter((name) => MERX_SCOPES.has(name)).join(' ');
      return {
        client_id: clientId,
        client_secret: record.secretHash,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
        ...(scope ? { scope } : {}),
        merchant_id: record.merchantId,
      };
    },
    upsert: managedElsewhere,
    findByUserCode: async () => undefined,
    findByUid: async () => undefined,
    consume: managedElsewhere,
    destroy: managedElsewhere,
    revokeByGrantId: managedElsewhere,
  };
}

/**
 * The built-in client_credentials grant issues a token without any scope when `scope` is
 * omitted, and silently drops requested scopes the server does not know. Merx wants "all of
 * the key's scopes" by default and `invalid_scope` for anything the key does not hold, so the
 * built-in handler is wrapped rather than replaced (it keeps resource, DPoP and mTLS handling).
 */
function withApiKeyScopes(builtIn: GrantHandler, onTokenIssued: CreateProviderOptions['onTokenIssued']): GrantHandler {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    const { client, params } = ctx.oidc;
    if (!client || !params) throw new Error('client_credentials handler reached without an authenticated client');
    const held = scopeSet(client.scope);
    if (params.scope === undefined) {
      params.scope = held.size > 0 ? [...held].join(' ') : undefined;
    } else {
      for (const scope of scopeSet(params.scope)) {
        if (!held.has(scope)) throw new errors.InvalidScope('requested scope is not allowed', scope);
      }
    }
    await builtIn(ctx, next);
    const token = ctx.oidc.entities.ClientCredentials as TokenInstance | undefined;
    const merchantId = merchantIdOf(client);
    if (onTokenIssued && token && merchantId) {
      await onTokenIssued({ clientId: client.clientId, merchantId, scope: token.scope ?? '' });
    }
  };
}

export function createProvider(options: CreateProviderOptions): Provider {
  const [signingKey] = options.jwks.keys;
  if (!signingKey) throw new Error('createProvider needs at least one signing key in jwks.keys');
  if (typeof signingKey.d !== 'string') throw new Error('jwks.keys must be private keys');
  if (options.cookieKeys.length === 0) throw new Error('createProvider needs at least one cookie key');
  if (!Number.isSafeInteger(options.accessTokenTtlSeconds) || options.accessTokenTtlSeconds <= 0) {
    throw new Error('accessTokenTtlSeconds must be a positive integer');
  }
  const alg = signingAlgorithm(signingKey);
  const kid = signingKey.kid;
  const ttl = options.accessTokenTtlSeconds;
  const { audience } = options;

  const postgresAdapter = createPostgresAdapterFactory(options.db, { schema: options.schema });
  const clientAdapter = apiKeyClientAdapter(options.findApiKeyClient);

  const configuration: Configuration = {
    adapter: (model: string) => (model === 'Client' ? clientAdapter : postgresAdapter(model)),
    clients: [],
    jwks: { keys: options.jwks.keys.map((key) => ({ ...key })) },
    cookies: { keys: options.cookieKeys },
    scopes: [...scopeNames],
    // No authorization endpoint flows yet: third-party apps (code + PKCE) come with a later issue.
    responseTypes: [],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    clientDefaults: {
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: alg,
    },
    extraClientMetadata: { properties: ['merchant_id'] },
    // API keys are server-side secrets: no browser origin may call the token endpoint with one.
    clientBasedCORS: () => false,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // The gateway verifies plain bearer tokens; sender-constrained tokens would need it to check proofs.
      dPoP: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => oneOf ?? audience,
        getResourceServerInfo: async (_ctx: unknown, resourceIndicator: string) => {
          if (resourceIndicator !== audience) throw new errors.InvalidTarget();
          return {
            scope: [...scopeNames].join(' '),
            audience,
            accessTokenTTL: ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: kid ? { alg, kid } : { alg } },
          };
        },
      },
    },
    routes: { token: '/token', jwks: '/jwks' },
    ttl: { AccessToken: ttl, ClientCredentials: ttl },
    extraTokenClaims: async (_ctx: unknown, token: TokenInstance) => {
      const merchantId = merchantIdOf(token.client);
      return merchantId ? { merchant_id: merchantId } : undefined;
    },
    // Browsers asking for HTML get the same standard OAuth JSON body; never a page, never a stack.
    renderError: async (ctx: Koa.Context, out: Record<string, unknown>) => {
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = out;
    },
  };

  let scopesWrapped = false;
  class ApiKeyProvider extends Provider {
    // oidc-provider registers its built-in grants through this method while constructing.
    override registerGrantType(...[name, handler, params, dupes]: Parameters<Provider['registerGrantType']>): void {
      if (name === 'client_credentials') {
        scopesWrapped = true;
        super.registerGrantType(name, withApiKeyScopes(handler, options.onTokenIssued), params, dupes);
        return;
      }
      super.registerGrantType(name, handler, params, dupes);
    }
  }

  const provider = new ApiKeyProvider(options.issuer, configuration);
  if (!scopesWrapped) {
    throw new Error('oidc-provider did not register client_credentials through registerGrantType; revisit createProvider');
  }
  provider.Client.prototype.compareClientSecret = function compareApiKey(this: ClientInstance, presented: string) {
    const stored = this.clientSecret;
    return typeof stored === 'string' && parseApiKey(presented)?.clientId === this.clientId && verifyApiKey(presented, stored);
  };
  provider.proxy = true;
  return provider;
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
export function mountProvider(app: Koa, provider: Provider): void {
  const prefix = new URL(provider.issuer).pathname.replace(/\/+$/, '');
  const unrouted = new WeakSet<IncomingMessage>();
  // `use` puts this ahead of the provider's own error handler, so it sees the final answer.
  provider.use(async (ctx, next) => {
    await next();
    // @koa/router names the matched route on the context; without one the provider's 404 is only "no such route".
    if (ctx.status === 404 && (ctx as { _matchedRoute?: unknown })._matchedRoute === undefined) {
      unrouted.add(ctx.req);
      ctx.respond = false;
    }
  });
  const handle = provider.callback();

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
    req.url = `${inner}${ctx.search}`;
    req.originalUrl = url;
    req.baseUrl = prefix;
    ctx.respond = false;
    try {
      await handle(req, ctx.res);
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

/** A fresh ES256 signing key as a private JWK, for the service to persist in its key store. */
export async function generateSigningJwk(): Promise<JWK & { kty: string; kid: string; alg: string; use: string }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(await exportJWK(publicKey));
  return { ...jwk, kty: 'EC', kid, alg: 'ES256', use: 'sig' };
}
