import type Koa from 'koa';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { errors } from 'oidc-provider';
import type { Adapter, ClientInstance, Configuration, GrantHandler, KoaContextWithOIDC, TokenInstance } from 'oidc-provider';
import type { Db } from '@merx/kit';
import { scopeNames } from '@merx/contracts';
import { createPostgresAdapterFactory } from './adapter.js';
import { parseApiKey, parseClientId, verifyApiKey } from './api-keys.js';
import { isAppClientId, verifyAppSecret } from './app-clients.js';

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

/** A third-party app registered by the operator; merchants install it with authorization code + PKCE. */
export interface AppClient {
  clientId: string;
  /** `hashAppSecret(secret)`. */
  secretHash: string;
  name: string;
  redirectUris: string[];
  /** The scopes the app may ask for; a merchant grants a subset. */
  scopes: string[];
}

/**
 * One of Merx's own clients (the console): authorization code + PKCE like an app, but trusted by
 * the platform, so its users are never asked for consent and its tokens carry every scope the
 * signed-in user holds.
 */
export interface FirstPartyClient {
  clientId: string;
  /** `hashAppSecret(secret)`; the secret comes from configuration. */
  secretHash: string;
  name: string;
  redirectUris: string[];
}

/** A user who can log in on the interaction pages, as tokens need them. */
export interface MerxAccount {
  userId: string;
  merchantId: string;
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
  /** Private keys, all published in the JWKS; `signingKid` (default: the first) signs. */
  jwks: { keys: JWK[] };
  signingKid?: string;
  /** Lifetime of refresh tokens of apps; default 30 days. Each use rotates the token. */
  refreshTokenTtlSeconds?: number;
  db: Db;
  /** Schema of the `oidc_payloads` table; default `oauth`. */
  schema?: string;
  findApiKeyClient(clientId: string): Promise<ApiKeyClient | undefined>;
  findAppClient?(clientId: string): Promise<AppClient | undefined>;
  /** Merx's own clients, registered from configuration; their users skip the consent screen. */
  firstPartyClients?: FirstPartyClient[];
  /** undefined when the user is gone or its merchant is suspended: no login, no token, no refresh. */
  findAccount?(userId: string): Promise<MerxAccount | undefined>;
  /** The grant the user's merchant already gave this app, so consent is asked only for what is missing. */
  findInstalledGrantId?(userId: string, clientId: string): Promise<string | undefined>;
  /** Awaited after a token is minted and before it is answered; a throw fails the request. */
  onTokenIssued?(info: TokenIssued): void | Promise<void>;
  /** The merchant's plan, put in access tokens as `plan`: the gateway sizes throttle budgets by it. */
  merchantPlan?(merchantId: string): Promise<{ plan: string; mode: string } | undefined>;
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
 * Neither API keys nor apps are registered with oidc-provider: each request looks its client up
 * (`findApiKeyClient` for `mx_<mode>_...` ids, `findAppClient` for `mxapp_...`), so a revoked key
 * or a suspended merchant stops working at once. oidc-provider reads client metadata through the
 * `Client` model's adapter, which is the seam used here. `client_secret` carries the stored hash,
 * never a secret: `compareClientSecret` is replaced on this provider's Client class to verify
 * the presented secret against it.
 */
function lookupClientAdapter(options: Pick<CreateProviderOptions, 'findApiKeyClient' | 'findAppClient' | 'firstPartyClients'>): Adapter {
  const managedElsewhere = async (): Promise<never> => {
    throw new Error('API keys and apps are managed by the account store, not by oidc-provider');
  };
  const firstParty = new Map((options.firstPartyClients ?? []).map((client) => [client.clientId, client]));
  return {
    async find(clientId) {
      const own = firstParty.get(clientId);
      if (own) return firstPartyClientMetadata(own);
      if (isAppClientId(clientId)) return appClientMetadata(clientId, await options.findAppClient?.(clientId));
      if (!parseClientId(clientId)) return undefined;
      const record = await options.findApiKeyClient(clientId);
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

function appClientMetadata(clientId: string, app: AppClient | undefined) {
  if (!app || app.clientId !== clientId) return undefined;
  return {
    client_id: clientId,
    client_secret: app.secretHash,
    client_name: app.name,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: app.redirectUris,
    // Basic or post both work (oidc-provider accepts either for a secret-based method).
    token_endpoint_auth_method: 'client_secret_basic',
    scope: app.scopes.filter((name) => MERX_SCOPES.has(name)).join(' '),
  };
}

function firstPartyClientMetadata(client: FirstPartyClient) {
  return {
    client_id: client.clientId,
    client_secret: client.secretHash,
    client_name: client.name,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: 'client_secret_basic',
    scope: scopeNames.join(' '),
  };
}

/**
 * What a signed-in user may do through a first-party client. Merchant users have no roles yet:
 * every user acts with every merchant scope, as the owner does. Roles narrow this one place.
 */
export function scopesOfMerchantUser(_account: MerxAccount): string[] {
  return [...scopeNames];
}

/**
 * The recipe oidc-provider documents for skipping consent for first-party clients: a grant is
 * made on the spot for the signed-in user with the scopes that user holds. Third-party apps
 * never take this path; their grants come from the consent page.
 */
async function firstPartyGrant(provider: Provider, audience: string, account: MerxAccount, clientId: string) {
  const grant = new provider.Grant({ accountId: account.userId, clientId });
  const scopes = scopesOfMerchantUser(account).join(' ');
  grant.addResourceScope(audience, scopes);
  // Merx scopes are also OIDC-level scopes to the provider (client credentials needs them there), so both lists hold them.
  grant.addOIDCScope(scopes);
  await grant.save();
  return grant;
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
  const signingKey = options.signingKid === undefined ? options.jwks.keys[0] : options.jwks.keys.find((key) => key.kid === options.signingKid);
  if (!signingKey) throw new Error('createProvider needs its signing key in jwks.keys');
  if (typeof signingKey.d !== 'string') throw new Error('jwks.keys must be private keys');
  if (options.cookieKeys.length === 0) throw new Error('createProvider needs at least one cookie key');
  if (!Number.isSafeInteger(options.accessTokenTtlSeconds) || options.accessTokenTtlSeconds <= 0) {
    throw new Error('accessTokenTtlSeconds must be a positive integer');
  }
  const alg = signingAlgorithm(signingKey);
  const kid = signingKey.kid;
  const ttl = options.accessTokenTtlSeconds;
  const { audience } = options;
  const refreshTtl = options.refreshTokenTtlSeconds ?? 30 * 24 * 3600;
  const issuerPath = new URL(options.issuer).pathname.replace(/\/+$/, '');
  const findAccount = options.findAccount ?? (async () => undefined);
  const firstPartyIds = new Set((options.firstPartyClients ?? []).map((client) => client.clientId));

  const postgresAdapter = createPostgresAdapterFactory(options.db, { schema: options.schema });
  const clientAdapter = lookupClientAdapter(options);

  const configuration: Configuration = {
    adapter: (model: string) => (model === 'Client' ? clientAdapter : postgresAdapter(model)),
    clients: [],
    jwks: { keys: options.jwks.keys.map((key) => ({ ...key })) },
    // Signed, HttpOnly and SameSite=Lax: sent on the top-level redirect from the app, never on a cross-site POST.
    cookies: {
      keys: options.cookieKeys,
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
    },
    scopes: [...scopeNames],
    // Apps get codes only (no implicit or hybrid tokens in URLs).
    responseTypes: ['code'],
    pkce: { methods: ['S256'], required: () => true },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `${issuerPath}/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, sub: string) => {
      const account = await findAccount(sub);
      if (!account) return undefined;
      return { accountId: sub, merchantId: account.merchantId, claims: async () => ({ sub }) };
    },
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const oidc = ctx.oidc as unknown as {
        result?: { consent?: { grantId?: string } };
        session?: { accountId?: string };
        client: ClientInstance;
        provider: Provider;
      };
      const accountId = oidc.session?.accountId;
      if (accountId && firstPartyIds.has(oidc.client.clientId)) {
        const account = await findAccount(accountId);
        return account ? firstPartyGrant(oidc.provider, audience, account, oidc.client.clientId) : undefined;
      }
      const grantId = oidc.result?.consent?.grantId ?? (accountId ? await options.findInstalledGrantId?.(accountId, oidc.client.clientId) : undefined);
      if (!grantId) return undefined;
      const grant = (await oidc.provider.Grant.find(grantId)) as { accountId?: string; clientId?: string } | undefined;
      return grant && grant.accountId === accountId && grant.clientId === oidc.client.clientId ? grant : undefined;
    },
    // Apps act for the merchant while nobody is signed in: their refresh tokens do not die with the browser session.
    issueRefreshToken: async (_ctx: unknown, client: ClientInstance) =>
      (client as unknown as { grantTypeAllowed(type: string): boolean }).grantTypeAllowed('refresh_token'),
    expiresWithSession: async () => false,
    // Every use rotates: a refresh token presented twice was stolen or replayed, and oidc-provider then revokes the grant.
    rotateRefreshToken: true,
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
      // The console's sign-out revokes its refresh token, which ends the whole grant (RFC 7009).
      revocation: { enabled: true },
      pushedAuthorizationRequests: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => {
          if (Array.isArray(oneOf)) return oneOf.includes(audience) ? audience : oneOf;
          return oneOf ?? audience;
        },
        useGrantedResource: async () => true,
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
    routes: { token: '/token', jwks: '/jwks', authorization: '/auth', revocation: '/token/revocation' },
    ttl: {
      AccessToken: ttl,
      ClientCredentials: ttl,
      AuthorizationCode: 60,
      Interaction: 3600,
      Session: 14 * 24 * 3600,
      Grant: refreshTtl,
      RefreshToken: refreshTtl,
    },
    extraTokenClaims: async (ctx: KoaContextWithOIDC, token: TokenInstance) => {
      const keyMerchant = merchantIdOf(token.client);
      if (keyMerchant) return { merchant_id: keyMerchant };
      // App tokens act for the merchant of the user who consented.
      const accountId = typeof token.accountId === 'string' ? token.accountId : undefined;
      if (!accountId) return undefined;
      const loaded = ctx.oidc.entities.Account as { accountId?: string; merchantId?: string } | undefined;
      const merchantId = loaded?.accountId === accountId ? loaded.merchantId : (await findAccount(accountId))?.merchantId;
      if (!merchantId) throw new errors.InvalidGrant('the user of this grant can no longer act for a merchant');
      return { merchant_id: merchantId };
    },
    // Browsers asking for HTML get the same standard OAuth JSON body; never a page, never a stack.
    renderError: async (ctx: Koa.Context, out: Record<string, unknown>) => {
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = out;
    },
  };

  const { merchantPlan } = options;
  type ClaimsHook = (ctx: KoaContextWithOIDC, token: TokenInstance) => Promise<Record<string, unknown> | undefined>;
  const merchantClaims = configuration.extraTokenClaims as ClaimsHook | undefined;
  if (merchantPlan && merchantClaims) {
    configuration.extraTokenClaims = async (ctx: KoaContextWithOIDC, token: TokenInstance) => {
      const claims = await merchantClaims(ctx, token);
      const merchantId = claims?.merchant_id;
      const account = typeof merchantId === 'string' ? await merchantPlan(merchantId) : undefined;
      // Services decide by these without a lookup: throttle budgets by plan, https-only webhooks by mode.
      return account ? { ...claims, plan: account.plan, merchant_mode: account.mode } : claims;
    };
  }

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
  provider.Client.prototype.compareClientSecret = function compareHashedSecret(this: ClientInstance, presented: string) {
    const stored = this.clientSecret;
    if (typeof stored !== 'string' || typeof presented !== 'string') return false;
    if (isAppClientId(this.clientId) || firstPartyIds.has(this.clientId)) return verifyAppSecret(presented, stored);
    return parseApiKey(presented)?.clientId === this.clientId && verifyApiKey(presented, stored);
  };
  provider.proxy = true;
  return provider;
}

/** A fresh ES256 signing key as a private JWK, for the service to persist in its key store. */
export async function generateSigningJwk(): Promise<JWK & { kty: string; kid: string; alg: string; use: string }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(await exportJWK(publicKey));
  return { ...jwk, kty: 'EC', kid, alg: 'ES256', use: 'sig' };
}
