import { LRUCache } from 'lru-cache';
import type { Middleware } from 'koa';
import { jwtVerify, errors as joseErrors, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { createJwksCache } from './jwks-cache.js';
import { updateContext, type Actor } from './context.js';
import { InsufficientScope, Unauthenticated, Unavailable } from './errors.js';
import { validateRequest } from './request-validation.js';
import type { RevocationList } from './revocations.js';
import { trustedMerchantId, type MerchantId } from './tenancy.js';

export interface AccessClaims {
  merchantId: MerchantId;
  clientId: string;
  scopes: ReadonlySet<string>;
  tokenId: string | undefined;
  expiresAt: number;
  /** The merchant's plan (`sandbox`, `standard`, `scale`) when the token names it; sizes its throttle budgets. */
  plan?: string | undefined;
  /** `sandbox` or `live` when the token names it; live merchants get the stricter rules (https webhooks). */
  mode?: 'sandbox' | 'live' | undefined;
  /** The token's `iat` in seconds: a revocation kills the tokens issued at or before it. */
  issuedAt: number;
  actor: Actor;
}

export interface TokenVerifier {
  verify(token: string): Promise<AccessClaims>;
}

export interface JwksVerifierOptions {
  /** A function when the URL is known only once the oauth service listens (embedded mode); read on first use. */
  jwksUrl: string | (() => string);
  issuer: string;
  audience: string;
  /** Verified tokens are remembered until they expire, so a hop that sees the same token twice verifies it once. */
  cacheSize?: number;
  now?: () => number;
  /** Consulted on every call, cached token or not; while it is not loaded every token is refused with 503. */
  revocations?: RevocationList;
}

const ALLOWED_ALGORITHMS = ['ES256', 'RS256', 'PS256', 'EdDSA'];

function actorOf(payload: JWTPayload & { client_id?: string }): Actor {
  const clientId = String(payload.client_id ?? '');
  if (clientId.startsWith('mx_')) return { type: 'api_key', id: clientId };
  if (typeof payload.sub === 'string' && payload.sub.startsWith('usr_')) return { type: 'user', id: payload.sub };
  return { type: 'app', id: clientId };
}

export function claimsFromPayload(payload: JWTPayload & Record<string, unknown>): AccessClaims {
  const merchantId = payload.merchant_id;
  const clientId = payload.client_id;
  if (typeof merchantId !== 'string' || !merchantId.startsWith('mch_') || typeof clientId !== 'string') {
    throw new Unauthenticated('The access token is not a Merx merchant token.');
  }
  const scope = typeof payload.scope === 'string' ? payload.scope : '';
  return {
    merchantId: trustedMerchantId(merchantId),
    clientId,
    scopes: new Set(scope.split(' ').filter(Boolean)),
    tokenId: payload.jti,
    expiresAt: (payload.exp ?? 0) * 1000,
    plan: typeof payload.plan === 'string' ? payload.plan : undefined,
    mode: payload.merchant_mode === 'sandbox' || payload.merchant_mode === 'live' ? payload.merchant_mode : undefined,
    issuedAt: typeof payload.iat === 'number' ? payload.iat : 0,
    actor: actorOf(payload),
  };
}

export function createJwksTokenVerifier(options: JwksVerifierOptions): TokenVerifier {
  return createTokenVerifier(createJwksCache({ url: options.jwksUrl }), options);
}

export function createTokenVerifier(keys: JWTVerifyGetKey, options: Omit<JwksVerifierOptions, 'jwksUrl'>): TokenVerifier {
  const now = options.now ?? Date.now;
  const cacheSize = options.cacheSize ?? 10_000;
  // Least recently used out: the tokens of busy callers stay while one-off tokens pass through.
  const verified = new LRUCache<string, AccessClaims>({ max: cacheSize });
  const revocations = options.revocations;
  const checkRevocation = (claims: AccessClaims): AccessClaims => {
    if (!revocations) return claims;
    if (!revocations.ready) throw new Unavailable('The list of revoked credentials is not loaded yet.');
    if (revocations.isRevoked(claims)) throw new Unauthenticated('the credential was revoked');
    return claims;
  };
  return {
    async verify(token) {
      const cached = verified.get(token);
      if (cached && cached.expiresAt > now()) return checkRevocation(cached);
      if (cached) verified.delete(token);
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: ALLOWED_ALGORITHMS,
          currentDate: new Date(now()),
        }));
      } catch (error) {
        if (error instanceof Unavailable) throw error;
        if (error instanceof joseErrors.JWKSTimeout || (error instanceof TypeError && /fetch/i.test(error.message))) {
          throw new Unavailable('The token signing keys cannot be fetched right now.', error);
        }
        if (error instanceof joseErrors.JWTExpired) throw new Unauthenticated('The access token has expired.');
        throw new Unauthenticated('The access token is invalid.');
      }
      const claims = claimsFromPayload(payload as JWTPayload & Record<string, unknown>);
      verified.set(token, claims);
      return checkRevocation(claims);
    },
  };
}

export function bearerTokenOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header.trim());
  return match?.[1];
}

/** Every service verifies the token itself: nothing trusts a header the gateway could have been bypassed for. */
export function authenticate(verifier: TokenVerifier): Middleware {
  return async function verifyBearerToken(ctx, next) {
    const header = ctx.get('authorization');
    const token = bearerTokenOf(header);
    if (!token) {
      throw new Unauthenticated(
        header ? 'The Authorization header must be "Bearer <access token>".' : 'A bearer access token is required.',
        header ? 'invalid_request' : 'invalid_token',
      );
    }
    const claims = await verifier.verify(token);
    ctx.state.auth = claims;
    updateContext({ merchantId: claims.merchantId, actor: claims.actor });
    return next();
  };
}

export function authOf(ctx: { state: { auth?: AccessClaims } }): AccessClaims {
  const auth = ctx.state.auth;
  if (!auth) throw new Unauthenticated();
  return auth;
}

/**
 * The route definition names its scope: `router.post('/products', requireScope('products:write'), ...)`.
 * Once the scope holds, the request is checked against its operation in the OpenAPI document (validateRequest).
 */
export function requireScope(scope: string): Middleware {
  const middleware: Middleware = async function checkScope(ctx, next) {
    const auth = authOf(ctx);
    if (!auth.scopes.has(scope)) throw new InsufficientScope(scope);
    return validateRequest(ctx, next);
  };
  return Object.assign(middleware, { requiredScope: scope });
}
