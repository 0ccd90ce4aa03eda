import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { purgeThrottleState } from '@merx/gateway';
import { freePort } from '@merx/kit';
import pg from 'pg';
import { removeDeploymentFromBroker, type DevCredentials } from '../src/index.js';
import { exitOf, launch, running, tokenFor } from './launch.js';

const POSTGRES_ADMIN_URL = process.env.MERX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const AMQP_URL = process.env.MERX_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Service origins from the banner's "Services" line. */
const serviceUrlsOf = (stdout: string) => [...(/Services\s+(.*)/.exec(stdout)?.[1] ?? '').matchAll(/http:\/\/127\.0\.0\.1:\d+/g)].map(([url]) => url);

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/healthz`);
    await response.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

function occupy(port: number): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(port, '0.0.0.0', () => resolve(server));
  });
}

/** One line on stderr, naming the cause; no stack trace. */
function assertOneLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, `expected one line, got:\n${stderr}`);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(stderr, /\n\s+at /);
}

describe('npm run start:distributed (every service its own process on the local servers)', function () {
  this.timeout(180_000);
  const unique = randomBytes(4).toString('hex');
  const database = `merx_launcher_${unique}`;
  const deployment = `launcher-${unique}`;
  let dataDir: string;
  let env: Record<string, string>;

  before(async () => {
    dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'merx-launcher-')), 'data');
    const databaseUrl = new URL(POSTGRES_ADMIN_URL);
    databaseUrl.pathname = `/${database}`;
    env = { DATABASE_URL: databaseUrl.toString(), AMQP_URL, REDIS_URL, MERX_DEPLOYMENT: deployment, MERX_DATA_DIR: dataDir, PORT: String(await freePort()) };
  });

  after(async () => {
    await rm(path.dirname(dataDir), { recursive: true, force: true });
    await removeDeploymentFromBroker(AMQP_URL, deployment);
    await purgeThrottleState(REDIS_URL, `${deployment}:`);
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it("creates its database, starts seven processes, makes a sandbox merchant and dev.json, prints the console and the owner's sign-in, stops them all on Ctrl-C, and reuses the credentials next time", async () => {
    const first = launch('main-distributed', env);
    let credentials: DevCredentials;
    let urls: string[];
    try {
      await running(first);
      assert.match(first.stdout(), /sandbox merchant created/);
      credentials = JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as DevCredentials;
      assert.equal(credentials.base_url, `http://localhost:${env.PORT}`);
      assert.match(credentials.grpc_url, /^localhost:\d+$/);
      urls = serviceUrlsOf(first.stdout());
      assert.equal(urls.length, 7, first.stdout());
      assert.ok(first.stdout().includes(`Console       ${credentials.base_url}/console`), first.stdout());
      assert.ok(first.stdout().includes(credentials.owner_email) && first.stdout().includes(credentials.owner_password), "the owner's sign-in details");
      for (const url of urls) assert.equal(await answers(url), true, url);

      const token = await tokenFor(credentials.base_url, credentials.api_key);
      const created = await fetch(`${credentials.base_url}/api/v1/products`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sku: 'LAUNCHED-1', title: 'Through the launcher', price: '5.00', currency: 'USD' }),
      });
      assert.equal(created.status, 201, await created.clone().text());

      // A second launcher on the same data directory is refused with one line.
      const intruder = launch('main-distributed', { ...env, PORT: String(await freePort()) });
      assert.equal(await exitOf(intruder), 1);
      assertOneLine(intruder.stderr(), /^merx: could not start: .* is in use by process \d+/);
    } finally {
      first.child.kill('SIGINT');
    }
    assert.equal(await exitOf(first), 0, first.stderr());
    for (const url of urls) assert.equal(await answers(url), false, `${url} still answers after Ctrl-C`);

    const second = launch('main-distributed', env);
    try {
      await running(second);
      assert.doesNotMatch(second.stdout(), /sandbox merchant created/);
      const again = JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as DevCredentials;
      assert.equal(again.merchant_id, credentials.merchant_id);
      assert.equal(again.api_key, credentials.api_key);
      await tokenFor(again.base_url, again.api_key);
    } finally {
      second.child.kill('SIGTERM');
    }
    assert.equal(await exitOf(second), 0, second.stderr());
  });

  it('refuses a port in use with one line, before it writes anything', async () => {
    const port = await freePort();
    const blocker = await occupy(port);
    const elsewhere = path.join(path.dirname(dataDir), 'never-made');
    try {
      const refused = launch('main-distributed', { ...env, PORT: String(port), MERX_DATA_DIR: elsewhere });
      assert.equal(await exitOf(refused), 1);
      assertOneLine(refused.stderr(), new RegExp(`^merx: could not start: port ${port} on 127\\.0\\.0\\.1 is in use`));
      assert.equal(existsSync(elsewhere), false);
    } finally {
      blocker.close();
    }
  });
});

