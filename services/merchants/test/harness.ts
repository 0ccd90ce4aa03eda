import assert from 'node:assert/strict';
import { createContractValidator, recordEventNames, type ContractValidator } from '@merx/contracts';
import { buildEvent, createLogger, createPgliteDb, MemoryBus, newId, openPglite, type Db, type MerxEvent } from '@merx/kit';
import {
  ContractClient,
  createScratchDatabase,
  HandledDeliveries,
  createTestTokenIssuer,
  EventLog,
  TEST_FLUSH_TOPIC,
  type TestTokenIssuer,
  testSecretKeys,
} from '@merx/kit/testing';
import { merchantsSettingsFromEnv, startMerchants, type RunningMerchants } from '../src/index.js';

export const ALL_SCOPES = 'merchant:read merchant:write config:read config:write sandbox:reset';
/** What the service consumes (events/consumer.ts): settling waits until each copy of these is handled. */
const CONSUMED_TOPICS = new Set([
  'merchants.created',
  'merchants.updated',
  'merchants.standing_changed',
  ...recordEventNames,
  'sandbox.reset',
  'internal.sandbox_service_reset',
  'internal.destination_disabled',
]);

/** Compiling the OpenAPI document is the slow part: one validator for every file. */
export const contract: ContractValidator = createContractValidator();

/** A merchant's view of the API over real HTTP, every answer checked against the OpenAPI document. */
export class MerchantsClient extends ContractClient {
  constructor(
    private readonly harness: Harness,
    merchantId: string,
    token: string,
  ) {
    super(harness.url, merchantId, token, contract);
  }

