import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `services/` of this checkout: every service's entry point is `services/<name>/dist/src/main.js`. */
export const servicesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

export interface ServiceProcess {
  name: string;
  /** The service's own origin on the loopback interface. */
  url: string;
  port: number;
  /** Its admin listener on the loopback interface: /metrics and the detailed /readyz. */
  adminUrl: string;
  child: ChildProcess;
  logFile: string;
  /** Resolves with the exit code (null after a signal) once the process has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

export interface SpawnServiceOptions {
  name: string;
  port: number;
  adminPort: number;
  env: Record<string, string>;
  logFile: string;
  /** Each output line as it is written, besides the log file (the launcher shows them). */
  onLine?: (line: string) => void;
  /** Node options before the script (a benchmark's `--cpu-prof`). */
  execArgv?: string[];
  readyTimeoutMs?: number;
}

export function lastLines(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Starts one service as its own process, exactly as a container would run it, and resolves once
 * its /readyz answers 200 and its admin listener is open. A process that exits first fails at once, with the end of its log.
 */
export async function startServiceProcess(options: SpawnServiceOptions): Promise<ServiceProcess> {
  const { name, port, adminPort, logFile } = options;
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(process.execPath, [...(options.execArgv ?? []), path.join(servicesDir, name, 'dist/src/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      ...options.env,
      PORT: String(port),
      HOST: options.env.HOST ?? '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      ADMIN_HOST: options.env.ADMIN_HOST ?? '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.pipe(log, { end: false });
    if (options.onLine) {
      let partial = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop()!;
        for (const line of lines) if (line) options.onLine!(line);
      });
    }
  }
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      log.end();
      resolve(code);
    }),
  );
  const service: ServiceProcess = {
    name,
    url: `http://127.0.0.1:${port}`,
    port,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    child,
    logFile,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  try {
    await waitUntilReady(service, options.readyTimeoutMs ?? 60_000);
  } catch (error) {
    await service.stop();
    throw error;
  }
  return service;
}

async function waitUntilReady(service: ServiceProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void service.exited.then((code) => {
    exitCode = code;
  });
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`${service.name} exited during start-up (code ${exitCode}):\n${lastLines(service.logFile)}`);
    try {
      const response = await fetch(`${service.url}/readyz`);
      await response.arrayBuffer();
      // The admin listener opens just after the public port: started means both answer.
      if (response.status === 200) {
        const admin = await fetch(`${service.adminUrl}/healthz`);
        await admin.arrayBuffer();
        if (admin.status === 200) return;
      }
    } catch {
      /* not listening yet */
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${service.name} was not ready within ${timeoutMs} ms:\n${lastLines(service.logFile)}`);
}
