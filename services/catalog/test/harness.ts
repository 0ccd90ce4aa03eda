import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { PGlite } from '@electric-sql/pglite';
import { createContractValidator, type ContractValidator } from '@merx/contracts';
import {
  API_AUDIENCE,
  createLogger,
  createPgliteDb,
  createPostgresDb,
  createTokenVerifier,
  MemoryBus,
  newId,
  openPglite,
  Outbox,
  type Db,
  type MerxEvent,
} from '@merx/kit';
import { CATALOG_SCHEMA, startCatalog, type RunningCatalog } from '../src/index.js';
import { EventLog, HandledDeliveries, TEST_FLUSH_TOPIC } from '@merx/kit/testing';

export const ISSUER = 'http://localhost:8080/oauth';
export const ALL_SCOPES = 'products:read products:write';
const ADMIN_URLS = ['postgres://root@127.0.0.1:5432/postgres', 'postgres://postgres@127.0.0.1:5432/postgres'];

/** The one contract validator for every test file: compiling the document is the slow part. */
export const contract: ContractValidator = createContractValidator();

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  // Tests read arbitrary members of JSON answers; a precise type per endpoint would add nothing.
  body: any;
}

export interface RequestOptions {
  /** Serialised as JSON with Content-Type application/json. */
  json?: unknown;
  /** Sent as is; pair with `contentType`. */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Overrides the client's token; null sends no Authorization header. */
  token?: string | null;
}

export interface TokenOptions {
  merchantId: string;
  scope?: string;
  audience?: string;
  expiresAt?: number;
  issuedAt?: number;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const base62 = (length: number) => Array.from(randomBytes(length), (byte) => BASE62[byte % 62]).join('');

export class ApiClient {
  constructor(
    private readonly harness: Harness,
    readonly merchantId: string,
    readonly token: string,
  ) {}

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? this.token : options.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    } else if (options.raw !== undefined) {
      body = options.raw;
      if (options.contentType) headers['content-type'] = options.contentType;
    }
    const response = await fetch(`${this.harness.url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await response.text();
    const problems = contract.validateResponse({
      method,
      path,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: text,
      headers: response.headers,
    });
    assert.deepEqual(problems, [], `${method} ${path} answered outside the contract:\n${text.slice(0, 2000)}`);
    assert.match(response.headers.get('x-request-id') ?? '', /^req_[0-9a-z]{26}$/);
    let parsed: unknown = undefined;
    if (text.length > 0 && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, text, body: parsed };
  }

  post = (path: string, json: unknown, options: RequestOptions = {}) => this.request('POST', path, { ...options, json });
  patch = (path: string, json: unknown, options: RequestOptions = {}) => this.request('PATCH', path, { ...options, json });
  get = (path: string, options: RequestOptions = {}) => this.request('GET', path, options);
  delete = (path: string, options: RequestOptions = {}) => this.request('DELETE', path, options);

  /** Creates a product and insists on the 201, for tests whose subject is something else. */
  async create(fields: Record<string, unknown> = {}): Promise<ApiResponse['body']> {
    const response = await this.post('/api/v1/products', { sku: `SKU-${base62(10)}`, title: 'A product', price: '10.00', currency: 'USD', ...fields });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  /** Every event of this merchant published so far, once everything committed has arrived. */
  async events(): Promise<MerxEvent[]> {
    await this.harness.flush();
    return this.harness.events.of(this.merchantId);
  }
}

export interface Harness {
  url: string;
  catalog: RunningCatalog;
  db: Db;
  bus: MemoryBus;
  events: EventLog;
  signToken(options: TokenOptions): Promise<string>;
  /** A fresh merchant with a token holding `scope`. */
  merchant(scope?: string): Promise<ApiClient>;
  /** A client for an existing merchant with another token. */
  as(merchantId: string, token: string): ApiClient;
  flush(): Promise<void>;
  /**
   * Publishes `event` on the bus, `copies` times at once (a redelivery racing the first), and
   * waits until the catalog has handled every copy.
   */
  deliver(event: MerxEvent, copies?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface Storage {
  db: Db;
  close(): Promise<void>;
}

async function connectAdmin(): Promise<{ admin: Db; baseUrl: string }> {
  const failures: string[] = [];
  for (const url of ADMIN_URLS) {
    const admin = createPostgresDb(url, { maxConnections: 1 });
    try {
      await admin.ping();
      return { admin, baseUrl: url.slice(0, url.lastIndexOf('/')) };
    } catch (error) {
      failures.push(`${url}: ${(error as Error).message}`);
      await admin.close();
    }
  }
  throw new Error(`no PostgreSQL admin connection: ${failures.join('; ')}`);
}

/**
 * A database of its own per run, dropped at the end, so runs never see each other's rows.
 * `timeZone` sets the sessions' TimeZone, in which PostgreSQL writes timestamps as text.
 */
export async function freshPostgres(options: { timeZone?: string } = {}): Promise<Storage> {
  const { admin, baseUrl } = await connectAdmin();
  const name = `catalog_test_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const sessionOptions = options.timeZone ? `?options=${encodeURIComponent(`-c TimeZone=${options.timeZone}`)}` : '';
  const db = createPostgresDb(`${baseUrl}/${name}${sessionOptions}`, { maxConnections: 10, applicationName: 'catalog-test' });
  return {
    db,
    async close() {
      await db.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    },
  };
}

export async function freshPglite(): Promise<Storage> {
  const pglite: PGlite = await openPglite(undefined);
  const db = createPgliteDb(pglite);
  return { db, close: () => pglite.close() };
}

export async function startHarness(options: { embedded?: boolean } = {}): Promise<Harness> {
  const storage = options.embedded ? await freshPglite() : await freshPostgres();
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'catalog-test', alg: 'ES256', use: 'sig' };
  const verifier = createTokenVerifier(createLocalJWKSet({ keys: [publicJwk] }), { issuer: ISSUER, audience: API_AUDIENCE });
  const bus = new MemoryBus();
  const events = new EventLog(contract);
  await bus.consume({ queue: 'test-observer', bindings: ['#'] }, async (event) => events.receive(event));
  const logger = createLogger('catalog', 'silent');
  const handled = new HandledDeliveries();
  let catalog: RunningCatalog;
  try {
    catalog = await startCatalog({ db: storage.db, bus: handled.watch(bus), logger, verifier, port: 0, host: '127.0.0.1' });
  } catch (error) {
    await storage.close();
    throw error;
  }
  const outbox = new Outbox(storage.db, CATALOG_SCHEMA);

