import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from './harness/distributed.js';

/**
 * `npm test`: unit and component tests, then the end-to-end suite in the embedded mode, then the
 * same suite in the distributed mode (every service its own process on PostgreSQL, RabbitMQ and
 * Redis). The distributed run happens whenever those servers answer; with
 * MERX_REQUIRE_DISTRIBUTED=1 (CI) their absence is a failure, not a skip.
 */
interface Suite {
  name: string;
  files: string[];
  env?: Record<string, string>;
  timeoutMs: number;
}

interface Stats {
  passes: number;
  failures: number;
  pending: number;
  tests: number;
}

function compiledFiles(dirs: string[], suffix: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith(suffix)) found.push(full);
    }
  };
  dirs.forEach(walk);
  return found.sort();
}

function workspaceDirs(): string[] {
  return ['shared', 'services'].flatMap((group) =>
    readdirSync(path.join(repoRoot, group), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.join(repoRoot, group, entry.name, 'dist')),
  );
}

function reachable(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host, timeout: 1_500 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

async function runSuite(suite: Suite): Promise<Stats & { exitCode: number }> {
  const summaryFile = path.join(tmpdir(), `merx-test-summary-${process.pid}-${suite.name.replace(/\W+/g, '-')}.json`);
  rmSync(summaryFile, { force: true });
  process.stdout.write(`\n━━ ${suite.name} (${suite.files.length} files) ━━\n`);
  const mocha = path.join(repoRoot, 'node_modules/mocha/bin/mocha.js');
  const child = spawn(process.execPath, [mocha, '--timeout', '30000', '--reporter', path.join(repoRoot, 'tests/reporter/spec-summary.cjs'), ...suite.files], {
    cwd: repoRoot,
    env: { ...process.env, ...suite.env, MERX_TEST_SUMMARY_FILE: summaryFile },
    stdio: 'inherit',
  });
  const killer = setTimeout(() => {
    process.stdout.write(`\n${suite.name} did not finish within ${suite.timeoutMs / 1000}s; stopping it\n`);
    child.kill('SIGKILL');
  }, suite.timeoutMs);
  const exitCode = await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  clearTimeout(killer);
  const stats: Stats = existsSync(summaryFile) ? JSON.parse(readFileSync(summaryFile, 'utf8')) : { passes: 0, failures: 1, pending: 0, tests: 0 };
  rmSync(summaryFile, { force: true });
  return { ...stats, exitCode };
}

async function main(): Promise<void> {
  const requireDistributed = process.env.MERX_REQUIRE_DISTRIBUTED === '1' || process.env.MERX_REQUIRE_DISTRIBUTED === 'true';
  const only = process.env.MERX_TEST_ONLY; // unit | embedded | distributed, for quick local runs
  const e2eDir = path.join(repoRoot, 'tests/dist/e2e');
  const e2eFiles = compiledFiles([e2eDir], '.test.js').filter((file) => !file.endsWith('compose.test.js'));
  const suites: Suite[] = [];
  if (!only || only === 'unit') {
    suites.push({
      name: 'unit and component tests',
      files: [...compiledFiles(workspaceDirs(), '.spec.js'), ...compiledFiles(workspaceDirs(), '.test.js'), ...compiledFiles([e2eDir], 'compose.test.js')],
      timeoutMs: 15 * 60_000,
    });
  }
  if (!only || only === 'embedded') suites.push({ name: 'end-to-end, embedded mode', files: e2eFiles, env: { MERX_E2E_MODE: 'embedded' }, timeoutMs: 15 * 60_000 });

  const failures: string[] = [];
  if (!only || only === 'distributed') {
    const servers = { PostgreSQL: 5432, RabbitMQ: 5672, Redis: 6379 };
    const missing = [];
    for (const [name, port] of Object.entries(servers)) if (!(await reachable(port))) missing.push(`${name} (127.0.0.1:${port})`);
    if (missing.length === 0) {
      suites.push({ name: 'end-to-end, distributed mode', files: e2eFiles, env: { MERX_E2E_MODE: 'distributed' }, timeoutMs: 20 * 60_000 });
    } else if (requireDistributed) {
      failures.push(`distributed suite required but unreachable: ${missing.join(', ')}`);
    } else {
      process.stdout.write(`\nThe distributed suite needs ${missing.join(', ')}; it did not run (set MERX_REQUIRE_DISTRIBUTED=1 to make that a failure).\n`);
    }
  }

  const totals = { passed: 0, failed: 0, pending: 0 };
  for (const suite of suites) {
    const result = await runSuite(suite);
    totals.passed += result.passes;
    totals.failed += result.failures;
    totals.pending += result.pending;
    if (result.exitCode !== 0 || result.failures > 0) failures.push(`${suite.name}: ${result.failures} failed (exit ${result.exitCode})`);
  }
  process.stdout.write('\n');
  for (const failure of failures) process.stdout.write(`FAILED: ${failure}\n`);
  process.stdout.write(`${totals.passed} passed, ${totals.failed} failed${totals.pending ? `, ${totals.pending} skipped` : ''}\n`);
  process.exit(failures.length > 0 ? 1 : 0);
}

await main();
