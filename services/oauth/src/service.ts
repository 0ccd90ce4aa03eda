import type { JWK } from 'oidc-provider';
import {
  mountRouter,
  startService,
  type Bus,
  type Consumer,
  type Outbox,
  type Db,
  type Logger,
  type ReadinessCheck,
  type RunningService,
  type TokenVerifier,
  type MigrationMode,
} from '@merx/kit';
import { consumeMerchantEvents } from './events/merchant-events.js';
import { CONSOLE_CLIENT_ID } from '@merx/contracts';
import { createProvider, deleteExpiredOidcPayloads, hashAppSecret, mountProvider, type FirstPartyClient } from './provider/index.js';
import { interactionRoutes } from './interaction/routes.js';
import type { SignInThrottle } from './domain/login-throttle.js';
import { forgetOldLoginFailures } from './store/login-throttle-store.js';
import { appAdminRoutes } from './routes/admin-apps.js';
import { installedAppRoutes } from './routes/apps.js';
import { findAppClient, findInstalledGrantId, findMerxAccount } from './store/app-clients-store.js';
import { adminRoutes } from './routes/admin.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { busAdminRoutes } from './routes/bus-admin.js';
import { listThrottleOverrides, merchantPlanOf, throttleAdminRoutes } from './routes/throttle.js';
import { internalRoutes } from './routes/internal.js';
import { findApiKeyClientByClientId, findMerchant, touchApiKeyLastUsed } from './store/accounts-store.js';
import { authEvents } from './usecases/auth-events.js';
import { OAUTH_SCHEMA, oauthMigrations } from './store/migrations.js';
import { recordGrantRevokedByProvider } from './usecases/app-grants.js';
import { startSigningKeys, type SigningKeys } from './usecases/signing-keys.js';
import { apiKeyUseCases } from './usecases/api-keys.js';
import { revocationsFromStore } from './usecases/revocations.js';

export interface OauthDeps {
  /** `verify` when the deployment's migrate command owns the schema. */
  migrationMode?: MigrationMode;
  /** The service credential (MERX_SERVICE_TOKEN): the API and gRPC then answer only calls through the gateway. Absent: anyone with a token (component tests). */
  gatewayCredential?: string;
  db: Db;
  bus: Bus;
  logger: Logger;
  /** `{base_url}/oauth`: what tokens name as their issuer. */
  issuer: string;
  audience: string;
  accessTokenTtlSeconds: number;
  operatorToken: string;
  /** What other services present to /internal/v1 (MERX_SERVICE_TOKEN); without it those routes refuse everyone. */
  serviceToken?: string;
  cookieSecret: string;
  /** Verifies bearer tokens on /api/v1 routes; consults the process's revocation list. */
  verifier: TokenVerifier;
  /** Extra /readyz checks (the revocation list being loaded). */
  readiness?: ReadinessCheck[];
  port: number;
  host?: string;
  /** Growing delays after failed sign-ins (MERX_SIGNIN_THROTTLE); the defaults when absent. */
  signInThrottle?: SignInThrottle;
  /** The merchant console, a first-party client (MERX_CONSOLE_CLIENT_SECRET); absent, nobody can sign in to it. */
  console?: { clientSecret: string; redirectUri: string };
}

export interface RunningOauth extends RunningService {
  consumer: Consumer;
}

/** The client id of an HTTP Basic header, for attributing a refused attempt. */
function basicClientId(header: string): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const separator = decoded.indexOf(':');
  if (separator <= 0) return undefined;
  try {
    return decodeURIComponent(decoded.slice(0, separator));
  } catch {
    return undefined;
  }
}

