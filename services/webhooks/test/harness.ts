import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createContractValidator } from '@merx/contracts';
import {
  buildEvent,
  canonicalJson,
  createLogger,
  createPgliteDb,
  installSecretKeyRing,
  MemoryBus,
  migrateSchema,
  newId,
  openPglite,
  type Db,
  type MerxEvent,
} from '@merx/kit';
import { ContractClient, createScratchDatabase, createTestTokenIssuer, testSecretKeys, type TestTokenIssuer } from '@merx/kit/testing';
import { startWebhooks, type RunningWebhooks, type WebhookSettings } from '../src/index.js';
import { webhookSettingsFromEnv } from '../src/settings.js';
import type { NewDelivery } from '../src/store/deliveries-store.js';
import { WEBHOOKS_SCHEMA, webhooksMigrations } from '../src/store/migrations.js';
import type { EventStreamTiming } from '../src/usecases/event-stream.js';
import type { HostResolver, SecretKeyRing } from '@merx/kit';

export const contract = createContractValidator();
export const ALL_SCOPES = 'webhooks:read webhooks:write';

/** The body check a receiver does without any Merx code: hex HMAC-SHA256 of the JCS of the other fields. */
export function bodyHmacIsValid(body: string, secret: string): boolean {
  const { hmac_sha256: claimed, ...fields } = JSON.parse(body) as Record<string, unknown>;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return createHmac('sha256', key).update(canonicalJson(fields)).digest('hex') === claimed;
}

