import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AMQP_URL, POSTGRES_ADMIN_URL, REDIS_URL, repoRoot } from './harness/distributed.js';
import { missingPrivateServerBinaries } from './harness/private-servers.js';

const DEFAULT_PORTS: Record<string, number> = { PostgreSQL: 5432, RabbitMQ: 5672, Redis: 6379 };

/**
 * `npm test`: unit and component tests, then the end-to-end suite in the embedded mode, then the
 * same suite in the distributed mode (every service its own process on PostgreSQL, RabbitMQ and
 * Redis), then the fault suite (tests/faults: the distributed mode on PostgreSQL, RabbitMQ and
 * Redis servers of its own, which it crashes and restarts). The distributed runs happen whenever
 * those servers answer (the fault suite: whenever their binaries are installed); with
 * MERX_REQUIRE_DISTRIBUTED=1 (CI) their absence is a failure, not a skip.
 */
interface MochaSuite {
  name: string;
  files: string[];
  env?: Record<string, string>;
  timeoutMs: number;
}

/**
 * A suite in another language (pytest, PHPUnit): a command run from `cwd` that writes a JUnit XML
 * report to the path it is given in MERX_TEST_JUNIT_FILE; its counts join the totals.
 */
interface CommandSuite {
  name: string;
  command: string[];
  cwd: string;
  env?: Record<string, string>;
  timeoutMs: number;
  /** `exit`: a command without a JUnit report (the linter) counts as one check that passes when it exits 0. */
  counts?: 'junit' | 'exit';
}

type Suite = MochaSuite | CommandSuite;

interface Stats {
  passes: number;
  failures: number;
  pending: number;
  tests: number;
  /** Mocha suites: each failing test's full title, file and first line of its error. */
  failed?: string[];
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

/** Totals of a JUnit XML report: the outermost element that carries counts. */
function junitTotals(xml: string): Stats {
  const opening = /<testsuites?\b[^>]*>/.exec(xml)?.[0] ?? '';
  const count = (attribute: string) => Number(new RegExp(`\\b${attribute}="(\\d+)"`).exec(opening)?.[1] ?? 0);
  const tests = count('tests');
  const failures = count('failures') + count('errors');
  const pending = count('skipped');
  return { tests, failures, pending, passes: tests - failures - pending };
}

function waitForExit(child: ReturnType<typeof spawn>, suite: Suite): Promise<number> {
  const killer = setTimeout(() => {
    process.stdout.write(`\n${suite.name} did not finish within ${suite.timeoutMs / 1000}s; stopping it\n`);
    child.kill('SIGKILL');
  }, suite.timeoutMs);
  return new Promise<number>((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(killer);
      resolve(code ?? 1);
    }),
  );
}

async function runCommandSuite(suite: CommandSuite): Promise<Stats & { exitCode: number }> {
  const junitFile = path.join(tmpdir(), `merx-test-junit-${process.pid}-${suite.name.replace(/\W+/g, '-')}.xml`);
  rmSync(junitFile, { force: true });
  process.stdout.write(`\n━━ ${suite.name} (${suite.command.join(' ')}) ━━\n`);
  const [executable, ...args] = suite.command;
  const child = spawn(executable!, args, { cwd: suite.cwd, env: { ...process.env, ...suite.env, MERX_TEST_JUNIT_FILE: junitFile }, stdio: 'inherit' });
  const exitCode = await waitForExit(child, suite);
  const stats =
    suite.counts === 'exit'
      ? { passes: exitCode === 0 ? 1 : 0, failures: exitCode === 0 ? 0 : 1, pending: 0, tests: 1 }
      : existsSync(junitFile)
        ? junitTotals(readFileSync(junitFile, 'utf8'))
        : { passes: 0, failures: 1, pending: 0, tests: 0 };
  rmSync(junitFile, { force: true });
  return { ...stats, exitCode };
}

/**
 * Coverage of the TypeScript suites: V8 writes what every Node process of a suite ran (the test
 * processes, and with them the embedded mode's services, which run in-process) to
 * `coverage/v8`, and c8 reports it against the TypeScript sources through the build's source
 * maps. The distributed mode's service processes start with an environment of their own and are
 * not counted. `MERX_TEST_COVERAGE=off` skips it.
 */
const coverageDir = path.join(repoRoot, 'coverage', 'v8');
const coverageOn = process.env.MERX_TEST_COVERAGE !== 'off';

function coverageEnv(): Record<string, string> {
  return coverageOn ? { NODE_V8_COVERAGE: coverageDir } : {};
}

