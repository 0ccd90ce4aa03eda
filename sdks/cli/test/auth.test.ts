import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import Merx from '@merx/sdk';
import { Cli } from './support/cli.js';
import { eventually, merxServer, type Merchant, type MerxServer } from './support/server.js';

const modeOf = (file: string) => statSync(file).mode & 0o777;

/** How many access tokens the key was given, from its merchant's own audit of token issuance. */
async function tokensIssued(server: MerxServer, merchant: Merchant, since: string): Promise<number> {
  const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
  let count = 0;
  for await (const event of merx.events.list({ topic: 'auth.token_issued', since, limit: 100 })) if (event.id) count += 1;
  return count;
}

describe('merx login, logout, whoami and the credentials every command uses', function () {
  this.timeout(120_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('login reads the key from stdin, checks it, keeps it under the profile 0600, and never prints it whole', async () => {
    const merchant = await server.createMerchant('Login Ltd');
    const cli = new Cli(server);
    const login = await cli.run(['login'], { input: `${merchant.apiKey}\n` });
    assert.equal(login.code, 0, login.stderr);
    const secret = merchant.apiKey.split('_').pop()!;
    assert.ok(!login.stdout.includes(secret) && !login.stderr.includes(secret), 'the secret part of the key is never printed');
    assert.match(login.stdout, /Login Ltd/);
    const configFile = path.join(cli.configDir, 'config.json');
    assert.equal(modeOf(configFile), 0o600);
    assert.equal(modeOf(cli.configDir), 0o700);
    assert.equal(JSON.parse(readFileSync(configFile, 'utf8')).profiles.default.api_key, merchant.apiKey);
    const tokens = readdirSync(path.join(cli.configDir, 'tokens'));
    assert.equal(tokens.length, 1, 'login cached the token it got');
    assert.equal(modeOf(path.join(cli.configDir, 'tokens', tokens[0]!)), 0o600);

    const whoami = await cli.json(['whoami']);
    assert.equal(whoami.merchant.id, merchant.id);
    assert.equal(whoami.profile, 'default');
    assert.equal(whoami.key_source, 'profile default');
    assert.match(whoami.key, /^mx_test_[0-9A-Za-z]+_…/);
    assert.ok(!JSON.stringify(whoami).includes(secret));

    const logout = await cli.run(['logout']);
    assert.equal(logout.code, 0);
    assert.deepEqual(JSON.parse(readFileSync(configFile, 'utf8')).profiles, {});
    assert.deepEqual(readdirSync(path.join(cli.configDir, 'tokens')), [], "the profile's cached token went with it");
    const after = await cli.run(['whoami']);
    assert.equal(after.code, 2, 'no key is a usage error');
    assert.match(after.stderr, /merx login/);
  });

  it('a refused key is an API error (exit 1) and nothing is stored', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server);
    const wrong = `${merchant.apiKey.slice(0, -4)}XXXX`;
    const login = await cli.run(['login', '--api-key', wrong]);
    assert.equal(login.code, 1);
    assert.match(login.stderr, /401/);
    assert.ok(!login.stderr.includes(wrong.split('_').pop()!));
    assert.ok(!existsSync(path.join(cli.configDir, 'config.json')), 'no profile was written');
  });

  it('profiles keep keys apart; --api-key and MERX_API_KEY override the profile; --profile and MERX_PROFILE choose it', async () => {
    const first = await server.createMerchant('First Co');
    const second = await server.createMerchant('Second Co');
    const cli = new Cli(server);
    assert.equal((await cli.run(['login', '--api-key', first.apiKey])).code, 0);
    assert.equal((await cli.run(['login', '--profile', 'other', '--api-key', second.apiKey])).code, 0);
    assert.equal((await cli.json(['whoami'])).merchant.id, first.id);
    assert.equal((await cli.json(['whoami', '--profile', 'other'])).merchant.id, second.id);
    assert.equal((await cli.json(['whoami'], { env: { MERX_PROFILE: 'other' } })).merchant.id, second.id);
    const overridden = await cli.json(['whoami', '--api-key', second.apiKey]);
    assert.equal(overridden.merchant.id, second.id);
    assert.equal(overridden.key_source, '--api-key');
    assert.equal((await cli.json(['whoami'], { env: { MERX_API_KEY: second.apiKey } })).key_source, 'MERX_API_KEY');
    const malformed = await cli.run(['whoami', '--api-key', 'not-a-key']);
    assert.equal(malformed.code, 2);
    assert.match(malformed.stderr, /mx_test_/);
  });

  it('--base-url and MERX_BASE_URL say where Merx is: a wrong one is a connection error (exit 1)', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const wrong = await cli.run(['products', 'list'], { env: { MERX_BASE_URL: 'http://127.0.0.1:9' } });
    assert.equal(wrong.code, 1);
    const right = await cli.run(['products', 'list', '--base-url', server.baseUrl], { env: { MERX_BASE_URL: 'http://127.0.0.1:9' } });
    assert.equal(right.code, 0, right.stderr);
    const notUrl = await cli.run(['products', 'list', '--base-url', 'nope']);
    assert.equal(notUrl.code, 2);
  });

  it('ten commands in a row (REST and gRPC) get one access token: the cache outlives each run', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server);
    const since = new Date(Date.now() - 1000).toISOString();
    assert.equal((await cli.run(['login', '--api-key', merchant.apiKey])).code, 0);
    for (let i = 0; i < 8; i += 1) assert.equal((await cli.run(['products', 'list', '--limit', '1'])).code, 0);
    assert.equal((await cli.run(['export', 'products'])).code, 0);
    assert.equal((await cli.run(['whoami'])).code, 0);
    // The token the check below uses is its own, made after `since` too: one for the CLI, one for the check.
    const issued = await eventually(async () => {
      const count = await tokensIssued(server, merchant, since);
      return count >= 2 && count;
    }, 'the token_issued events');
    assert.equal(issued, 2, `the CLI exchanged its key ${issued - 1} times`);
  });
});
