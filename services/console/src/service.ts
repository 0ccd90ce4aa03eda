import {
  createServiceApp,
  listen,
  migrateSchema,
  scheduleMaintenance,
  type Db,
  type Logger,
  type MigrationMode,
  type ReadinessCheck,
  type RunningServer,
} from '@merx/kit';
import { Sealer } from './domain/sealing.js';
import { AuthorizationServer } from './oauth/authorization-server.js';
import { consolePages } from './routes/index.js';
import { authRoutes } from './routes/auth.js';
import { pageErrors } from './routes/errors.js';
import { cookieIsSecure, type ConsoleSettings } from './settings.js';
import { CONSOLE_SCHEMA, consoleMigrations } from './store/migrations.js';
import { deleteExpiredSessions, deleteStaleSignIns } from './store/sessions-store.js';
import { loadAssets } from './web/assets.js';
import type { Console } from './web/context.js';

export interface ConsoleDeps {
  db: Db;
  logger: Logger;
  settings: ConsoleSettings;
  port: number;
  host?: string;
  now?: () => Date;
  /** `verify` when the deployment's migrate command owns the schema. */
  migrationMode?: MigrationMode;
}

export interface RunningConsole extends RunningServer {
  /** Every check of the public /readyz, for the admin listener's detailed one. */
  readiness: ReadinessCheck[];
  stop(): Promise<void>;
}

/**
 * The merchant console: server-rendered pages under /console, a first-party OAuth client of Merx's
 * own provider that keeps every token server-side (backend-for-frontend) and reads and changes
 * everything through the public API with the signed-in user's token. It owns one schema, the
 * sessions; it publishes no events, so it needs no bus and no outbox.
 */
export async function startConsole(deps: ConsoleDeps): Promise<RunningConsole> {
  const { db, logger, settings } = deps;
  const secureCookies = cookieIsSecure(settings.publicUrl);
  const assets = loadAssets();
  await migrateSchema(db, CONSOLE_SCHEMA, consoleMigrations, deps.migrationMode);
  const console: Console = {
    db,
    logger,
    settings,
    publicOrigin: new URL(settings.publicUrl).origin,
    sealer: new Sealer(settings.clientSecret),
    authorizationServer: new AuthorizationServer(settings),
    assets: assets.urls,
    secureCookies,
    now: deps.now ?? (() => new Date()),
  };
  const readiness: ReadinessCheck[] = [{ name: 'database', check: () => db.ping() }];
  const app = createServiceApp({
    service: 'console',
    logger,
    readiness,
    // Forms are url-encoded: the console reads them itself, before the kit's JSON-only body parser.
    beforeJsonBody: (koa) => {
      koa.use(assets.serve);
      const errors = pageErrors(console);
      koa.use((ctx, next) => (ctx.path === '/console' || ctx.path.startsWith('/console/') ? errors(ctx, next) : next()));
      const auth = authRoutes(console);
      koa.use(auth.routes());
      koa.use(auth.allowedMethods());
      const pages = consolePages(console);
      koa.use(pages.routes());
      koa.use(pages.allowedMethods());
    },
    routes: () => undefined,
  });
  const server = await listen(app, deps.port, deps.host);
  const maintenance = scheduleMaintenance(
    [
      { name: 'expired console sessions', run: () => deleteExpiredSessions(db, console.now(), settings.sessionIdleSeconds) },
      { name: 'abandoned console sign-ins', run: () => deleteStaleSignIns(db, console.now()) },
    ],
    logger,
  );
  return {
    ...server,
    readiness,
    async stop() {
      maintenance.stop();
      await server.close();
    },
  };
}
