import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Merx from '@merx/sdk';
import { Cli } from './support/cli.js';
import { merxServer, type MerxServer } from './support/server.js';

/** What a terminal shows, without colour and cursor sequences. */
const plain = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');

describe('merx on a terminal (a pseudo-terminal): prompts, tables, colours and the progress bar', function () {
  this.timeout(180_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('login asks for the key without echoing it, then stores it', async () => {
    const merchant = await server.createMerchant('Terminal Ltd');
    const cli = new Cli(server);
    const login = await cli.inTerminal(['login'], { dialog: [{ prompt: /Paste your Merx API key/, answer: `${merchant.apiKey}\r` }] });
    assert.equal(login.code, 0, login.stdout);
    const secret = merchant.apiKey.split('_').pop()!;
    assert.ok(!login.stdout.includes(secret), 'the key typed at the prompt is not shown');
    assert.match(plain(login.stdout), /Logged in to Terminal Ltd/);
    assert.equal(JSON.parse(readFileSync(path.join(cli.configDir, 'config.json'), 'utf8')).profiles.default.api_key, merchant.apiKey);
  });

  it('a list is an aligned table with the next page hinted; --json still gives JSON', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    for (const sku of ['TTY-1', 'TTY-2']) await merx.products.create({ sku, title: `Title ${sku}`, price: '4.20', currency: 'USD' });
    const table = await cli.inTerminal(['products', 'list', '--limit', '1']);
    assert.equal(table.code, 0, table.stdout);
    const shown = plain(table.stdout);
    assert.match(shown, /│ id +│ sku +│ title +│ description +│ price/);
    assert.match(shown, /│ prod_\w+ +│ TTY-2 +│ Title TTY-2/);
    assert.match(shown, /more: --cursor \S+/);
    const json = await cli.inTerminal(['products', 'list', '--limit', '1', '--json']);
    assert.equal(JSON.parse(plain(json.stdout)).data[0].sku, 'TTY-2');
    const error = await cli.inTerminal(['products', 'retrieve', 'prod_00000000000000000000000000'], { env: { FORCE_COLOR: '1', NO_COLOR: undefined } });
    assert.equal(error.code, 1);
    assert.match(error.stdout, /\x1b\[31mError \(404 not_found\)/, 'the error is red on a terminal');
  });

  it('sandbox reset asks first: "n" keeps everything, "y" resets', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    await merx.products.create({ sku: 'ASKED-1', title: 'Asked', price: '1.00', currency: 'USD' });
    const declined = await cli.inTerminal(['sandbox', 'reset'], { dialog: [{ prompt: /\[y\/N\]/, answer: 'n\r' }] });
    assert.equal(declined.code, 0);
    assert.match(plain(declined.stdout), /Nothing was reset/);
    assert.equal((await merx.products.list()).data.length, 1);
    const accepted = await cli.inTerminal(['sandbox', 'reset'], { dialog: [{ prompt: /\[y\/N\]/, answer: 'y\r' }] });
    assert.equal(accepted.code, 0, accepted.stdout);
    assert.match(plain(accepted.stdout), /Sandbox reset rst_\w+ completed/);
    assert.equal((await merx.products.list()).data.length, 0);
  });

  it('import shows a progress bar with items/s and an ETA, then the summary', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const file = path.join(cli.configDir, 'products.csv');
    const rows = Array.from({ length: 300 }, (_, index) => `TTYBULK-${index},Product ${index},1.00,USD`);
    writeFileSync(file, ['sku,title,price,currency', ...rows, 'TTYBULK-BAD,Bad,1.001,USD'].join('\n'));
    const result = await cli.inTerminal(['import', 'products', file], { timeoutMs: 120_000 });
    assert.equal(result.code, 1, 'one line failed');
    const shown = plain(result.stdout);
    assert.match(shown, /Importing \|[█░]+\| \d+% \| \d+\/301 lines \| \d+ items\/s \| ETA /);
    assert.match(shown, /301 lines in [\d.]+ s: 300 created, 0 updated, 0 unchanged, 1 failed/);
    assert.match(shown, /line 302 \(TTYBULK-BAD\): validation_failed/);
  });
});