async function reportCoverage(): Promise<void> {
  if (!coverageOn || !existsSync(coverageDir)) return;
  process.stdout.write('\n━━ coverage (services and shared libraries, TypeScript sources; full report in coverage/index.html) ━━\n');
  const c8 = path.join(repoRoot, 'node_modules/c8/bin/c8.js');
  const child = spawn(
    process.execPath,
    [
      c8,
      'report',
      '--temp-directory',
      coverageDir,
      '--reports-dir',
      path.join(repoRoot, 'coverage'),
      '--reporter',
      'text-summary',
      '--reporter',
      'html',
      '--src',
      repoRoot,
      '--include',
      'services/*/src/**',
      '--include',
      'shared/*/src/**',
      '--exclude',
      '**/*.spec.ts',
      '--exclude',
      '**/test/**',
      '--exclude-after-remap',
    ],
    { cwd: repoRoot, stdio: 'inherit' },
  );
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(coverageDir, { recursive: true, force: true });
}

async function runSuite(suite: Suite): Promise<Stats & { exitCode: number }> {
  if ('command' in suite) return runCommandSuite(suite);
  const summaryFile = path.join(tmpdir(), `merx-test-summary-${process.pid}-${suite.name.replace(/\W+/g, '-')}.json`);
  rmSync(summaryFile, { force: true });
  process.stdout.write(`\n━━ ${suite.name} (${suite.files.length} files) ━━\n`);
  const mocha = path.join(repoRoot, 'node_modules/mocha/bin/mocha.js');
  const child = spawn(process.execPath, [mocha, '--timeout', '30000', '--reporter', path.join(repoRoot, 'tests/reporter/spec-summary.cjs'), ...suite.files], {
    cwd: repoRoot,
    env: { ...process.env, ...suite.env, ...coverageEnv(), MERX_TEST_SUMMARY_FILE: summaryFile },
    stdio: 'inherit',
  });
  const exitCode = await waitForExit(child, suite);
  const stats: Stats = existsSync(summaryFile) ? JSON.parse(readFileSync(summaryFile, 'utf8')) : { passes: 0, failures: 1, pending: 0, tests: 0 };
  rmSync(summaryFile, { force: true });
  return { ...stats, exitCode };
}

/**
 * Suites in other languages (the Python and PHP SDKs), each started by its own command. They
 * run after the end-to-end suites; `MERX_TEST_ONLY=sdks` runs them alone.
 */
function commandSuites(): CommandSuite[] {
  return [
    // PHPUnit over two PSR-18 clients (Symfony's, and the SDK's own over ext-curl) against a real Merx it starts.
    { name: 'PHP SDK', command: ['php', 'sdks/php/tests/run.php'], cwd: repoRoot, timeoutMs: 10 * 60_000 },
    // pytest against its own embedded Merx; writes JUnit to $MERX_TEST_JUNIT_FILE (sdks/python/README.md).
    { name: 'Python SDK (pytest)', command: ['bash', 'sdks/python/scripts/test'], cwd: repoRoot, timeoutMs: 15 * 60_000 },
  ];
}