/** One merchant's view of the API, every answer checked against the OpenAPI document. */
export class WebhooksClient extends ContractClient {
  /** Creates a subscription and insists on the 201. */
  async subscribe(url: string, topics: string[] = ['*'], extra: Record<string, unknown> = {}): Promise<any> {
    const response = await this.post('/api/v1/webhooks/subscriptions', { url, topics, ...extra });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  /** Polls the delivery until `condition` holds (the worker runs on its own schedule). */
  async deliveryWhen(id: string, condition: (delivery: any) => boolean, timeoutMs = 15_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await this.get(`/api/v1/webhooks/deliveries/${id}`);
      if (condition(body)) return body;
      if (Date.now() > deadline) throw new Error(`delivery ${id} never reached the expected state; last: ${JSON.stringify(body)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Polls a list until `condition` holds for its items (events arrive through the bus on their own time). */
  async listWhen(path: string, condition: (items: any[]) => boolean, timeoutMs = 15_000): Promise<any[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await this.get(path);
      if (condition(body.data)) return body.data;
      if (Date.now() > deadline) throw new Error(`${path} never held what was expected; last: ${JSON.stringify(body)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Waits until fan-out has stored the event (it arrives from the bus on its own time). */
  async eventStored(eventId: string, timeoutMs = 15_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const response = await this.get(`/api/v1/events/${eventId}`);
      if (response.status === 200) return response.body;
      if (Date.now() > deadline) throw new Error(`event ${eventId} was never stored`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** The deliveries of one event, once fan-out has created at least `count`. */
  async deliveriesOf(eventId: string, count = 1, timeoutMs = 15_000): Promise<any[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await this.get(`/api/v1/webhooks/deliveries?event_id=${eventId}&limit=100`);
      const found = body.data;
      if (found.length >= count) return found;
      if (Date.now() > deadline) throw new Error(`fan-out made ${found.length} of ${count} deliveries for ${eventId}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

export interface Harness {
  url: string;
  db: Db;
  bus: MemoryBus;
  webhooks: RunningWebhooks;
  tokens: TestTokenIssuer;
  merchant(options?: { mode?: 'sandbox' | 'live'; scope?: string }): Promise<WebhooksClient>;
  /** Publishes an event on the bus as another service would (after its outbox commit). */
  publish(merchantId: string, topic: string, object?: Record<string, unknown>): Promise<MerxEvent>;
  stop(): Promise<void>;
}

/** Settings for component tests: loopback receivers allowed by exact host, a quick schedule. */
export function testSettings(overrides: Partial<WebhookSettings> = {}): WebhookSettings {
  return {
    ...webhookSettingsFromEnv({
      MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
      MERX_WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,400ms',
      MERX_WEBHOOK_RETRY_WINDOW: '2s',
      MERX_WEBHOOK_WORKER_STALE_AFTER: '1s',
      MERX_WEBHOOK_TIMEOUT: '2s',
      MERX_WEBHOOK_CONNECT_TIMEOUT: '1s',
    }),
    ...overrides,
  };
}

export interface HarnessOptions {
  settings?: WebhookSettings;
  now?: () => Date;
  random?: () => number;
  /** Reuse a database (a second replica, a restart). */
  db?: Db;
  bus?: MemoryBus;
  embedded?: boolean;
  resolver?: HostResolver;
  /** The key ring sealing secrets (a rotation); the test process's own ring when absent. */
  secretKeys?: SecretKeyRing;
  /** StreamEvents' settle time, tail tick and page size. */
  eventStreamTiming?: EventStreamTiming;
}

/** A product event with a valid catalogue payload, for tests whose subject is delivery. */
export function productObject(merchantSku = 'SKU-1') {
  const at = new Date().toISOString();
  return {
    id: newId('prod'),
    object: 'product',
    sku: merchantSku,
    title: 'A product',
    description: null,
    price: '10.00',
    currency: 'EUR',
    status: 'active',
    inventory_quantity: null,
    attributes: {},
    version: 1,
    created_at: at,
    updated_at: at,
  };
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  let db = options.db;
  let drop: (() => Promise<void>) | undefined;
  if (!db) {
    if (options.embedded) {
      const pglite = await openPglite(undefined);
      db = createPgliteDb(pglite);
      drop = () => pglite.close();
    } else {
      const scratch = await createScratchDatabase('webhooks_test');
      db = scratch.db;
      drop = scratch.drop;
    }
  }
  const bus = options.bus ?? new MemoryBus();
  const tokens = await createTestTokenIssuer();
  const webhooks = await startWebhooks({
    db,
    bus,
    logger: createLogger('webhooks', process.env.LOG_LEVEL ?? 'silent'),
    verifier: tokens.verifier,
    port: 0,
    host: '127.0.0.1',
    settings: options.settings ?? testSettings(),
    secretKeys: options.secretKeys ?? testSecretKeys(),
    pollIntervalMs: 20,
    ...(options.now ? { now: options.now } : {}),
    ...(options.random ? { random: options.random } : {}),
    ...(options.resolver ? { resolver: options.resolver } : {}),
    ...(options.eventStreamTiming ? { eventStreamTiming: options.eventStreamTiming } : {}),
  });
  return {
    url: webhooks.url,
    db,
    bus,
    webhooks,
    tokens,
    async merchant({ mode = 'sandbox', scope = ALL_SCOPES } = {}) {
      const merchantId = newId('mch');
      return new WebhooksClient(webhooks.url, merchantId, await tokens.sign({ merchantId, scope, mode }), contract);
    },
    async publish(merchantId, topic, object = productObject()) {
      const event = buildEvent(topic, merchantId, { object });
      await bus.publish([event]);
      return event;
    },
    async stop() {
      await webhooks.stop();
      if (!options.bus) await bus.close();
      await drop?.();
    },
  };
}

/**
 * A scratch PostgreSQL database with the webhooks schema migrated, for one suite (the store's
 * statements on their own, no service): call it in the describe, read the database in tests.
 */
export function useMigratedScratchDatabase(prefix: string): () => Db {
  let database: { db: Db; drop(): Promise<void> } | undefined;
  before(async () => {
    installSecretKeyRing(testSecretKeys());
    database = await createScratchDatabase(prefix);
    await migrateSchema(database.db, WEBHOOKS_SCHEMA, webhooksMigrations);
  });
  after(async () => {
    await database?.drop();
  });
  return () => database!.db;
}

/** A new pending delivery to a subscription, as fan-out makes one (a fresh event unless `eventId`, a stored payload unless `payloadText`). */
export function pendingSubscriptionDelivery(
  merchantId: string,
  endpointId: string,
  event: { eventId?: string; topic?: string; payloadText?: string | null } = {},
): NewDelivery {
  return {
    merchantId,
    id: newId('del'),
    eventId: event.eventId ?? newId('evt'),
    topic: event.topic ?? 'products.created',
    endpointKind: 'subscription',
    endpointId,
    payloadText: event.payloadText === undefined ? '{}' : event.payloadText,
    routedId: null,
    status: 'pending',
    lastError: null,
    replayOf: null,
  };
}
