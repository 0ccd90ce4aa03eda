import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Merx, { webhooks } from '@merx/sdk';
import { eventually, freePort, merxServer, repoRoot, type MerxServer } from './support/server.js';

const run = promisify(execFile);
const examples = path.join(repoRoot, 'examples');

/** A child process's stdout, one JSON line at a time. */
function jsonLines(child: ChildProcess): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [];
  let pending = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.trim().startsWith('{')) items.push(JSON.parse(line) as Record<string, unknown>);
  });
  return items;
}

describe('the sample applications in examples/, as their READMEs run them', function () {
  this.timeout(120_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('node-webhook-receiver verifies real deliveries and refuses forgeries', async () => {
    const merchant = await server.createMerchant();
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/webhooks`;
    const subscription = await merx.webhooks.subscriptions.create({ url, topics: ['products'] });
    const receiver = spawn(process.execPath, ['receiver.mjs'], {
      cwd: path.join(examples, 'node-webhook-receiver'),
      env: { PATH: process.env.PATH, PORT: String(port), MERX_WEBHOOK_SECRET: subscription.secret },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = jsonLines(receiver);
      await eventually(() => lines.some((line) => 'listening' in line), 'the receiver listening');
      const product = await merx.products.create({ sku: 'EX-HOOK', title: 'Example', price: '9.99', currency: 'USD' });
      await merx.products.update(product.id, { title: 'Example, renamed' });
      const handled = await eventually(() => {
        const verified = lines.filter((line) => line.verified === true);
        return verified.length >= 2 ? verified : undefined;
      }, 'two verified events');
      assert.deepEqual(handled.map((line) => line.topic).sort(), ['products.created', 'products.updated']);
      assert.ok(handled.every((line) => line.object_id === product.id));

      const body = '{"id":"evt_forged","topic":"products.deleted"}';
      const forged = webhooks.sign(body, { secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`, messageId: 'evt_forged' });
      const answers = await Promise.all([
        fetch(url, { method: 'POST', body, headers: { 'webhook-id': 'evt_forged', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' } }),
        fetch(url, {
          method: 'POST',
          body,
          headers: { 'webhook-id': 'evt_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': forged },
        }),
      ]);
      assert.deepEqual(
        answers.map((answer) => answer.status),
        [400, 400],
      );
      const refusals = await eventually(() => {
        const refused = lines.filter((line) => line.verified === false);
        return refused.length >= 2 ? refused : undefined;
      }, 'two refusals');
      assert.deepEqual(refusals.map((line) => String(line.reason)).sort(), ['no webhook-signature matches the secret', 'webhook-timestamp is too old']);
      assert.equal(lines.filter((line) => line.verified === true).length, 2, 'nothing forged was handled');
    } finally {
      receiver.kill('SIGTERM');
    }
  });

  it('node-csv-product-sync creates, then leaves alone, then updates and reports a bad line', async () => {
    const merchant = await server.createMerchant();
    const env = { ...process.env, MERX_API_KEY: merchant.apiKey, MERX_BASE_URL: server.baseUrl };
    const cwd = path.join(examples, 'node-csv-product-sync');
    const sync = (file: string) =>
      run(process.execPath, ['sync.mjs', file], { cwd, env }).then(
        ({ stdout, stderr }) => ({ code: 0, summary: JSON.parse(stdout) as Record<string, unknown>, stderr }),
        (error: { code: number; stdout: string; stderr: string }) => ({
          code: error.code,
          summary: JSON.parse(error.stdout) as Record<string, unknown>,
          stderr: error.stderr,
        }),
      );

    const first = await sync('products.csv');
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(first.summary, { rows: 5, created: 5, updated: 0, unchanged: 0, failed: [] });
    assert.match(first.stderr, /5 rows: 5 created, 0 updated, 0 unchanged, 0 failed/);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    const titles: string[] = [];
    for await (const product of merx.products.list({ limit: 2 })) titles.push(product.title);
    assert.ok(titles.includes('Mug, white') && titles.includes('Cap "classic"'), titles.join(' | '));

    const second = await sync('products.csv');
    assert.deepEqual(second.summary, { rows: 5, created: 0, updated: 0, unchanged: 5, failed: [] });

    const dir = mkdtempSync(path.join(tmpdir(), 'merx-csv-'));
    try {
      const changed = path.join(dir, 'changed.csv');
      const original = readFileSync(path.join(cwd, 'products.csv'), 'utf8');
      writeFileSync(changed, `${original.replace('MUG-2,"Mug, black",9.50', 'MUG-2,"Mug, black",11.00')}BAD-1,No price,,USD,\n`);
      const third = await sync(changed);
      assert.equal(third.code, 1);
      assert.equal(third.summary.updated, 1);
      assert.equal(third.summary.unchanged, 4);
      const failed = third.summary.failed as Array<{ line: number; sku: string; status: number; code: string }>;
      assert.equal(failed.length, 1);
      assert.equal(failed[0]!.line, 7);
      assert.equal(failed[0]!.sku, 'BAD-1');
      assert.ok(failed[0]!.status >= 400 && failed[0]!.status < 500 && failed[0]!.code, JSON.stringify(failed[0]));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
