import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { purgeThrottleState } from '@merx/gateway';
import { createPostgresDb, freePort, migrateSchema, migrationChecksum } from '@merx/kit';
import pg from 'pg';
import { removeDeploymentFromBroker, type DevCredentials } from '../src/index.js';
import { servicesDir } from '../src/cluster/service-process.js';
import { SERVICE_SCHEMAS } from '../src/schemas.js';
import { exitOf, launch, running, tokenFor } from './launch.js';

const POSTGRES_ADMIN_URL = process.env.MERX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const AMQP_URL = process.env.MERX_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The migrations of the release before checksums (main at a4e6123): every migration it had, by
 * schema. Shipped migrations are frozen, so their SQL is today's; what the upgrade adds is the rest.
 */
const PREVIOUS_RELEASE: Record<string, string[]> = {
  oauth: [
    '000_idempotency_keys',
    '000_inbox',
    '000_outbox',
    '001_accounts',
    '002_signing_keys',
    '003_oidc_payloads',
    '004_users_and_apps',
    '005_signing_key_states',
    '010_throttle_overrides',
  ],
  catalog: ['000_idempotency_keys', '000_inbox', '000_outbox', '001_products'],
  audit: ['000_idempotency_keys', '000_inbox', '000_outbox', '001_entries'],
  webhooks: ['000_idempotency_keys', '000_inbox', '000_outbox', '001_webhooks'],
  merchants: ['000_idempotency_keys', '000_inbox', '000_outbox', '001_merchant_configuration'],
};

