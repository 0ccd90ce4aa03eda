import { z } from 'zod';

export { z } from 'zod';

/**
 * Configuration is a schema checked before any port opens. A bad or missing setting stops the
 * process with one line naming every offending variable, never a stack trace.
 */
export class ConfigError extends Error {
  constructor(readonly service: string, readonly problems: string[]) {
    super(`${service}: configuration error: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig<Schema extends z.ZodType>(service: string, schema: Schema, env: Record<string, string | undefined> = process.env): z.infer<Schema> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    return `${name} ${issue.message}`;
  });
  throw new ConfigError(service, problems);
}

/** For main.ts: print the single line and exit instead of letting a stack trace out. */
export function exitOnConfigError(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  throw error;
}

const urlWithProtocols = (protocols: string[], example: string) =>
  z.string({ error: `is required (e.g. ${example})` }).refine((value) => {
    try {
      return protocols.includes(new URL(value).protocol);
    } catch {
      return false;
    }
  }, `must be a ${protocols.join(' or ')}// URL (e.g. ${example})`);

export const configFields = {
  port: (fallback: number) => z.coerce.number({ error: 'must be a port number' }).int().min(0).max(65535).default(fallback),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  databaseUrl: urlWithProtocols(['postgres:', 'postgresql:'], 'postgres://merx@localhost:5432/merx'),
  amqpUrl: urlWithProtocols(['amqp:', 'amqps:'], 'amqp://guest:guest@localhost:5672'),
  redisUrl: urlWithProtocols(['redis:', 'rediss:'], 'redis://localhost:6379'),
  httpUrl: (example: string) => urlWithProtocols(['http:', 'https:'], example).transform((value) => value.replace(/\/+$/, '')),
  secret: (what: string) =>
    z.string({ error: `is required (${what}); generate one with: openssl rand -base64 32` }).min(32, `must be at least 32 characters (${what})`),
  positiveInt: (fallback: number) => z.coerce.number().int().positive().default(fallback),
};
