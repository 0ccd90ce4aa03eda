import {
  createServiceApp,
  listen,
  migrateSchema,
  mountRouter,
  Outbox,
  purgeExpiredIdempotencyKeys,
  scheduleMaintenance,
  OutboxRelay,
  type Bus,
  type Db,
  type Logger,
  type RunningServer,
} from '@merx/kit';
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

export interface RunningOauth extends RunningServer {
  outbox: Outbox;
  stop(): Promise<void>;
}

export async function startOauth(deps: OauthDeps): Promise<RunningOauth> {
  await migrateSchema(deps.db, OAUTH_SCHEMA, oauthMigrations);
  const outbox = new Outbox(deps.db, OAUTH_SCHEMA);
  const relay = new OutboxRelay({ db: deps.db, bus: deps.bus, outbox, logger: deps.logger, service: 'oauth' });
  const signingKeys = await loadOrCreateSigningKeys(deps.db, generateSigningJwk);
  const provider = createProvider({
    issuer: deps.issuer,
    audience: deps.audience,
    accessTokenTtlSeconds: deps.accessTokenTtlSeconds,
    cookieKeys: [deps.cookieSecret],
    jwks: { keys: signingKeys },
    db: deps.db,
    schema: OAUTH_SCHEMA,
    findApiKeyClient: (clientId) => findApiKeyClientByClientId(deps.db, clientId),
    onTokenIssued: ({ clientId }) => {
      touchApiKeyLastUsed(deps.db, clientId, new Date()).catch((error: unknown) => deps.logger.warn({ err: error }, 'could not record key use'));
    },
  });
  provider.on('server_error', (_ctx: unknown, error: Error) => deps.logger.error({ err: error }, 'oidc-provider server error'));

  const app = createServiceApp({
    service: 'oauth',
    logger: deps.logger,
    readiness: [
      { name: 'database', check: () => deps.db.ping() },
      { name: 'bus', check: () => { if (!deps.bus.isConnected()) throw new Error('broker not connected'); } },
    ],
    beforeJsonBody: (koa) => mountProvider(koa, provider),
    routes: (koa) => mountRouter(koa, adminRoutes(outbox, deps.operatorToken)),
  });
  const server = await listen(app, deps.port, deps.host);
  relay.start();
  const maintenance = scheduleMaintenance(
    [
      { name: 'expired idempotency keys', run: () => purgeExpiredIdempotencyKeys(deps.db, OAUTH_SCHEMA) },
      { name: 'expired oidc payloads', run: () => deleteExpiredOidcPayloads(deps.db, { schema: OAUTH_SCHEMA }) },
    ],
    deps.logger,
  );
  return {
    ...server,
    outbox,
    async stop() {
      maintenance.stop();
      await server.close();
      await relay.stop();
    },
  };
}
