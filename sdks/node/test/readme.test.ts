import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { merxServer, packageRoot } from './support/server.js';

const run = promisify(execFile);

/** The first code block after a heading of the README. */
function codeBlockAfter(heading: string): string {
  const readme = readFileSync(path.join(packageRoot, 'README.md'), 'utf8');
  const at = readme.startsWith(`${heading}\n`) ? 0 : readme.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `no heading ${heading}`);
  const section = readme.slice(at);
  const match = /```(?:ts|js)\n([\s\S]*?)```/.exec(section);
  assert.ok(match, `no code block after ${heading}`);
  return match[1]!;
}

describe('the README says what the SDK does', function () {
  this.timeout(120_000);

  for (const heading of ['# @merx/sdk — the Node.js library for the Merx API', '## Quick start']) {
    it(`the code under "${heading}" runs as written against the real server`, async () => {
      const server = await merxServer();
      const merchant = await server.createMerchant();
      const code = codeBlockAfter(heading).replace("apiKey: 'mx_test_...'", 'apiKey: process.env.MERX_API_KEY');
      const dir = path.join(packageRoot, 'dist', `readme-${process.pid}`);
      mkdirSync(dir, { recursive: true });
      try {
        writeFileSync(path.join(dir, 'snippet.mjs'), code);
        const { stdout } = await run(process.execPath, [path.join(dir, 'snippet.mjs')], {
          cwd: dir,
          env: { ...process.env, MERX_API_KEY: merchant.apiKey, MERX_BASE_URL: server.baseUrl },
        });
        assert.match(stdout, /TSHIRT-1/);
        if (heading === '## Quick start') assert.match(stdout, /^req_\S+$/m, 'the NotFoundError printed its request id');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
