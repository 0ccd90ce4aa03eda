import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openApiDocument } from '../openapi.js';
import type { OpenApiDocument } from '../openapi/types.js';

/**
 * Runs Redocly CLI (`recommended`) and Spectral (`spectral:oas`) over the document as built, the
 * way CI does: both linters read a file, so the document is written to a temporary one first.
 * Their configurations are shared/contracts/redocly.yaml and .spectral.yaml.
 */

export interface LintFinding {
  linter: 'redocly' | 'spectral';
  severity: 'error' | 'warning' | 'info' | 'hint';
  rule: string;
  message: string;
  /** A JSON pointer into the document. */
  where: string;
}

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const contractsRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

async function binOf(packageName: string, binName: string): Promise<string> {
  const manifestPath = require.resolve(`${packageName}/package.json`);
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { bin: Record<string, string> };
  return path.join(path.dirname(manifestPath), manifest.bin[binName]!);
}

/** Both linters exit non-zero when they find something; their JSON report is what counts. */
async function runLinter(bin: string, args: string[]): Promise<string> {
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
  try {
    return (await run(process.execPath, [bin, ...args], { env, maxBuffer: 64 * 1024 * 1024, timeout: 300_000 })).stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    if (failed.stdout && failed.stdout.trim().length > 0) return failed.stdout;
    throw new Error(`${path.basename(bin)} failed: ${failed.stderr || failed.message}`);
  }
}

async function redoclyFindings(file: string): Promise<LintFinding[]> {
  const bin = await binOf('@redocly/cli', 'redocly');
  const output = await runLinter(bin, ['lint', file, '--config', path.join(contractsRoot, 'redocly.yaml'), '--format=json']);
  const report = JSON.parse(output.slice(output.indexOf('{'))) as {
    problems: Array<{ ruleId: string; severity: 'error' | 'warn'; message: string; location: Array<{ pointer: string }> }>;
  };
  return report.problems.map((problem) => ({
    linter: 'redocly',
    severity: problem.severity === 'warn' ? 'warning' : 'error',
    rule: problem.ruleId,
    message: problem.message,
    where: problem.location[0]?.pointer ?? '#',
  }));
}

const spectralSeverities = ['error', 'warning', 'info', 'hint'] as const;

async function spectralFindings(file: string): Promise<LintFinding[]> {
  const bin = await binOf('@stoplight/spectral-cli', 'spectral');
  const output = await runLinter(bin, ['lint', file, '--ruleset', path.join(contractsRoot, '.spectral.yaml'), '--format', 'json', '--quiet']);
  const results = JSON.parse(output.slice(output.indexOf('['))) as Array<{ code: string; severity: number; message: string; path: string[] }>;
  return results.map((result) => ({
    linter: 'spectral',
    severity: spectralSeverities[result.severity] ?? 'error',
    rule: result.code,
    message: result.message,
    where: `#/${result.path.map((segment) => String(segment).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`,
  }));
}

/** Every finding of both linters on `document` (the built one by default). */
export async function lintOpenApiDocument(document: OpenApiDocument = openApiDocument): Promise<LintFinding[]> {
  const directory = await mkdtemp(path.join(tmpdir(), 'merx-openapi-lint-'));
  try {
    const file = path.join(directory, 'openapi.json');
    await writeFile(file, JSON.stringify(document, null, 2));
    const [redocly, spectral] = await Promise.all([redoclyFindings(file), spectralFindings(file)]);
    return [...redocly, ...spectral];
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

export const describeFinding = (finding: LintFinding): string =>
  `${finding.linter} ${finding.severity} ${finding.rule} at ${finding.where}: ${finding.message}`;
