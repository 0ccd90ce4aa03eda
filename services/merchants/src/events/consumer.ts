import { recordEventNames } from '@merx/contracts';
import { currentContext, handleEventOnce, updateContext, WORK_QUEUES, type Actor, type Bus, type Consumer, type Db, type MerxEvent } from '@merx/kit';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import { applyMerchantEvent } from '../usecases/merchant-profile.js';

export const ACCOUNTS_CONSUMER = 'merchants.accounts';

/** Who this service's events name when the message that caused them names nobody (the delivery engine's). */
const MERCHANTS_ACTOR: Actor = { type: 'system', id: 'merchants' };

export interface MerchantsEventHandlers {
  routeRecordEvent(event: MerxEvent): Promise<void>;
  resetMerchantData(event: MerxEvent): Promise<void>;
  recordServiceReport(event: MerxEvent): Promise<void>;
  applyEngineDisable(event: MerxEvent): Promise<void>;
}

/** The merchants service's durable queue, shared by its replicas (the bus prefixes it with the deployment). */
export const MERCHANTS_QUEUE = WORK_QUEUES.merchants;

/**
 * What this service hears on the bus, through one durable queue its replicas share: the
 * merchant's provisioning and standing changes (oauth), ingested records to route (its own events),
 * sandbox resets and each service's report on them, and destinations the delivery engine
 * switched off. Each handler commits its effect with an inbox row, so redeliveries are harmless.
 */
export async function consumeMerchantsEvents(bus: Bus, db: Db, handlers: MerchantsEventHandlers): Promise<Consumer> {
  const byTopic = new Map<string, (event: MerxEvent) => Promise<unknown>>([
    ['merchants.created', (event) => handleEventOnce(db, MERCHANTS_SCHEMA, ACCOUNTS_CONSUMER, event, (tx) => applyMerchantEvent(tx, event))],
    ['merchants.standing_changed', (event) => handleEventOnce(db, MERCHANTS_SCHEMA, ACCOUNTS_CONSUMER, event, (tx) => applyMerchantEvent(tx, event))],
    // Only for the operator's changes the release before this one announced as merchants.updated,
    // still on the bus during an upgrade; this service's own merchants.updated change nothing here.
    ['merchants.updated', (event) => handleEventOnce(db, MERCHANTS_SCHEMA, ACCOUNTS_CONSUMER, event, (tx) => applyMerchantEvent(tx, event))],
    ...recordEventNames.map((topic): [string, (event: MerxEvent) => Promise<void>] => [topic, handlers.routeRecordEvent]),
    ['sandbox.reset', handlers.resetMerchantData],
    ['internal.sandbox_service_reset', handlers.recordServiceReport],
    ['internal.destination_disabled', handlers.applyEngineDisable],
  ]);
  return bus.consume({ queue: MERCHANTS_QUEUE, bindings: [...byTopic.keys()], prefetch: 64 }, async (event) => {
    // Events emitted in answer carry the cause's actor; an envelope's context must name one.
    if (!currentContext()?.actor) updateContext({ actor: MERCHANTS_ACTOR });
    await byTopic.get(event.topic)?.(event);
  });
}
