import { z } from 'zod';
import { parseProxyList } from './client-address.js';
import { SecretKeyRing } from './sealed-secrets.js';

export { z } from 'zod';

/** Kept here rather than imported from broker-names.ts, which builds on this module. */
const RETIRED_SETTINGS: Record<string, string> = Object.fromEntries(
  [
    'MERX_AUDIT_QUEUE',
    'MERX_WEBHOOKS_QUEUE',
    'MERX_MERCHANTS_QUEUE',
    'MERX_CATALOG_QUEUE',
    'MERX_OAUTH_QUEUE',
    'MERX_THROTTLE_QUEUE',
    'MERX_THROTTLE_KEY_PREFIX',
  ].map((name) => [name, 'is no longer read: every broker and Redis name now comes from MERX_DEPLOYMENT (default merx); remove it']),
);

/**
 * Configuration is a schema checked before any port opens. A bad or missing setting stops the
 * process with one line naming every offending variable, never a stack trace.
 */
export class ConfigError extends Error {
  constructor(
    readonly service: string,
    readonly problems: string[],
  ) {
    super(`${service}: configuration error: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig<Schema extends z.ZodType>(service: string, schema: Schema, env: Record<string, string | undefined> = process.env): z.infer<Schema> {
  const retired = Object.entries(RETIRED_SETTINGS)
    .filter(([name]) => env[name] !== undefined)
    .map(([name, why]) => `${name} ${why}`);
  const result = schema.safeParse(env);
  if (result.success && retired.length === 0) return result.data;
  const problems = (result.success ? [] : result.error.issues).map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    return `${name} ${issue.message}`;
  });
  throw new ConfigError(service, [...problems, ...retired]);
}

/** For main.ts: print the single line and exit instead of letting a stack trace out. */
export function exitOnConfigError(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  throw error;
}

/**
 * For main.ts: a start that fails for another reason than configuration (a port in use, a data
 * directory held by another process, a database that refuses us) prints one line and exits 1.
 * Operators read the line; the stack is only in the debug log.
 */
export function exitOnStartFailure(service: string, error: unknown): never {
  if (error instanceof ConfigError) exitOnConfigError(error);
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${service}: could not start: ${message.split('\n')[0]}\n`);
  process.exit(1);
}

const urlWithProtocols = (protocols: string[], example: string) =>
  z.string({ error: `is required (e.g. ${example})` }).refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    `must be a ${protocols.join(' or ')}// URL (e.g. ${example})`,
  );

export const configFields = {
  port: (fallback: number) => z.coerce.number({ error: 'must be a port number' }).int().min(0).max(65535).default(fallback),
  /** `verify` for replicas of a deployment whose `migrate` command runs once before them. */
  migrationMode: z
    .enum(['apply', 'verify'], { error: 'must be apply (migrate at start) or verify (only check; the migrate command applies)' })
    .default('apply'),
  /** Comma-separated addresses, CIDR ranges, or loopback / linklocal / uniquelocal. */
  trustedProxies: z
    .string()
    .default('')
    .transform((value, context) => {
      try {
        return parseProxyList(value);
      } catch (error) {
        context.addIssue({ code: 'custom', message: `must list addresses or CIDR ranges (${error instanceof Error ? error.message : String(error)})` });
        return z.NEVER;
      }
    }),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  databaseUrl: urlWithProtocols(['postgres:', 'postgresql:'], 'postgres://merx@localhost:5432/merx'),
  amqpUrl: urlWithProtocols(['amqp:', 'amqps:'], 'amqp://guest:guest@localhost:5672'),
  redisUrl: urlWithProtocols(['redis:', 'rediss:'], 'redis://localhost:6379'),
  httpUrl: (example: string) => urlWithProtocols(['http:', 'https:'], example).transform((value) => value.replace(/\/+$/, '')),
  secret: (what: string) =>
    z.string({ error: `is required (${what}); generate one with: openssl rand -base64 32` }).min(32, `must be at least 32 characters (${what})`),
  /** MERX_SECRETS_KEYS: `keyId:base64-32-bytes[,…]`, the first seals signing secrets, all open them. */
  secretKeys: z
    .string({ error: 'is required (keys sealing signing secrets at rest, keyId:base64 of 32 bytes; generate one with: echo "k1:$(openssl rand -base64 32)")' })
    .transform((text, context) => {
      try {
        return SecretKeyRing.parse(text);
      } catch (error) {
        context.addIssue({
          code: 'custom',
          message: `must be comma-separated keyId:base64-of-32-bytes entries, the sealing key first (${error instanceof Error ? error.message : String(error)})`,
        });
        return z.NEVER;
      }
    }),
  preparedStatements: z.enum(['named', 'unnamed'], { error: 'must be named, or unnamed behind a transaction-pooling PgBouncer' }).default('named'),
  /** Milliseconds, 0 allowed (no limit). */
  milliseconds: (fallback: number) => z.coerce.number({ error: 'must be a number of milliseconds' }).int().min(0).default(fallback),
  positiveInt: (fallback: number) => z.coerce.number().int().positive().default(fallback),
  /** `5s`, `30m`, `72h` → milliseconds. */
  duration: (fallback: string) =>
    z
      .string()
      .default(fallback)
      .transform((text, ctx) => {
        const ms = parseDuration(text);
        if (ms === undefined || ms <= 0) {
          ctx.addIssue({ code: 'custom', message: `must be a duration such as 5s, 30m or 72h (got "${text}")` });
          return z.NEVER;
        }
        return ms;
      }),
  /** A schedule of waits, `5s,5m,30m` → milliseconds each. */
  durations: (fallback: string) =>
    z
      .string()
      .default(fallback)
      .transform((text, ctx) => {
        const steps = text.split(',').map((step) => parseDuration(step));
        if (steps.length === 0 || steps.some((step) => step === undefined || step <= 0)) {
          ctx.addIssue({ code: 'custom', message: `must be comma-separated durations such as 5s,5m,30m (got "${text}")` });
          return z.NEVER;
        }
        return steps as number[];
      }),
};

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `1500ms`, `5s`, `30m`, `2h`, `3d` → milliseconds; undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!match) return undefined;
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}
