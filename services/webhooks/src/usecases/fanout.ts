import { findEventDefinition, isInternalEvent, type ContractValidator } from '@merx/contracts';
import { batchPerKey, newId, trustedMerchantId, type Logger, type MerxEvent, type Outbox } from '@merx/kit';
import { toWebhookPayload, type StoredEvent } from '../domain/delivery.js';
import type { DestinationRemoval, DestinationSync, RoutedRecord } from '../domain/destination.js';
import type { EndpointKey } from '../domain/endpoint.js';
import { subscribesTo, type Subscription } from '../domain/subscription.js';
import { insertDeliveries, type NewDelivery } from '../store/deliveries-store.js';
import { lockEndpointsOfBatch } from '../store/endpoints-store.js';
import { insertEvents } from '../store/events-store.js';
import { WEBHOOKS_SCHEMA } from '../store/migrations.js';
import { recordInInboxAndReadSubscriptions } from '../store/subscriptions-store.js';
import { destinationRemoved, openedDestinationSync, removeDestination, routedRecordDelivery, syncDestination } from './destinations.js';
import { resetSandbox } from './sandbox-reset.js';

export const FANOUT_CONSUMER = 'webhooks.fanout';

export interface FanOutDeps {
  outbox: Outbox;
  logger: Logger;
  validator: ContractValidator;
  /** How long a destination's replaced secret keeps signing, as a rotated subscription's does. */
  secretOverlapMs: number;
  now?: () => Date;
}

/** What a message of the batch asks for, in the order the messages came. */
type Step =
  | { kind: 'event'; event: StoredEvent }
  | { kind: 'sandbox_reset'; reset: MerxEvent }
  | { kind: 'destination_synced'; merchantId: string; sync: DestinationSync }
  | { kind: 'destination_removed'; merchantId: string; removal: DestinationRemoval }
  | { kind: 'record_routed'; merchantId: string; routing: RoutedRecord };

/** The internal messages addressed to this service; the others on the bus are someone else's. */
const CONSUMED_INTERNAL = new Set(['internal.destination_synced', 'internal.destination_removed', 'internal.record_routed']);

/**
 * Turns messages from the bus into what the delivery engine sends. Events of the catalogue are
 * stored and get one delivery per matching subscription; the merchants service's internal
 * messages keep destinations in step and give routed records their deliveries; `sandbox.reset`
 * wipes the merchant's subscriptions and events (its destinations go by the merchants service's
 * removals, whose versions keep them in order with their syncs across replicas). A batch is one transaction with its inbox rows, so a crash
 * before commit leaves nothing (the broker redelivers) and a redelivery after commit finds its
 * inbox row and adds nothing: no delivery is lost or doubled. Returns how many deliveries became due.
 */
