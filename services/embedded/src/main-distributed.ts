import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { claimDataDir, configFields, deploymentField, ensurePortFree, exitOnConfigError, exitOnStartFailure, loadConfig, z } from '@merx/kit';
import amqp from 'amqplib';
import pg from 'pg';
import { startLocalCluster, type LocalCluster } from './cluster/local-cluster.js';
import { clientIdOf, loadOrCreateDevSecrets, readJsonFile, SANDBOX_OWNER_EMAIL, startBanner, writeJsonFile, type DevCredentials } from './dev-files.js';
import { formatServiceLine } from './cluster/log-lines.js';

/**
 * `npm run start:distributed`: the distributed mode without Docker. Every service its own
 * process against the PostgreSQL, RabbitMQ and Redis it is pointed at (the local servers by
 * default), a sandbox merchant and dev.json as the embedded start makes them, and Ctrl-C stops
 * every child.
 */
const launcherConfig = z.object({
  PORT: configFields.port(8080),
  GRPC_PORT: configFields.port(50051),
  LOG_LEVEL: configFields.logLevel,
  MERX_DATA_DIR: z.string().min(1).default('./.merx/distributed'),
  MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080').optional(),
  DATABASE_URL: configFields.databaseUrl.default('postgres://postgres@127.0.0.1:5432/merx'),
  AMQP_URL: configFields.amqpUrl.default('amqp://guest:guest@127.0.0.1:5672'),
  REDIS_URL: configFields.redisUrl.default('redis://127.0.0.1:6379'),
  MERX_DEPLOYMENT: deploymentField,
});

class StartFailed extends Error {}

/** The database named by DATABASE_URL, created on first use: a fresh PostgreSQL needs no manual step. */
async function ensureDatabase(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    return;
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000')
      throw new StartFailed(`PostgreSQL at ${redacted(databaseUrl)} is not usable: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } catch (error) {
    throw new StartFailed(`could not create the database ${name} on ${redacted(databaseUrl)}: ${(error as Error).message}`);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

async function ensureBroker(amqpUrl: string): Promise<void> {
  try {
    const connection = await amqp.connect(amqpUrl, { timeout: 5_000 });
    await connection.close();
  } catch (error) {
    throw new StartFailed(`RabbitMQ at ${redacted(amqpUrl)} is not reachable: ${(error as Error).message}`);
  }
}

function redacted(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/** dev.json of an earlier start is kept while its key still gets a token from this deployment. */
async function keyStillWorks(baseUrl: string, credentials: DevCredentials): Promise<boolean> {
  const response = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientIdOf(credentials.api_key)}:${credentials.api_key}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  await response.arrayBuffer();
  return response.status === 200;
}

async function provisionSandboxMerchant(gatewayUrl: string, publicUrl: string, operatorToken: string): Promise<Omit<DevCredentials, 'grpc_url'>> {
  const response = await fetch(`${gatewayUrl}/admin/v1/merchants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json', 'idempotency-key': randomBytes(16).toString('hex') },
    body: JSON.stringify({ name: 'Sandbox merchant', mode: 'sandbox', owner: { email: SANDBOX_OWNER_EMAIL } }),
  });
  const body = (await response.json()) as {
    merchant: { id: string };
    api_key: { secret: string };
    owner: { email: string; password: string };
    detail?: string;
  };
  if (response.status !== 201) throw new StartFailed(`could not create the sandbox merchant: ${response.status} ${body.detail ?? ''}`);
  return {
    base_url: publicUrl,
    merchant_id: body.merchant.id,
    api_key: body.api_key.secret,
    operator_token: operatorToken,
    owner_email: body.owner.email,
    owner_password: body.owner.password,
  };
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig('merx', launcherConfig);
  } catch (error) {
    exitOnConfigError(error);
  }
  const dataDir = path.resolve(config.MERX_DATA_DIR);
  // Nothing is written before the servers and the port have been checked.
  await ensurePortFree(config.PORT, '127.0.0.1');
  await ensurePortFree(config.GRPC_PORT, '127.0.0.1');
  await ensureDatabase(config.DATABASE_URL);
  await ensureBroker(config.AMQP_URL);
  const firstStart = !existsSync(dataDir);
  await mkdir(dataDir, { recursive: true });
  const release = claimDataDir(dataDir);
  let cluster: LocalCluster | undefined;
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await cluster?.stop();
    release();
    process.exit(code);
  };
  const failedStart = async (error: unknown): Promise<never> => {
    stopping = true;
    await cluster?.stop().catch(() => undefined);
    release();
    if (firstStart) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  const secrets = await loadOrCreateDevSecrets(dataDir);
  const logDir = path.join(dataDir, 'logs');
  process.stdout.write(`Starting Merx (distributed mode, deployment ${config.MERX_DEPLOYMENT}): logs in ${logDir}\n`);
  cluster = await startLocalCluster({
    databaseUrl: config.DATABASE_URL,
    amqpUrl: config.AMQP_URL,
    redisUrl: config.REDIS_URL,
    deployment: config.MERX_DEPLOYMENT,
    operatorToken: secrets.operator_token,
    cookieSecret: secrets.cookie_secret,
    consoleClientSecret: secrets.console_client_secret,
    secretKeys: secrets.secrets_keys,
    gatewayPort: config.PORT,
    grpcPort: config.GRPC_PORT,
    ...(config.MERX_PUBLIC_URL ? { publicUrl: config.MERX_PUBLIC_URL } : {}),
    logDir,
    logLevel: config.LOG_LEVEL,
    // Tracing settings reach every service as they reach a container: each names itself merx-<service>.
    env: Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[1] !== undefined)),
    onLine: (service, line) => {
      const formatted = formatServiceLine(service, line);
      if (formatted) process.stdout.write(`${formatted}\n`);
    },
    onUnexpectedExit: (service, code) => {
      process.stderr.write(`merx: ${service} exited unexpectedly (code ${code}); stopping every service. Its log: ${path.join(logDir, `${service}.log`)}\n`);
      void stopAll(1);
    },
  }).catch(failedStart);

  const devFile = path.join(dataDir, 'dev.json');
  const earlier = await readJsonFile<DevCredentials>(devFile);
  const reusable = earlier && earlier.operator_token === secrets.operator_token && (await keyStillWorks(cluster.gatewayUrl, earlier));
  const grpcUrl = `${new URL(cluster.publicUrl).hostname}:${cluster.grpcAddress.split(':').at(-1)}`;
  const credentials = reusable
    ? { ...earlier, base_url: cluster.publicUrl, grpc_url: grpcUrl }
    : { ...(await provisionSandboxMerchant(cluster.gatewayUrl, cluster.publicUrl, secrets.operator_token).catch(failedStart)), grpc_url: grpcUrl };
  await writeJsonFile(devFile, credentials);
  const services = Object.values(cluster.processes).map((service) => `${service.name} ${service.url}`);
  const adminListeners = Object.values(cluster.processes).map((service) => `${service.name} ${service.adminUrl}`);
  process.stdout.write(
    startBanner(`Merx is running (distributed mode${reusable ? '' : ', sandbox merchant created'}); Ctrl-C stops every service`, credentials, devFile, [
      `  Services      ${services.join(', ')}`,
      `  Admin         ${adminListeners.join(', ')} (/metrics, /readyz with details)`,
      `  Logs          ${logDir}`,
    ]),
  );
}

// Start-up failures other than configuration: one line, no stack, a non-zero exit.
await main().catch((error: unknown) => exitOnStartFailure('merx', error));
