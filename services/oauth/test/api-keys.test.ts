import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createContractValidator } from '@merx/contracts';
import {
  API_AUDIENCE,
  createJwksTokenVerifier,
  createLogger,
  createPostgresDb,
  MemoryBus,
  RevocationList,
  serviceAuthorization,
  startRevocationFeed,
  type Db,
  type MerxEvent,
  type RevocationFeed,
} from '@merx/kit';
import { hashApiKey, provisionMerchant, revocationsFromStore, startOauth, type RunningOauth } from '../src/index.js';

const ADMIN_URLS = ['postgres://root@127.0.0.1:5432/postgres', 'postgres://postgres@127.0.0.1:5432/postgres'];
const ISSUER = 'http://localhost:8080/oauth';
const FORWARDED = { 'x-forwarded-host': 'localhost:8080', 'x-forwarded-proto': 'http' };
const contract = createContractValidator();

interface Answer {
  status: number;
  body: any;
  text: string;
}

async function freshDatabase(): Promise<{ db: Db; drop(): Promise<void> }> {
  for (const url of ADMIN_URLS) {
    const admin = createPostgresDb(url, { maxConnections: 1 });
    try {
      await admin.ping();
    } catch {
      await admin.close();
      continue;
    }
    const name = `oauth_test_${randomBytes(6).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const db = createPostgresDb(`${url.slice(0, url.lastIndexOf('/'))}/${name}`, { maxConnections: 10 });
    return {
      db,
      async drop() {
        await db.close();
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.close();
      },
    };
  }
  throw new Error('no PostgreSQL admin connection');
}

const SERVICE_TOKEN = randomBytes(32).toString('base64url');
describe('oauth: API keys (PostgreSQL)', function () {
  this.timeout(30_000);
  let database: { db: Db; drop(): Promise<void> };
  let oauth: RunningOauth;
  let bus: MemoryBus;
  let feed: RevocationFeed;
  const events: MerxEvent[] = [];

  before(async () => {
    database = await freshDatabase();
    bus = new MemoryBus();
    await bus.consume({ queue: 'observer', bindings: ['api_keys.*'] }, async (event) => {
      events.push(event);
    });
    const logger = createLogger('oauth', 'silent');
    const revocations = new RevocationList({ maxTokenLifetimeSeconds: 900 });
    let url = '';
    oauth = await startOauth({
      db: database.db,
      bus,
      logger,
      issuer: ISSUER,
      audience: API_AUDIENCE,
      accessTokenTtlSeconds: 900,
      operatorToken: randomBytes(32).toString('hex'),
      cookieSecret: randomBytes(32).toString('hex'),
      serviceToken: SERVICE_TOKEN,
      verifier: createJwksTokenVerifier({ jwksUrl: () => `${url}/oauth/jwks`, issuer: ISSUER, audience: API_AUDIENCE, revocations }),
      port: 0,
      host: '127.0.0.1',
    });
    url = oauth.url;
    feed = await startRevocationFeed({ list: revocations, bus, service: 'oauth-test', logger, load: revocationsFromStore(database.db, 900) });
    await feed.bootstrapped;
  });
  after(async () => {
    await feed?.stop();
    await oauth?.stop();
    await bus?.close();
    await database?.drop();
  });

  async function call(method: string, path: string, token: string | undefined, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${oauth.url}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    const problems = contract.validateResponse({
      method,
      path,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: text,
      headers: response.headers,
    });
    assert.deepEqual(problems, [], `${method} ${path} answered outside the contract: ${text}`);
    return { status: response.status, text, body: text ? JSON.parse(text) : undefined };
  }

  async function tokenResponse(apiKey: string, scope?: string): Promise<{ status: number; body: any }> {
    const clientId = apiKey.split('_').slice(0, 3).join('_');
    const form = new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
    const response = await fetch(`${oauth.url}/oauth/token`, {
      method: 'POST',
      headers: {
        ...FORWARDED,
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`,
      },
      body: form,
    });
    return { status: response.status, body: await response.json() };
  }

  async function merchant(scope?: string) {
    const provisioned = await provisionMerchant(oauth.outbox, { name: 'Key test', owner: { email: `owner-${randomBytes(4).toString('hex')}@example.com` } });
    const answer = await tokenResponse(provisioned.api_key.secret!, scope);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return { merchantId: provisioned.merchant.id, token: answer.body.access_token as string, firstKey: provisioned.api_key };
  }

  const flush = async () => {
    oauth.relay.wake();
    const deadline = Date.now() + 5_000;
    let count = -1;
    while (Date.now() < deadline && count !== events.length) {
      count = events.length;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it('creates a key with a subset of scopes, shows the secret once and stores only its hash', async () => {
    const { merchantId, token } = await merchant();
    const created = await call('POST', '/api/v1/api-keys', token, { name: 'Reporting', scopes: ['products:read'] });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.secret, /^mx_test_[0-9A-Za-z]{16}_[0-9A-Za-z]{32}$/);
    assert.deepEqual(created.body.scopes, ['products:read']);
    assert.equal(created.body.revoked_at, null);
    const { rows } = await database.db.query<Record<string, unknown>>('SELECT * FROM oauth.api_keys WHERE id = $1', [created.body.id]);
    assert.equal(rows[0]!.secret_hash, hashApiKey(created.body.secret));
    assert.ok(!JSON.stringify(rows).includes(created.body.secret.split('_')[3]), 'the secret is stored somewhere');
    const retrieved = await call('GET', `/api/v1/api-keys/${created.body.id}`, token);
    assert.equal(retrieved.body.secret, undefined);
    const { secret: _secret, ...withoutSecret } = created.body;
    assert.deepEqual(retrieved.body, withoutSecret);
    const narrow = await tokenResponse(created.body.secret);
    assert.equal(narrow.status, 200);
    assert.equal(narrow.body.scope, 'products:read');
    await flush();
    const created_ = events.find((event) => event.topic === 'api_keys.created' && (event.data.object as { id: string }).id === created.body.id);
    assert.ok(created_, 'no api_keys.created event');
    assert.equal(created_.merchant_id, merchantId);
    assert.ok(!JSON.stringify(created_).includes(created.body.secret), 'the event carries the secret');
  });

  it('refuses a scope the calling token does not hold, unknown scopes and bad names (422)', async () => {
    const { token } = await merchant('api_keys:write products:read');
    const wider = await call('POST', '/api/v1/api-keys', token, { name: 'Wider', scopes: ['products:read', 'products:write'] });
    assert.equal(wider.status, 422, wider.text);
    assert.deepEqual(
      wider.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]),
      [['scopes[1]', 'scope_not_held']],
    );
    const unknown = await call('POST', '/api/v1/api-keys', token, { name: 'x', scopes: ['root'] });
    assert.equal(unknown.status, 422);
    const empty = await call('POST', '/api/v1/api-keys', token, { name: '', scopes: [] });
    assert.deepEqual(empty.body.errors.map((e: { field: string }) => e.field).sort(), ['name', 'scopes']);
    const long = await call('POST', '/api/v1/api-keys', token, { name: 'n'.repeat(256), scopes: ['products:read'] });
    assert.equal(long.status, 422);
    const list = await call('GET', '/api/v1/api-keys', token);
    assert.equal(list.body.data.length, 1, 'only the first key exists');
  });

  it('answers 401 without a token and 403 without api_keys:write', async () => {
    const { token } = await merchant('products:read');
    assert.equal((await call('GET', '/api/v1/api-keys', undefined)).status, 401);
    const forbidden = await call('POST', '/api/v1/api-keys', token, { name: 'x', scopes: ['products:read'] });
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.required_scope, 'api_keys:write');
  });

  it('lists newest first with a cursor, never with a secret', async () => {
    const { token, firstKey } = await merchant();
    const ids: string[] = [];
    for (const name of ['one', 'two', 'three']) ids.push((await call('POST', '/api/v1/api-keys', token, { name, scopes: ['products:read'] })).body.id);
    const first = await call('GET', '/api/v1/api-keys?limit=2', token);
    assert.deepEqual(
      first.body.data.map((k: { id: string }) => k.id),
      [ids[2], ids[1]],
    );
    assert.equal(first.body.has_more, true);
    const second = await call('GET', `/api/v1/api-keys?limit=2&cursor=${first.body.next_cursor}`, token);
    assert.deepEqual(
      second.body.data.map((k: { id: string }) => k.id),
      [ids[0], firstKey.id],
    );
    assert.equal(second.body.has_more, false);
    assert.ok(!first.text.includes('secret') && !second.text.includes('secret'));
  });

  it('replays a create with the same Idempotency-Key and makes one key', async () => {
    const { token } = await merchant();
    const headers = { 'idempotency-key': 'create-once' };
    const first = await call('POST', '/api/v1/api-keys', token, { name: 'Once', scopes: ['products:read'] }, headers);
    const again = await call('POST', '/api/v1/api-keys', token, { name: 'Once', scopes: ['products:read'] }, headers);
    assert.equal(again.text, first.text);
    assert.equal((await call('GET', '/api/v1/api-keys', token)).body.data.length, 2);
  });

  it('revokes: 204 twice with one event, keeps the row, gives no new token and refuses old tokens', async () => {
    const { token } = await merchant();
    const created = await call('POST', '/api/v1/api-keys', token, { name: 'Doomed', scopes: ['api_keys:write'] });
    const doomedToken = (await tokenResponse(created.body.secret)).body.access_token as string;
    assert.equal((await call('GET', '/api/v1/api-keys', doomedToken)).status, 200);
    assert.equal((await call('DELETE', `/api/v1/api-keys/${created.body.id}`, token)).status, 204);
    assert.equal((await call('DELETE', `/api/v1/api-keys/${created.body.id}`, token)).status, 204);
    const refused = await tokenResponse(created.body.secret);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_client');
    const deadline = Date.now() + 1_000;
    let answer = await call('GET', '/api/v1/api-keys', doomedToken);
    while (answer.status === 200 && Date.now() < deadline) answer = await call('GET', '/api/v1/api-keys', doomedToken);
    assert.equal(answer.status, 401);
    assert.equal(answer.body.detail, 'the credential was revoked');
    const shown = await call('GET', `/api/v1/api-keys/${created.body.id}`, token);
    assert.match(shown.body.revoked_at, /Z$/);
    await flush();
    assert.equal(events.filter((event) => event.topic === 'api_keys.revoked' && (event.data.object as { id: string }).id === created.body.id).length, 1);
    assert.equal((await call('GET', '/api/v1/api-keys', token)).status, 200, 'the revoking token still works');
  });

  it("answers 404 for another merchant's key, and changes nothing", async () => {
    const a = await merchant();
    const b = await merchant();
    const key = (await call('POST', '/api/v1/api-keys', a.token, { name: 'Mine', scopes: ['products:read'] })).body;
    assert.equal((await call('GET', `/api/v1/api-keys/${key.id}`, b.token)).status, 404);
    assert.equal((await call('DELETE', `/api/v1/api-keys/${key.id}`, b.token)).status, 404);
    assert.equal((await call('GET', `/api/v1/api-keys/${key.id}`, a.token)).body.revoked_at, null);
    const listed = await call('GET', '/api/v1/api-keys', b.token);
    assert.ok(!listed.text.includes(key.id) && !listed.text.includes(a.merchantId));
  });

  it('serves the revocation list on the internal endpoint, to the service credential only', async () => {
    const { token } = await merchant();
    const created = await call('POST', '/api/v1/api-keys', token, { name: 'Listed', scopes: ['products:read'] });
    await call('DELETE', `/api/v1/api-keys/${created.body.id}`, token);
    const since = encodeURIComponent(new Date(Date.now() - 60_000).toISOString());
    for (const authorization of [undefined, 'Bearer not-the-service-token', `Bearer ${token}`]) {
      const refused = await fetch(`${oauth.url}/internal/v1/revocations?since=${since}`, { headers: authorization ? { authorization } : {} });
      assert.equal(refused.status, 401, `${authorization ?? 'no credential'} must be refused`);
      assert.equal(((await refused.json()) as { code: string }).code, 'unauthenticated');
    }
    const response = await fetch(`${oauth.url}/internal/v1/revocations?since=${since}`, { headers: serviceAuthorization(SERVICE_TOKEN) });
    const body = (await response.json()) as { entries: Array<{ client_id: string }>; max_token_lifetime_seconds: number };
    assert.equal(response.status, 200);
    assert.equal(body.max_token_lifetime_seconds, 900);
    assert.ok(body.entries.some((entry) => entry.client_id === created.body.prefix));
  });
});