function migrateCommand(databaseUrl: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [path.join(servicesDir, 'embedded/dist/src/migrate.js')], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('upgrading a deployment: the migrate command on a database of the previous release', function () {
  this.timeout(240_000);
  const unique = randomBytes(4).toString('hex');
  const database = `merx_upgrade_${unique}`;
  const deployment = `upgrade-${unique}`;
  let databaseUrl: string;
  let db: pg.Client;
  let dataDir: string;

  before(async () => {
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    const url = new URL(POSTGRES_ADMIN_URL);
    url.pathname = `/${database}`;
    databaseUrl = url.toString();
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'merx-upgrade-')), 'data');

    // The previous release's schema, written as its runner wrote it: ids only, no checksums.
    for (const { schema, migrations } of SERVICE_SCHEMAS) {
      const shipped = PREVIOUS_RELEASE[schema];
      if (!shipped) continue;
      await db.query(`CREATE SCHEMA ${schema}`);
      await db.query(`CREATE TABLE ${schema}.schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      for (const id of shipped) {
        const migration = migrations.find((candidate) => candidate.id === id);
        assert.ok(migration, `${schema}/${id} shipped and must still exist`);
        await db.query(migration.sql.replaceAll('{{schema}}', schema));
        await db.query(`INSERT INTO ${schema}.schema_migrations (id) VALUES ($1)`, [id]);
      }
    }
    // Data of that release: a product and the answer to an idempotent POST, keyed the old way.
    await db.query(
      `INSERT INTO catalog.products (merchant_id, id, sku, title, price, currency, status, created_at, updated_at)
       VALUES ('mer_old', 'prod_old', 'OLD-1', 'From the last release', 12.5, 'EUR', 'active', now(), now())`,
    );
    // A merchant of that release, changed on both sides: version 3 in oauth (its standing) and 4 in the merchants service (its profile).
    await db.query(
      `INSERT INTO oauth.merchants (id, name, mode, plan, default_currency, timezone, status, version, created_at, updated_at)
       VALUES ('mch_old', 'Old shop', 'sandbox', 'scale', 'EUR', 'UTC', 'suspended', 3, now(), now())`,
    );
    await db.query(
      `INSERT INTO merchants.merchants (merchant_id, name, mode, plan, default_currency, timezone, status, version, created_at, updated_at)
       VALUES ('mch_old', 'Renamed old shop', 'sandbox', 'scale', 'EUR', 'UTC', 'suspended', 4, now(), now())`,
    );
    await db.query(
      `INSERT INTO catalog.idempotency_keys (merchant_id, key, request_hash, state, response_status, response_body) VALUES ('mer_old', 'key-1', 'hash', 'done', 201, '{"id":"prod_old"}')`,
    );
  });

  after(async () => {
    await db.end();
    await rm(path.dirname(dataDir), { recursive: true, force: true });
    await removeDeploymentFromBroker(AMQP_URL, deployment);
    await purgeThrottleState(REDIS_URL, `${deployment}:`);
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it('applies only what is new, keeps every row, records checksums, and leaves schemas that replicas verify', async () => {
    const first = await migrateCommand(databaseUrl);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^migrate: catalog: applied 000_idempotency_keys_by_credential, 000_outbox_trace_context$/m);
    assert.match(
      first.stdout,
      /^migrate: oauth: applied 000_idempotency_keys_by_credential, 000_outbox_trace_context, 012_login_failures, 013_merchant_group_versions$/m,
    );
    // Each side's numbering so far goes on as the version of the half it owns; the shown version stays.
    const { rows: standing } = await db.query(
      `SELECT status, standing_version, profile_version, standing_updated_at = updated_at AS same_time FROM oauth.merchants WHERE id = 'mch_old'`,
    );
    assert.deepEqual(standing, [{ status: 'suspended', standing_version: 3, profile_version: 1, same_time: true }]);
    const { rows: profile } = await db.query(`SELECT name, profile_version, standing_version FROM merchants.merchants WHERE merchant_id = 'mch_old'`);
    assert.deepEqual(profile, [{ name: 'Renamed old shop', profile_version: 4, standing_version: 1 }]);
    assert.match(first.stdout, /^migrate: console: applied 001_sessions$/m);

    const { rows: products } = await db.query(`SELECT sku, title, price::text AS price, currency FROM catalog.products WHERE merchant_id = 'mer_old'`);
    assert.deepEqual(products, [{ sku: 'OLD-1', title: 'From the last release', price: '12.5000', currency: 'EUR' }]);
    const { rows: keys } = await db.query(`SELECT client_id, response_status, response_body FROM catalog.idempotency_keys WHERE merchant_id = 'mer_old'`);
    assert.deepEqual(keys, [{ client_id: '', response_status: 201, response_body: '{"id":"prod_old"}' }], 'the stored answer is kept, as a legacy key');
    for (const { schema } of SERVICE_SCHEMAS) {
      const { rows } = await db.query<{ missing: string }>(`SELECT count(*)::text AS missing FROM ${schema}.schema_migrations WHERE checksum IS NULL`);
      assert.equal(rows[0]?.missing, '0', `${schema}: every applied migration has its checksum`);
    }

    const again = await migrateCommand(databaseUrl);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout.match(/up to date$/gm)?.length, SERVICE_SCHEMAS.length, again.stdout);

    const pool = createPostgresDb(databaseUrl, { maxConnections: 1 });
    try {
      for (const { schema, migrations } of SERVICE_SCHEMAS) assert.deepEqual(await migrateSchema(pool, schema, migrations, 'verify'), [], schema);
    } finally {
      await pool.close();
    }
  });

  it('refuses, in one line, a database whose applied migration no longer matches its file', async () => {
    await db.query(`UPDATE catalog.schema_migrations SET checksum = repeat('0', 64) WHERE id = '001_products'`);
    try {
      const refused = await migrateCommand(databaseUrl);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^migrate: could not start: migration catalog\/001_products was changed after it was applied .*\n$/);
    } finally {
      const { catalogMigrations } = await import('@merx/catalog');

      await db.query(`UPDATE catalog.schema_migrations SET checksum = $1 WHERE id = '001_products'`, [
        migrationChecksum(catalogMigrations.find((m) => m.id === '001_products')!),
      ]);
    }
  });

  it('serves the upgraded database: the distributed start on it answers the API, with the old rows in place', async () => {
    const env = { DATABASE_URL: databaseUrl, AMQP_URL, REDIS_URL, MERX_DEPLOYMENT: deployment, MERX_DATA_DIR: dataDir, PORT: String(await freePort()) };
    const started = launch('main-distributed', env);
    try {
      await running(started);
      const credentials = JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as DevCredentials;
      const token = await tokenFor(credentials.base_url, credentials.api_key);
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const body = JSON.stringify({ sku: 'NEW-1', title: 'After the upgrade', price: '5.00', currency: 'USD' });
      const created = await fetch(`${credentials.base_url}/api/v1/products`, { method: 'POST', headers: { ...headers, 'idempotency-key': 'upgrade-1' }, body });
      assert.equal(created.status, 201, await created.clone().text());
      const replayed = await fetch(`${credentials.base_url}/api/v1/products`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': 'upgrade-1' },
        body,
      });
      assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
      const listed = (await (await fetch(`${credentials.base_url}/api/v1/products`, { headers })).json()) as { data: Array<{ sku: string }> };
      assert.deepEqual(
        listed.data.map((product) => product.sku),
        ['NEW-1'],
      );
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM catalog.products WHERE merchant_id = 'mer_old'`);
      assert.deepEqual(rows, [{ n: 1 }]);
    } finally {
      started.child.kill('SIGTERM');
    }
    assert.equal(await exitOf(started), 0, started.stderr());
  });
});