export async function startOauth(deps: OauthDeps): Promise<RunningOauth> {
  const { db, logger } = deps;
  const firstPartyClients: FirstPartyClient[] = deps.console
    ? [
        {
          clientId: CONSOLE_CLIENT_ID,
          secretHash: hashAppSecret(deps.console.clientSecret),
          name: 'the Merx console',
          redirectUris: [deps.console.redirectUri],
        },
      ]
    : [];
  let signingKeys: SigningKeys | undefined;
  let outboxOfService: Outbox | undefined;
  const auth = authEvents({ db, outbox: () => outboxOfService, logger });
  // Called again on every signing key rotation: the new provider shares the database, so grants and sessions carry over.
  const buildProvider = (jwks: { keys: JWK[] }, signingKid: string) => {
    const provider = createProvider({
      issuer: deps.issuer,
      audience: deps.audience,
      accessTokenTtlSeconds: deps.accessTokenTtlSeconds,
      cookieKeys: [deps.cookieSecret],
      jwks,
      signingKid,
      findAppClient: (clientId) => findAppClient(db, clientId),
      firstPartyClients,
      findAccount: (userId) => findMerxAccount(db, userId),
      findInstalledGrantId: (userId, clientId) => findInstalledGrantId(db, userId, clientId),
      db,
      schema: OAUTH_SCHEMA,
      findApiKeyClient: (clientId) => findApiKeyClientByClientId(db, clientId),
      merchantPlan: (merchantId) => merchantPlanOf(db, merchantId),
      onTokenIssued: ({ clientId }) => {
        touchApiKeyLastUsed(db, clientId, new Date()).catch((error: unknown) => logger.warn({ err: error }, 'could not record key use'));
      },
    });
    provider.on('server_error', (_ctx: unknown, error: Error) => logger.error({ err: error }, 'oidc-provider server error'));
    provider.on('grant.success', (ctx: { oidc?: { params?: { grant_type?: string } }; body?: { access_token?: unknown } }) => {
      void auth.tokenIssued(ctx.oidc?.params?.grant_type ?? '', ctx.body?.access_token);
    });
    provider.on(
      'grant.error',
      (ctx: { oidc?: { client?: { clientId?: string }; params?: { client_id?: string } }; get(name: string): string }, error: { error?: string }) => {
        if (error?.error !== 'invalid_client') return;
        void auth.clientRefused(ctx.oidc?.client?.clientId ?? ctx.oidc?.params?.client_id ?? basicClientId(ctx.get('authorization')));
      },
    );
    // A refresh token or code used twice: oidc-provider revoked the grant; the merchant's installation and its access tokens go too.
    provider.on('grant.revoked', (_ctx: unknown, grantId: string) => {
      recordGrantRevokedByProvider(outboxOfService!, grantId).catch((error: unknown) =>
        logger.error({ err: error, grant_id: grantId }, 'could not record a revoked grant'),
      );
    });
    return provider;
  };
  const running = await startService({
    name: 'oauth',
    schema: OAUTH_SCHEMA,
    migrations: oauthMigrations,
    migrationMode: deps.migrationMode,
    ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
    db,
    bus: deps.bus,
    logger,
    port: deps.port,
    ...(deps.host ? { host: deps.host } : {}),
    // Signing keys live in the schema, so the provider is made once it is migrated.
    prepare: async () => {
      signingKeys = await startSigningKeys({ db, logger, publishRetiredForSeconds: deps.accessTokenTtlSeconds + 60, build: buildProvider });
    },
    // The provider reads its own form bodies, so it goes before JSON parsing.
    beforeJsonBody: (koa, outbox) => {
      outboxOfService = outbox;
      mountRouter(
        koa,
        interactionRoutes({
          slot: signingKeys!.slot,
          db,
          logger,
          audience: deps.audience,
          secret: deps.cookieSecret,
          firstPartyNames: new Map(firstPartyClients.map((client) => [client.clientId, client.name])),
          ...(deps.signInThrottle ? { signInThrottle: deps.signInThrottle } : {}),
          onLoginDenied: (attempt) => {
            logger.warn({ event: 'auth.denied', reason: 'wrong_password', ...attempt }, 'login denied');
            void auth.loginRefused(attempt.email, attempt.clientId);
          },
        }),
      );
      mountProvider(koa, signingKeys!.slot);
    },
    routes: (koa, outbox) => {
      mountRouter(koa, adminRoutes(outbox, deps.operatorToken));
      mountRouter(koa, appAdminRoutes({ db, operatorToken: deps.operatorToken, rotateSigningKeys: () => signingKeys!.rotate() }));
      mountRouter(koa, installedAppRoutes(outbox, db, deps.verifier));
      mountRouter(koa, throttleAdminRoutes(db, outbox, deps.operatorToken));
      mountRouter(koa, busAdminRoutes(deps.bus, deps.operatorToken));
      mountRouter(koa, apiKeyRoutes(apiKeyUseCases({ db, outbox }), deps.verifier, db));
      mountRouter(
        koa,
        internalRoutes(
          deps.serviceToken,
          revocationsFromStore(db, deps.accessTokenTtlSeconds),
          () => listThrottleOverrides(db),
          (merchantId) => findMerchant(db, merchantId),
        ),
      );
    },
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    maintenance: [
      { name: 'expired oidc payloads', run: () => deleteExpiredOidcPayloads(db, { schema: OAUTH_SCHEMA }) },
      // Longer ago than any sign-in throttle remembers a failure or holds a lock.
      { name: 'old sign-in failures', run: () => forgetOldLoginFailures(db, new Date(Date.now() - 2 * 3_600_000)) },
    ],
  });
  let consumer: Consumer;
  try {
    consumer = await consumeMerchantEvents({ bus: deps.bus, db, logger });
  } catch (error) {
    signingKeys?.stop();
    await running.stop();
    throw error;
  }
  return {
    ...running,
    consumer,
    async stop() {
      // No delivery may start on a database the service is letting go of.
      await consumer.close();
      signingKeys?.stop();
      await running.stop();
    },
  };
}