export function fanOut({ outbox, logger, validator, secretOverlapMs, now = () => new Date() }: FanOutDeps) {
  /** The steps of one message; none for what this service does not act on, or cannot. */
  function stepsOf(event: MerxEvent): Step[] {
    if (isInternalEvent(event.topic)) {
      if (!CONSUMED_INTERNAL.has(event.topic) || !wellFormed(event)) return [];
      const object = event.data.object;
      const merchantId = event.merchant_id;
      if (event.topic === 'internal.destination_synced')
        return [{ kind: 'destination_synced', merchantId, sync: openedDestinationSync(merchantId, object as unknown as DestinationSync) }];
      if (event.topic === 'internal.destination_removed')
        return [{ kind: 'destination_removed', merchantId, removal: object as unknown as DestinationRemoval }];
      return [{ kind: 'record_routed', merchantId, routing: object as unknown as RoutedRecord }];
    }
    // Anything else outside the catalogue is plumbing and never reaches subscribers.
    if (!findEventDefinition(event.topic)) return [];
    const payload = toWebhookPayload(event);
    const stored: Step = {
      kind: 'event',
      event: {
        id: event.id,
        merchantId: event.merchant_id,
        topic: event.topic,
        createdAt: new Date(event.created_at),
        payload,
        payloadText: JSON.stringify(payload),
      },
    };
    // The reset's own event is kept, like any event after the wipe.
    if (event.topic === 'sandbox.reset' && wellFormed(event)) return [{ kind: 'sandbox_reset', reset: event }, stored];
    return [stored];
  }

  /**
   * A message this service acts on must match its schema: acting on half a message would be
   * worse than not at all. The publisher's request context (who asked, from where) is not what
   * is acted on, so a flaw there is the publisher's to answer for, not a reason to drop a record.
   */
  function wellFormed(event: MerxEvent): boolean {
    const { context: _context, ...message } = event;
    const problems = validator.validateEvent(message);
    if (problems.length > 0) logger.error({ event_id: event.id, topic: event.topic, problems }, 'message fails its schema; ignored');
    return problems.length === 0;
  }

  /**
   * One delivery per event and matching subscription. Checked once per event, before anything is
   * sent: a payload that breaks its own schema is a bug on our side, recorded as dead (visible,
   * replayable once fixed), never sent.
   */
  function subscriptionDeliveries(events: StoredEvent[], subscriptions: Subscription[]): NewDelivery[] {
    const deliveries: NewDelivery[] = [];
    for (const event of events) {
      const matching = matchingSubscriptions(subscriptions, event);
      if (matching.length === 0) continue;
      const problems = validator.validateEvent(event.payload);
      if (problems.length > 0)
        logger.error({ event_id: event.id, topic: event.topic, problems }, 'event fails its catalogue schema; its deliveries are dead on arrival');
      for (const subscription of matching) {
        deliveries.push({
          merchantId: event.merchantId,
          id: newId('del'),
          eventId: event.id,
          topic: event.topic,
          endpointKind: 'subscription',
          endpointId: subscription.id,
          payloadText: null,
          routedId: null,
          status: problems.length > 0 ? 'dead' : 'pending',
          lastError: problems.length > 0 ? 'invalid_payload' : null,
          replayOf: null,
        });
      }
    }
    return deliveries;
  }

  return async function fanOutEvents(messages: MerxEvent[]): Promise<number> {
    return outbox.transaction(async (tx, emit) => {
      // The subscriptions are read with the inbox rows, in one round trip: those of every merchant
      // with an event of the catalogue in the batch, whether or not it turns out seen before.
      const merchantsWithEvents = new Set<string>();
      for (const message of messages) if (!isInternalEvent(message.topic) && findEventDefinition(message.topic)) merchantsWithEvents.add(message.merchant_id);
      const sighted = await recordInInboxAndReadSubscriptions(tx, WEBHOOKS_SCHEMA, FANOUT_CONSUMER, messages, [...merchantsWithEvents]);
      // First sight of each id only (a batch can hold a redelivery of its own event).
      const steps = messages.filter((message) => sighted.firstSeen.delete(message.id)).flatMap(stepsOf);
      if (steps.length === 0) return 0;
      const at = now();
      let { subscriptions } = sighted;
      // A batch of events alone locks what it touches in one step as it writes (markEndpointsDue).
      if (steps.some((step) => step.kind !== 'event')) await lockEndpointsOfBatch(tx, endpointsTouched(steps, subscriptions));

      let due = 0;
      let events: StoredEvent[] = [];
      let routed: NewDelivery[] = [];
      const flush = async () => {
        await insertEvents(tx, events);
        due += await insertDeliveries(tx, [...subscriptionDeliveries(events, subscriptions), ...routed], at);
        events = [];
        routed = [];
      };
      for (const step of steps) {
        if (step.kind === 'event') events.push(step.event);
        else if (step.kind === 'record_routed') {
          // A routing that overtook its destination's removal would wait forever for an endpoint that is gone.
          if (!(await destinationRemoved(tx, trustedMerchantId(step.merchantId), step.routing.destination_id)))
            routed.push(routedRecordDelivery(step.merchantId, step.routing));
        } else {
          // What came before a change of endpoints is written before it, so the order of the
          // messages is the order of their effects (a routing, then its destination's removal).
          await flush();
          if (step.kind === 'sandbox_reset') {
            await resetSandbox(tx, emit, step.reset, at);
            subscriptions = subscriptions.filter((subscription) => subscription.merchantId !== step.reset.merchant_id);
          } else if (step.kind === 'destination_synced') {
            if (await syncDestination(tx, trustedMerchantId(step.merchantId), step.sync, secretOverlapMs, at)) due += 1;
          } else {
            await removeDestination(tx, trustedMerchantId(step.merchantId), step.removal, at);
          }
        }
      }
      await flush();
      return due;
    });
  };
}

/** Fan-out batches written at once, each of one merchant's events. */
export const FANOUT_BATCHES_AT_ONCE = 4;

/**
 * Events arriving while a batch commits go together in the next one (one transaction for many),
 * but only with the same merchant's: a batch locks the endpoints its events are due on and waits
 * for them while a claim or a record holds them, and a batch of everyone's events held everyone's
 * deliveries in that wait (seen: a merchant's deliveries made 150 ms late, every few seconds, by a
 * neighbour whose dead receivers' attempts were being recorded). A few batches are written at
 * once, in the order they became ready, so a merchant whose batch waits delays only its own.
 */
export function fanOutPerMerchant(fanOutEvents: (events: MerxEvent[]) => Promise<number>, onDue: () => void, atOnce = FANOUT_BATCHES_AT_ONCE) {
  const turns = takingTurns(atOnce);
  const batches = batchPerKey<MerxEvent>(
    async (_merchantId, events) => {
      const due = await turns(() => fanOutEvents(events));
      if (due > 0) onDue();
    },
    { maxBatch: 500 },
  );
  return (event: MerxEvent) => batches(event.merchant_id, event);
}

/** Runs at most `atOnce` tasks at a time; the others start in the order they asked. */
function takingTurns(atOnce: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async function inTurn<T>(task: () => Promise<T>): Promise<T> {
    if (running >= atOnce) await new Promise<void>((resolve) => waiting.push(resolve));
    else running += 1;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

function matchingSubscriptions(subscriptions: Subscription[], event: StoredEvent): Subscription[] {
  return subscriptions.filter((s) => s.merchantId === event.merchantId && subscribesTo(s.topics, event.topic));
}

/** Every endpoint a batch may write to, for locking them all in one ordered step before any write. */
function endpointsTouched(steps: Step[], subscriptions: Subscription[]) {
  const destinations: EndpointKey[] = [];
  const endpoints: EndpointKey[] = [];
  const wholeMerchants: string[] = [];
  for (const step of steps) {
    if (step.kind === 'event') endpoints.push(...matchingSubscriptions(subscriptions, step.event).map((s) => ({ merchantId: s.merchantId, endpointId: s.id })));
    else if (step.kind === 'sandbox_reset') wholeMerchants.push(step.reset.merchant_id);
    else if (step.kind === 'destination_synced') destinations.push({ merchantId: step.merchantId, endpointId: step.sync.id });
    else if (step.kind === 'destination_removed') destinations.push({ merchantId: step.merchantId, endpointId: step.removal.id });
    else destinations.push({ merchantId: step.merchantId, endpointId: step.routing.destination_id });
  }
  return { destinations, endpoints, wholeMerchants };
}
