import { adminListenerSettings, configFields, z } from '@merx/kit';

/** What the console needs from its deployment, whichever launcher starts it. */
export interface ConsoleSettings {
  /** The public origin browsers use (`https://merx.example`); the console lives under `/console`. */
  publicUrl: string;
  /** The gateway as the console reaches it: every page's data comes from the public API through it. */
  gatewayUrl: string;
  /** The oauth service as the console reaches it, for the code exchange, refreshes and revocation. */
  oauthUrl: string;
  /** The console's client secret at the authorization server (MERX_CONSOLE_CLIENT_SECRET). */
  clientSecret: string;
  /** A session ends this long after sign-in, whatever happens. */
  sessionMaxAgeSeconds: number;
  /** ... and this long after its last request. */
  sessionIdleSeconds: number;
}

export const DEFAULT_SESSION_MAX_AGE_SECONDS = 12 * 3600;
export const DEFAULT_SESSION_IDLE_SECONDS = 2 * 3600;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The session cookie is `Secure` everywhere except a plain-http public URL on the developer's own
 * machine, where browsers would drop a Secure cookie. Any other plain-http public URL is refused:
 * a session cookie sent in clear over a network is a session anyone on it can take.
 */
export function cookieIsSecure(publicUrl: string): boolean {
  const url = new URL(publicUrl);
  if (url.protocol === 'https:') return true;
  if (LOOPBACK_HOSTS.has(url.hostname)) return false;
  throw new Error(`MERX_PUBLIC_URL must be https for the console (plain http only on localhost or 127.0.0.1), not ${publicUrl}`);
}

export const consoleConfig = z.object({
  PORT: configFields.port(3006),
  HOST: z.string().default('0.0.0.0'),
  ...adminListenerSettings(9006, '0.0.0.0'),
  LOG_LEVEL: configFields.logLevel,
  DATABASE_URL: configFields.databaseUrl,
  MERX_DB_POOL_SIZE: configFields.positiveInt(5),
  MERX_MIGRATIONS: configFields.migrationMode,
  MERX_DB_CONNECT_TIMEOUT_MS: configFields.milliseconds(5_000),
  MERX_DB_STATEMENT_TIMEOUT_MS: configFields.milliseconds(30_000),
  MERX_DB_PREPARED_STATEMENTS: configFields.preparedStatements,
  MERX_PUBLIC_URL: configFields.httpUrl('https://merx.example').refine((url) => {
    try {
      cookieIsSecure(url);
      return true;
    } catch {
      return false;
    }
  }, 'must be https for the console (plain http only on localhost or 127.0.0.1): its session cookie is Secure'),
  MERX_GATEWAY_URL: configFields.httpUrl('http://gateway:8080').default('http://gateway:8080'),
  MERX_OAUTH_URL: configFields.httpUrl('http://oauth:3001').default('http://oauth:3001'),
  MERX_CONSOLE_CLIENT_SECRET: configFields.secret('authenticates the console at the oauth service; the same value the oauth service has'),
  MERX_CONSOLE_SESSION_HOURS: configFields.positiveInt(DEFAULT_SESSION_MAX_AGE_SECONDS / 3600),
  MERX_CONSOLE_IDLE_MINUTES: configFields.positiveInt(DEFAULT_SESSION_IDLE_SECONDS / 60),
});

export type ConsoleConfig = z.infer<typeof consoleConfig>;

export function settingsFromConfig(config: ConsoleConfig): ConsoleSettings {
  return {
    publicUrl: config.MERX_PUBLIC_URL,
    gatewayUrl: config.MERX_GATEWAY_URL,
    oauthUrl: config.MERX_OAUTH_URL,
    clientSecret: config.MERX_CONSOLE_CLIENT_SECRET,
    sessionMaxAgeSeconds: config.MERX_CONSOLE_SESSION_HOURS * 3600,
    sessionIdleSeconds: config.MERX_CONSOLE_IDLE_MINUTES * 60,
  };
}
