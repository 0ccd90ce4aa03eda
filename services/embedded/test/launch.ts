import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { servicesDir } from '../src/cluster/service-process.js';

/** What the launcher tests and the crash tests spawn: `node services/embedded/dist/src/<entry>.js`. */
export interface Launched {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

export function launch(entry: 'main' | 'main-distributed', env: Record<string, string>): Launched {
  const child = spawn(process.execPath, [path.join(servicesDir, 'embedded/dist/src', `${entry}.js`)], {
    // GRPC_PORT and ADMIN_PORT 0: free ports, so launches side by side never clash on 50051 or 9080.
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', GRPC_PORT: '0', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Resolves once the banner is out; fails with the output if the process exits first. */
export async function running(launched: Launched, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void launched.exited.then((code) => (exitCode = code));
  while (!launched.stdout().includes('Merx is running')) {
    if (exitCode !== undefined) throw new Error(`exited with ${exitCode}:\n${launched.stdout()}\n${launched.stderr()}`);
    if (Date.now() > deadline) throw new Error(`no banner within ${timeoutMs} ms:\n${launched.stdout()}\n${launched.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function exitOf(launched: Launched, timeoutMs = 30_000): Promise<number | null> {
  const timer = setTimeout(() => launched.child.kill('SIGKILL'), timeoutMs);
  const code = await launched.exited;
  clearTimeout(timer);
  return code;
}

export async function tokenFor(baseUrl: string, apiKey: string): Promise<string> {
  const clientId = apiKey.split('_').slice(0, 3).join('_');
  const response = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { access_token: string }).access_token;
}
