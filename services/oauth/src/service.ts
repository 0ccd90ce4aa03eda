import { mountRouter, startService, type Bus, type Db, type Logger, type RunningService } from '@merx/kit';
import { createProvider, deleteExpiredOidcPayloads, generateSigningJwk, mountProvider } from './provider/index.js';
import { adminRoutes } from './routes/admin.js';
import { findApiKeyClientByClientId, touchApiKeyLastUsed } from './store/accounts-store.js';
import { OAUTH_SCHEMA, oauthMigrations } from './store/migrations.js';
import { loadOrCreateSigningKeys } from './store/signing-keys-store.js';

export interface OauthDeps {
  db: Db;
  bus: Bus;
  logger: Logger;
  /** `{base_url}/oauth`: what tokens name as their issuer. */
  issuer: string;
  audience: string;
  accessTokenTtlSeconds: number;
  operatorToken: string;
  cookieSecret: string;
  port: number;
  host?: string;
}

export type RunningOauth = RunningService;

export async function startOauth(deps: OauthDeps): Promise<RunningOauth> {
  const { db, logger } = deps;
  let provider: ReturnType<typeof createProvider> | undefined;
  return startService({
    name: 'oauth',
    schema: OAUTH_SCHEMA,
    migrations: oauthMigrations,
    db,
    bus: deps.bus,
    logger,
    port: deps.port,
    ...(deps.host ? { host: deps.host } : {}),
    // Signing keys live in the schema, so the provider is made once it is migrated.
    prepare: async () => {
      provider = createProvider({
        issuer: deps.issuer,
        audience: deps.audience,
        accessTokenTtlSeconds: deps.accessTokenTtlSeconds,
        cookieKeys: [deps.cookieSecret],
        jwks: { keys: await loadOrCreateSigningKeys(db, generateSigningJwk) },
        db,
        schema: OAUTH_SCHEMA,
        findApiKeyClient: (clientId) => findApiKeyClientByClientId(db, clientId),
        onTokenIssued: ({ clientId }) => {
          touchApiKeyLastUsed(db, clientId, new Date()).catch((error: unknown) => logger.warn({ err: error }, 'could not record key use'));
        },
      });
      provider.on('server_error', (_ctx: unknown, error: Error) => logger.error({ err: error }, 'oidc-provider server error'));
    },
    // The provider reads its own form bodies, so it goes before JSON parsing.
    beforeJsonBody: (koa) => mountProvider(koa, provider!),
    routes: (koa, outbox) => mountRouter(koa, adminRoutes(outbox, deps.operatorToken)),
    maintenance: [{ name: 'expired oidc payloads', run: () => deleteExpiredOidcPayloads(db, { schema: OAUTH_SCHEMA }) }],
  });
}