describe('npm start failing to start (embedded)', function () {
  this.timeout(90_000);
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(path.join(tmpdir(), 'merx-embedded-start-'));
  });
  afterEach(() => rm(parent, { recursive: true, force: true }));

  it('refuses a port in use with one line and leaves no half-made data directory', async () => {
    const port = await freePort();
    const blocker = await occupy(port);
    const dataDir = path.join(parent, 'data');
    try {
      const refused = launch('main', { PORT: String(port), MERX_DATA_DIR: dataDir });
      assert.equal(await exitOf(refused), 1);
      assertOneLine(refused.stderr(), new RegExp(`^merx: could not start: port ${port} on 127\\.0\\.0\\.1 is in use`));
      assert.equal(existsSync(dataDir), false);
    } finally {
      blocker.close();
    }
  });

  it('refuses a data directory another process has open with one line, and leaves that directory alone', async () => {
    const dataDir = path.join(parent, 'data');
    const owner = launch('main', { PORT: String(await freePort()), MERX_DATA_DIR: dataDir });
    try {
      await running(owner);
      const second = launch('main', { PORT: String(await freePort()), MERX_DATA_DIR: dataDir });
      assert.equal(await exitOf(second), 1);
      assertOneLine(second.stderr(), new RegExp(`^merx: could not start: .*${path.basename(dataDir)} is in use by process ${owner.child.pid}`));
      assert.ok(existsSync(path.join(dataDir, 'dev.json')), "the owner's data is untouched");
      // npm start names the console and who signs in to it, from dev.json.
      const credentials = JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as DevCredentials;
      assert.ok(owner.stdout().includes(`Console       ${credentials.base_url}/console`), owner.stdout());
      assert.ok(
        owner.stdout().includes(`Sign in as  ${credentials.owner_email}`) && owner.stdout().includes(`Password    ${credentials.owner_password}`),
        owner.stdout(),
      );
    } finally {
      owner.child.kill('SIGTERM');
    }
    assert.equal(await exitOf(owner), 0, owner.stderr());
  });
});

describe('an idempotent create and its stored answer commit together (embedded)', function () {
  this.timeout(120_000);
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(path.join(tmpdir(), 'merx-idempotency-crash-'));
  });
  afterEach(() => rm(parent, { recursive: true, force: true }));

  it('replays the answer of a create whose process died right after committing it, creating one key, not two', async () => {
    const dataDir = path.join(parent, 'data');
    const port = String(await freePort());
    const first = launch('main', { PORT: port, MERX_DATA_DIR: dataDir });
    await running(first);
    first.child.kill('SIGTERM');
    assert.equal(await exitOf(first), 0);
    const credentials = JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as DevCredentials;

    const create = async () => {
      const token = await tokenFor(credentials.base_url, credentials.api_key);
      return fetch(`${credentials.base_url}/api/v1/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'create-once' },
        body: JSON.stringify({ name: 'Created once', scopes: ['products:read'] }),
      });
    };
    // The process dies the instant the key, its event and its answer have committed.
    const crashing = launch('main', { PORT: port, MERX_DATA_DIR: dataDir, MERX_FAILPOINTS: 'idempotency.answer_committed=crash' });
    await running(crashing);
    await assert.rejects(create(), 'the client never gets the answer');
    assert.equal(await exitOf(crashing), null, 'killed by the failpoint');

    const restarted = launch('main', { PORT: port, MERX_DATA_DIR: dataDir });
    try {
      await running(restarted);
      const retried = await create();
      const body = (await retried.json()) as { id: string; secret: string };
      assert.equal(retried.status, 201);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true', 'the retry replays the committed answer');
      assert.match(body.secret, /^mx_test_/);
      const token = await tokenFor(credentials.base_url, credentials.api_key);
      const keys = (await (await fetch(`${credentials.base_url}/api/v1/api-keys?limit=100`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        data: Array<{ id: string; name: string }>;
      };
      assert.deepEqual(
        keys.data.filter((key) => key.name === 'Created once').map((key) => key.id),
        [body.id],
        'one key, not two',
      );
    } finally {
      restarted.child.kill('SIGTERM');
      await exitOf(restarted);
    }
  });
});
