import { recordEventNames } from '@merx/contracts';
import { batchPerKey, handleEventOnce, WORK_QUEUES, type Bus, type Consumer, type Db, type MerxEvent } from '@merx/kit';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import { applyMerchantEvent } from '../usecases/merchant-profile.js';
import { nameActorIfMissing } from './cause-context.js';

export const ACCOUNTS_CONSUMER = 'merchants.accounts';

export interface MerchantsEventHandlers {
  /** One merchant's record events, routed together in one transaction. */
  routeRecordEvents(merchantId: string, events: MerxEvent[]): Promise<void>;
  resetMerchantData(event: MerxEvent): Promise<void>;
  recordServiceReport(event: MerxEvent): Promise<void>;
  applyEngineDisable(event: MerxEvent): Promise<void>;
}

/** The merchants service's durable queue, shared by its replicas (the bus prefixes it with the deployment). */
export const MERCHANTS_QUEUE = WORK_QUEUES.merchants;

/**
 * Deliveries in flight at once. Record events queue up while a merchant's batch commits and go
 * together in the next: this bounds that batch, and so the transactions per record under load.
 */
const PREFETCH = 256;

/**
 * What this service hears on the bus, through one durable queue its replicas share: the
 * merchant's provisioning and standing changes (oauth), ingested records to route (its own events),
 * sandbox resets and each service's report on them, and destinations the delivery engine
 * switched off. Each handler commits its effect with an inbox row, so redeliveries are harmless.
 */
export async function consumeMerchantsEvents(bus: Bus, db: Db, handlers: MerchantsEventHandlers): Promise<Consumer> {
  // A delivery is acked once its batch committed; a failing batch is written again event by event,
  // so a bad event fails (and is retried, then poisoned) alone.
  const routeInBatches = batchPerKey<MerxEvent>((merchantId, events) => handlers.routeRecordEvents(merchantId, events), { maxBatch: PREFETCH });
  const byTopic = new Map<string, (event: MerxEvent) => Promise<unknown>>([
    ['merchants.created', (event) => handleEventOnce(db, MERCHANTS_SCHEMA, ACCOUNTS_CONSUMER, event, (tx) => applyMerchantEvent(tx, event))],
    ['merchants.standing_changed', (event) => handleEventOnce(db, MERCHANTS_SCHEMA, ACCOUNTS_CONSUMER, event, (tx) => applyMerchantEvent(tx, event))],
    // Only for the operator's changes the release before this one announced as merchants.updated,
    // still on the bus during an upgrade; this service's own merchants.updated change nothing here.
    ['merchants.updated', (event) => handleEventOnce(db, MERCHANTS_SCHEMA, ACCOUNTS_CONSUMER, event, (tx) => applyMerchantEvent(tx, event))],
    ...recordEventNames.map((topic): [string, (event: MerxEvent) => Promise<void>] => [topic, (event) => routeInBatches(event.merchant_id, event)]),
    ['sandbox.reset', handlers.resetMerchantData],
    ['internal.sandbox_service_reset', handlers.recordServiceReport],
    ['internal.destination_disabled', handlers.applyEngineDisable],
  ]);
  return bus.consume({ queue: MERCHANTS_QUEUE, bindings: [...byTopic.keys()], prefetch: PREFETCH }, async (event) => {
    nameActorIfMissing();
    await byTopic.get(event.topic)?.(event);
  });
}
