/**
 * A real Merx for the suite: the embedded mode as its own process on free HTTP and gRPC ports,
 * started once per mocha run and shared by every file (each test makes its own merchant). Build
 * the repository first (`npm run build`): this starts services/embedded/dist/src/main.js.
 *
 * Settings the tests rely on (as the Node SDK's suite): the token endpoint's throttle and the
 * sandbox plan's buckets roomy, a bulk class of 5,000 items/s so 10,000 lines import quickly,
 * and webhook retries within seconds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const repoRoot = path.resolve(packageRoot, '../..');
export const merxBin = path.join(packageRoot, 'bin/merx.js');
const embeddedMain = path.join(repoRoot, 'services/embedded/dist/src/main.js');

const SERVER_ENV: Record<string, string> = {
  LOG_LEVEL: 'warn',
  MERX_THROTTLE_TOKEN_ENDPOINT: '{"limit":1000,"window_seconds":60}',
  MERX_THROTTLE_PLANS:
    '{"sandbox":{"burst":{"capacity":1000,"refill_per_second":500},"writes":{"capacity":1000,"refill_per_second":500},"sensitive":{"limit":100,"window_seconds":60}}}',
  MERX_THROTTLE_BULK: '{"sandbox":5000}',
  MERX_WEBHOOK_RETRY_SCHEDULE: '500ms,500ms,1s',
  MERX_WEBHOOK_RETRY_WINDOW: '3s',
  MERX_WEBHOOK_TIMEOUT: '3s',
  MERX_WEBHOOK_CONNECT_TIMEOUT: '1s',
};

export interface Merchant {
  id: string;
  apiKey: string;
  keyId: string;
}

export interface MerxServer {
  baseUrl: string;
  grpcUrl: string;
  operatorToken: string;
  dataDir: string;
  createMerchant(name?: string): Promise<Merchant>;
  operator(method: string, route: string, body?: unknown): Promise<unknown>;
  logTail(): string;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

let shared: Promise<MerxServer> | undefined;

export function merxServer(): Promise<MerxServer> {
  shared ??= start();
  return shared;
}

async function start(): Promise<MerxServer> {
  if (!existsSync(embeddedMain)) throw new Error(`${embeddedMain} is missing: run \`npm run build\` at the repository root first`);
  if (!existsSync(merxBin)) throw new Error(`${merxBin} is missing: run \`npm run build\` at the repository root first`);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'merx-cli-'));
  const port = await freePort();
  const grpcPort = await freePort();
  const logPath = path.join(dataDir, 'server.log');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...SERVER_ENV,
    PORT: String(port),
    GRPC_PORT: String(grpcPort),
    ADMIN_PORT: '0',
    MERX_DATA_DIR: path.join(dataDir, 'data'),
  };
  for (const name of ['MERX_API_KEY', 'MERX_BASE_URL', 'MERX_GRPC_URL', 'MERX_LOG', 'MERX_OPERATOR_TOKEN', 'MERX_PROFILE', 'MERX_CONFIG_DIR']) delete env[name];
  const log = openSync(logPath, 'a');
  const child: ChildProcess = spawn(process.execPath, [embeddedMain], { cwd: repoRoot, env, stdio: ['ignore', log, log] });
  child.unref();
  process.once('exit', () => {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const logTail = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8').split('\n').slice(-40).join('\n') : '');
  const devJson = path.join(dataDir, 'data', 'dev.json');
  const deadline = Date.now() + 180_000;
  let credentials: { base_url: string; grpc_url?: string; operator_token: string } | undefined;
  while (!credentials) {
    if (child.exitCode !== null) throw new Error(`Merx exited with ${child.exitCode}:\n${logTail()}`);
    if (Date.now() > deadline) throw new Error(`Merx did not start within 180 s:\n${logTail()}`);
    if (existsSync(devJson)) {
      try {
        credentials = JSON.parse(readFileSync(devJson, 'utf8'));
      } catch {
        // written as we read it
      }
    }
    if (!credentials) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const baseUrl = credentials.base_url.replace('localhost', '127.0.0.1');
  const grpcUrl = (credentials.grpc_url ?? `localhost:${grpcPort}`).replace('localhost', '127.0.0.1');
  const operatorToken = credentials.operator_token;
  const operator = async (method: string, route: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${baseUrl}${route}`, {
      method,
      headers: { Authorization: `Bearer ${operatorToken}`, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    baseUrl,
    grpcUrl,
    operatorToken,
    dataDir,
    operator,
    logTail,
    async createMerchant(name) {
      const suffix = randomUUID().slice(0, 10);
      const answer = (await operator('POST', '/admin/v1/merchants', {
        name: name ?? `CLI ${suffix}`,
        owner: { email: `owner-${suffix}@cli-tests.example` },
      })) as {
        merchant: { id: string };
        api_key: { id: string; secret: string };
      };
      return { id: answer.merchant.id, apiKey: answer.api_key.secret, keyId: answer.api_key.id };
    },
  };
}

/** Waits for `condition` to give a truthy value (polling every 100 ms), up to `timeoutMs`. */
export async function eventually<T>(
  condition: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what = 'the condition',
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