  const signToken = (token: TokenOptions) => sign(privateKey, token);
  const harness: Harness = {
    url: catalog.url,
    catalog,
    db: storage.db,
    bus,
    events,
    signToken,
    async merchant(scope = ALL_SCOPES) {
      const merchantId = newId('mch');
      return new ApiClient(harness, merchantId, await signToken({ merchantId, scope }));
    },
    as: (merchantId, token) => new ApiClient(harness, merchantId, token),
    async flush() {
      // Rows leave the outbox in position order and the memory bus keeps that order, so once this
      // row arrives every event committed before it has arrived too.
      const id = newId('evt');
      const arrived = events.awaitFlush(id);
      await outbox.record(storage.db, [
        { id, topic: TEST_FLUSH_TOPIC, merchant_id: newId('mch'), created_at: new Date().toISOString(), api_version: 'v1', data: { object: {} } },
      ]);
      catalog.relay.wake();
      await arrived;
    },
    async deliver(event, copies = 1) {
      const done = handled.until(event.id, handled.count(event.id) + copies);
      await bus.publish(Array.from({ length: copies }, () => event));
      await done;
    },
    async stop() {
      await catalog.stop();
      await bus.close();
      await storage.close();
    },
  };
  return harness;
}

async function sign(privateKey: CryptoKey, options: TokenOptions): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ merchant_id: options.merchantId, client_id: `mx_test_${base62(16)}`, scope: options.scope ?? ALL_SCOPES })
    .setProtectedHeader({ alg: 'ES256', kid: 'catalog-test', typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(options.audience ?? API_AUDIENCE)
    .setJti(randomUUID())
    .setIssuedAt(options.issuedAt ?? now)
    .setExpirationTime(options.expiresAt ?? now + 900)
    .sign(privateKey);
}

/** The problem body without what legitimately differs between two answers (request id, the id named in detail). */
export function problemShape(body: Record<string, unknown>, id: string): Record<string, unknown> {
  const { request_id: _requestId, ...rest } = body;
  return { ...rest, detail: String(rest.detail).replace(id, '<id>') };
}

export function fieldsOf(response: ApiResponse): string[] {
  return ((response.body?.errors ?? []) as { field: string }[]).map((error) => error.field).sort();
}

/**
 * The hooks every PostgreSQL catalog suite shares: one service per file, a fresh merchant per
 * test, and no test may leave an event that breaks the catalogue.
 */
export function useHarness(onStart: (harness: Harness) => void, onMerchant: (api: ApiClient) => void): void {
  let harness: Harness | undefined;
  before(async () => {
    harness = await startHarness();
    onStart(harness);
  });
  after(async () => {
    await harness?.stop();
  });
  beforeEach(async () => {
    onMerchant(await harness!.merchant());
  });
  afterEach(() => {
    assert.deepEqual(harness!.events.takeProblems(), [], 'every published event matches the event catalogue');
  });
}
