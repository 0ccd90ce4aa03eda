/**
 * Runs the built `merx` as a user would: a subprocess with its own config directory, against the
 * suite's Merx, with stdin given or closed, stdout and stderr captured. `inTerminal` runs it under
 * a pseudo-terminal (util-linux `script`), for prompts, tables and the progress bar.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { merxBin, type Merchant, type MerxServer } from './server.js';

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  input?: string;
  cwd?: string;
  timeoutMs?: number;
}

export class Cli {
  readonly configDir: string;

  constructor(
    readonly server: MerxServer,
    readonly merchant?: Merchant,
  ) {
    this.configDir = mkdtempSync(path.join(tmpdir(), 'merx-cli-config-'));
  }

  env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MERX_CONFIG_DIR: this.configDir,
      MERX_BASE_URL: this.server.baseUrl,
      MERX_GRPC_URL: this.server.grpcUrl,
      NO_COLOR: '1',
    };
    for (const name of ['MERX_API_KEY', 'MERX_PROFILE', 'MERX_OPERATOR_TOKEN', 'MERX_LOG', 'FORCE_COLOR']) delete env[name];
    if (this.merchant) env.MERX_API_KEY = this.merchant.apiKey;
    for (const [name, value] of Object.entries(extra)) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    return env;
  }

  spawn(args: string[], options: CliOptions = {}): ChildProcess {
    return spawn(process.execPath, [merxBin, ...args], { env: this.env(options.env), cwd: options.cwd ?? this.configDir, stdio: ['pipe', 'pipe', 'pipe'] });
  }

  run(args: string[], options: CliOptions = {}): Promise<RunResult> {
    const child = this.spawn(args, options);
    return collect(child, options);
  }

  /** Runs and parses stdout as JSON, failing with the whole output when the exit code is not 0. */
  async json<T = any>(args: string[], options: CliOptions = {}): Promise<T> {
    const result = await this.run(args, options);
    if (result.code !== 0) throw new Error(`merx ${args.join(' ')} exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  }

  /**
   * Under a pseudo-terminal: stdin, stdout and stderr are all the terminal (so `stdout` holds
   * both). Each answer of `dialog` is typed once its prompt has appeared, as a person would.
   */
  inTerminal(args: string[], options: CliOptions & { dialog?: { prompt: RegExp; answer: string }[] } = {}): Promise<RunResult> {
    const command = [process.execPath, merxBin, ...args].map((word) => `'${word.replace(/'/g, "'\\''")}'`).join(' ');
    const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
      env: { ...this.env(options.env), TERM: 'xterm', COLUMNS: '200', LINES: '50' },
      cwd: options.cwd ?? this.configDir,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let seen = '';
    const dialog = [...(options.dialog ?? [])];
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      while (dialog[0] && dialog[0].prompt.test(seen)) {
        child.stdin!.write(dialog.shift()!.answer);
        seen = '';
      }
    });
    return collect(child, { ...options, keepStdinOpen: true });
  }
}

function collect(child: ChildProcess, options: CliOptions & { keepStdinOpen?: boolean }): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  if (options.input !== undefined) child.stdin!.write(options.input);
  if (!options.keepStdinOpen) child.stdin!.end();
  const timeout = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timeout);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Waits until `child` has written `pattern` to stderr (or stdout), and returns what it wrote so far. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      if (pattern.test(seen)) {
        cleanup();
        resolve(seen);
      }
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no ${pattern} within ${timeoutMs} ms; saw:\n${seen}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stderr!.off('data', onData);
      child.stdout!.off('data', onData);
    };
    child.stderr!.on('data', onData);
    child.stdout!.on('data', onData);
  });
}