async function main(): Promise<void> {
  const requireDistributed = process.env.MERX_REQUIRE_DISTRIBUTED === '1' || process.env.MERX_REQUIRE_DISTRIBUTED === 'true';
  const only = process.env.MERX_TEST_ONLY; // lint | unit | embedded | distributed | faults | sdks, for quick local runs
  const e2eDir = path.join(repoRoot, 'tests/dist/e2e');
  const e2eFiles = compiledFiles([e2eDir], '.test.js').filter((file) => !file.endsWith('compose.test.js'));
  rmSync(coverageDir, { recursive: true, force: true });
  const suites: Suite[] = [];
  // ESLint first: a finding fails the run like a failing test (eslint.config.mjs says which rules and why).
  if (!only || only === 'unit' || only === 'lint') {
    suites.push({
      name: 'lint (ESLint with typescript-eslint)',
      command: [process.execPath, path.join(repoRoot, 'node_modules/eslint/bin/eslint.js'), '--max-warnings', '0', '.'],
      cwd: repoRoot,
      timeoutMs: 5 * 60_000,
      counts: 'exit',
    });
    // Prettier's layout for every TypeScript and JavaScript source (.prettierrc.json; .prettierignore says what is left out and why).
    suites.push({
      name: 'format (Prettier)',
      command: [process.execPath, path.join(repoRoot, 'node_modules/prettier/bin/prettier.cjs'), '--check', '.'],
      cwd: repoRoot,
      timeoutMs: 5 * 60_000,
      counts: 'exit',
    });
  }
  if (!only || only === 'unit') {
    suites.push({
      name: 'unit and component tests',
      files: [...compiledFiles(workspaceDirs(), '.spec.js'), ...compiledFiles(workspaceDirs(), '.test.js'), ...compiledFiles([e2eDir], 'compose.test.js')],
      // About 8 minutes on a quiet machine; the bound only stops a hung run, so it leaves a slow one room.
      timeoutMs: 25 * 60_000,
    });
  }
  // 20 minutes: loading 10,000 products over gRPC takes about two of them on PGlite, where every
  // event also passes through the in-process bus's tables.
  if (!only || only === 'embedded')
    suites.push({ name: 'end-to-end, embedded mode', files: e2eFiles, env: { MERX_E2E_MODE: 'embedded' }, timeoutMs: 20 * 60_000 });

  const failures: string[] = [];
  if (!only || only === 'distributed') {
    // Where the harness finds them (tests/src/harness/distributed.ts): MERX_TEST_*_URL, else the local defaults.
    const servers = { PostgreSQL: POSTGRES_ADMIN_URL, RabbitMQ: AMQP_URL, Redis: REDIS_URL };
    const missing = [];
    for (const [name, url] of Object.entries(servers)) {
      const { hostname, port } = new URL(url);
      const address = { host: hostname || '127.0.0.1', port: Number(port) || DEFAULT_PORTS[name]! };
      if (!(await reachable(address.port, address.host))) missing.push(`${name} (${address.host}:${address.port})`);
    }
    if (missing.length === 0) {
      suites.push({ name: 'end-to-end, distributed mode', files: e2eFiles, env: { MERX_E2E_MODE: 'distributed' }, timeoutMs: 20 * 60_000 });
    } else if (requireDistributed) {
      failures.push(`distributed suite required but unreachable: ${missing.join(', ')}`);
    } else {
      process.stdout.write(`\nThe distributed suite needs ${missing.join(', ')}; it did not run (set MERX_REQUIRE_DISTRIBUTED=1 to make that a failure).\n`);
    }
  }

  if (!only || only === 'faults') {
    // Kills every service and restarts the broker and the database under load: on servers of its own, never the shared ones.
    // 4 to 12 minutes measured on a two-core machine whose cores other work shared (load average 13 to 35); 15 is the hard bound.
    const missing = missingPrivateServerBinaries();
    if (missing.length === 0) {
      suites.push({
        name: 'fault suite, distributed mode on private servers',
        files: compiledFiles([path.join(repoRoot, 'tests/dist/faults')], '.test.js'),
        env: { MERX_E2E_MODE: 'distributed' },
        timeoutMs: 15 * 60_000,
      });
    } else if (requireDistributed) {
      failures.push(`fault suite required but cannot start its own servers: ${missing.join(', ')} missing`);
    } else {
      process.stdout.write(`\nThe fault suite needs ${missing.join(', ')}; it did not run (set MERX_REQUIRE_DISTRIBUTED=1 to make that a failure).\n`);
    }
  }

  if (!only || only === 'sdks') {
    // The Node SDK's mocha suite starts its own embedded Merx, like the other SDKs' suites (sdks/node/README.md).
    suites.push({ name: 'Node SDK (mocha)', files: compiledFiles([path.join(repoRoot, 'sdks/node/dist/test')], '.test.js'), timeoutMs: 10 * 60_000 });
    // The CLI's suite runs the built `merx` as a subprocess against its own embedded Merx (sdks/cli/README.md).
    suites.push({ name: 'CLI merx (mocha)', files: compiledFiles([path.join(repoRoot, 'sdks/cli/dist/test')], '.test.js'), timeoutMs: 25 * 60_000 });
    suites.push(...commandSuites());
  }

  const totals = { passed: 0, failed: 0, pending: 0 };
  for (const suite of suites) {
    const result = await runSuite(suite);
    totals.passed += result.passes;
    totals.failed += result.failures;
    totals.pending += result.pending;
    if (result.exitCode !== 0 || result.failures > 0) {
      failures.push(`${suite.name}: ${result.failures} failed (exit ${result.exitCode})`);
      for (const title of result.failed ?? []) failures.push(`  ${title}`);
    }
  }
  await reportCoverage();
  process.stdout.write('\n');
  for (const failure of failures) process.stdout.write(`FAILED: ${failure}\n`);
  process.stdout.write(`${totals.passed} passed, ${totals.failed} failed${totals.pending ? `, ${totals.pending} skipped` : ''}\n`);
  process.exit(failures.length > 0 ? 1 : 0);
}

await main();