  /** Creates a configuration resource and insists on the 201. */
  async create(collection: 'sources' | 'destinations' | 'rules' | 'connections', fields: Record<string, unknown>): Promise<any> {
    const response = await this.post(`/api/v1/${collection}`, fields);
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  source = (fields: Record<string, unknown> = {}) => this.create('sources', { name: 'Storefront', kind: 'storefront', ...fields });
  destination = (fields: Record<string, unknown> = {}) => this.create('destinations', { name: 'ERP', url: 'https://erp.example.com/hooks', ...fields });
  rule = (fields: Record<string, unknown>) => this.create('rules', { name: 'A rule', ...fields });
  connection = (fields: Record<string, unknown>) => this.create('connections', fields);

  /** Ingests a batch and insists on the 200. */
  async ingest(sourceId: string, records: unknown[]): Promise<any> {
    const response = await this.post(`/api/v1/sources/${sourceId}/records`, { records });
    assert.equal(response.status, 200, response.text);
    return response.body;
  }

  /** This merchant's events once the service is idle (everything committed has arrived and been handled). */
  async events(topic?: string): Promise<MerxEvent[]> {
    await this.harness.settle();
    return this.harness.events.of(this.merchantId, topic);
  }

  async topics(): Promise<string[]> {
    return (await this.events()).map((event) => event.topic);
  }
}

export function merchantObject(id: string, overrides: Record<string, unknown> = {}) {
  const at = new Date().toISOString();
  return {
    id,
    object: 'merchant',
    name: 'Acme Sandbox',
    mode: 'sandbox',
    plan: 'sandbox',
    default_currency: 'EUR',
    timezone: 'Europe/Berlin',
    status: 'active',
    version: 1,
    profile_version: 1,
    standing_version: 1,
    created_at: at,
    updated_at: at,
    ...overrides,
  };
}

/** The standing as oauth's merchants.standing_changed carries it. */
export function standingObject(id: string, overrides: Record<string, unknown> = {}) {
  return {
    object: 'merchant_standing',
    id,
    mode: 'sandbox',
    plan: 'sandbox',
    status: 'active',
    version: 2,
    updated_at: new Date().toISOString(),
    ...overrides,
  };
}

export function order(externalId: string, data: Record<string, unknown> = {}) {
  return { type: 'order', external_id: externalId, occurred_at: '2026-11-22T10:04:05.123Z', data: { total: 10, currency: 'EUR', ...data } };
}

export interface MerchantOptions {
  mode?: 'sandbox' | 'live';
  scope?: string;
  /** Publish merchants.created (as oauth does) and wait until the service has taken it in. */
  provision?: boolean;
}

export interface Harness {
  url: string;
  db: Db;
  bus: MemoryBus;
  service: RunningMerchants;
  tokens: TestTokenIssuer;
  events: EventLog;
  handled: HandledDeliveries;
  merchant(options?: MerchantOptions): Promise<MerchantsClient>;
  /** Publishes an event as another service would, `copies` times at once, and waits until the service handled each copy. */
  deliver(event: MerxEvent, copies?: number): Promise<void>;
  publish(merchantId: string, topic: string, object: Record<string, unknown>, previous?: Record<string, unknown>): Promise<MerxEvent>;
  /** Everything committed so far has reached the bus (and the log). */
  flush(): Promise<void>;
  /** Flushes until the service has handled every event it consumes and published nothing new. */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

export async function startHarness(options: { embedded?: boolean } = {}): Promise<Harness> {
  let db: Db;
  let drop: () => Promise<void>;
  if (options.embedded) {
    const pglite = await openPglite(undefined);
    db = createPgliteDb(pglite);
    drop = () => pglite.close();
  } else {
    const scratch = await createScratchDatabase('merchants_test');
    db = scratch.db;
    drop = scratch.drop;
  }
  const bus = new MemoryBus();
  const events = new EventLog(contract);
  await bus.consume({ queue: 'test-observer', bindings: ['#'], prefetch: 1000 }, async (event) => events.receive(event));
  const handled = new HandledDeliveries();
  const tokens = await createTestTokenIssuer();
  let service: RunningMerchants;
  try {
    service = await startMerchants({
      db,
      bus: handled.watch(bus),
      logger: createLogger('merchants', process.env.LOG_LEVEL ?? 'silent'),
      verifier: tokens.verifier,
      port: 0,
      host: '127.0.0.1',
      // A generous rule budget: these tests are about routing, not about a slow machine's first compile.
      settings: merchantsSettingsFromEnv({ MERX_RULE_TIMEOUT_MS: '5000' }),
      secretKeys: testSecretKeys(),
      // Destination URLs name public hosts; no test depends on real DNS.
      resolver: async () => [{ address: '93.184.216.34', family: 4 }],
    });
  } catch (error) {
    await drop();
    throw error;
  }

  const harness: Harness = {
    url: service.url,
    db,
    bus,
    service,
    tokens,
    events,
    handled,
    async merchant({ mode = 'sandbox', scope = ALL_SCOPES, provision = false } = {}) {
      const merchantId = newId('mch');
      const client = new MerchantsClient(harness, merchantId, await tokens.sign({ merchantId, scope, mode }));
      if (provision)
        await harness.deliver(
          buildEvent('merchants.created', merchantId, { object: merchantObject(merchantId, { mode, plan: mode === 'live' ? 'standard' : 'sandbox' }) }),
        );
      return client;
    },
    async deliver(event, copies = 1) {
      const done = handled.until(event.id, handled.count(event.id) + copies);
      await bus.publish(Array.from({ length: copies }, () => event));
      await done;
    },
    async publish(merchantId, topic, object, previous) {
      const event = buildEvent(topic, merchantId, previous ? { object, previous } : { object });
      await harness.deliver(event);
      return event;
    },
    async flush() {
      // The relay publishes outbox rows in order and the memory bus keeps it: once this row is
      // seen, every event committed before it has been seen too.
      const id = newId('evt');
      const arrived = events.awaitFlush(id);
      await service.outbox.record(db, [
        { id, topic: TEST_FLUSH_TOPIC, merchant_id: newId('mch'), created_at: new Date().toISOString(), api_version: 'v1', data: { object: {} } },
      ]);
      service.relay.wake();
      await arrived;
    },
    async settle() {
      for (;;) {
        await harness.flush();
        const copies = new Map<string, number>();
        for (const event of events.events) if (CONSUMED_TOPICS.has(event.topic)) copies.set(event.id, (copies.get(event.id) ?? 0) + 1);
        await Promise.all([...copies].map(([id, count]) => handled.until(id, count)));
        const seen = events.events.length;
        await harness.flush();
        if (events.events.length === seen) return;
      }
    },
    async stop() {
      await service.stop();
      await bus.close();
      await drop();
    },
  };
  return harness;
}

/**
 * The hooks every suite shares: one service per database per file, and no test may publish an
 * event outside the catalogues.
 */
export function useHarness(embedded: boolean): () => Harness {
  let harness: Harness | undefined;
  before(async () => {
    harness = await startHarness({ embedded });
  });
  after(async () => {
    await harness?.stop();
  });
  afterEach(async () => {
    if (!harness) return;
    await harness.settle();
    assert.deepEqual(harness.events.takeProblems(), [], 'every published event matches its catalogue');
  });
  return () => harness!;
}

export const databases = [
  { name: 'PostgreSQL', embedded: false },
  { name: 'PGlite', embedded: true },
];
