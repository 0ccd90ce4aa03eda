import { findEventDefinition, type ContractValidator } from '@merx/contracts';
import { newId, type Db, type Logger, type MerxEvent } from '@merx/kit';
import { toWebhookPayload, type StoredEvent } from '../domain/delivery.js';
import { subscribesTo } from '../domain/subscription.js';
import { insertDeliveries, type NewDelivery } from '../store/deliveries-store.js';
import { insertEvents } from '../store/events-store.js';
import { WEBHOOKS_SCHEMA } from '../store/migrations.js';
import { enabledSubscriptionsOfMerchants } from '../store/subscriptions-store.js';

export const FANOUT_CONSUMER = 'webhooks.fanout';

export interface FanOutDeps {
  db: Db;
  logger: Logger;
  validator: ContractValidator;
  now?: () => Date;
}

/**
 * Turns events from the bus into stored events and one delivery per matching subscription. A
 * batch is one transaction with its inbox rows, so a crash before commit leaves nothing (the
 * broker redelivers) and a redelivery after commit finds its inbox row and adds nothing: no
 * delivery is lost or doubled. Returns how many deliveries became due.
 */
export function fanOut({ db, logger, validator, now = () => new Date() }: FanOutDeps) {
  return async function fanOutEvents(events: MerxEvent[]): Promise<number> {
    return db.transaction(async (tx) => {
      const { rows: fresh } = await tx.query<{ event_id: string }>(
        `INSERT INTO ${WEBHOOKS_SCHEMA}.inbox (consumer, event_id, topic)
         SELECT $1, * FROM unnest($2::text[], $3::text[]) ON CONFLICT DO NOTHING RETURNING event_id`,
        [FANOUT_CONSUMER, events.map((e) => e.id), events.map((e) => e.topic)],
      );
      // First sight of each id only (a batch can hold a redelivery of its own event); events
      // outside the catalogue are internal plumbing and never reach subscribers.
      const unseen = new Set(fresh.map((row) => row.event_id));
      const publishable = events.filter((event) => unseen.delete(event.id) && findEventDefinition(event.topic));
      if (publishable.length === 0) return 0;
      const stored: StoredEvent[] = publishable.map((event) => {
        const payload = toWebhookPayload(event);
        return { id: event.id, merchantId: event.merchant_id, topic: event.topic, createdAt: new Date(event.created_at), payload, payloadText: JSON.stringify(payload) };
      });
      await insertEvents(tx, stored);
      const subscriptions = await enabledSubscriptionsOfMerchants(tx, [...new Set(stored.map((event) => event.merchantId))]);
      const deliveries: NewDelivery[] = [];
      for (const event of stored) {
        const matching = subscriptions.filter((s) => s.merchantId === event.merchantId && subscribesTo(s.topics, event.topic));
        if (matching.length === 0) continue;
        // Checked once per event, before anything is sent: a payload that breaks its own schema
        // is a bug on our side, recorded as dead (visible, replayable once fixed), never sent.
        const problems = validator.validateEvent(event.payload);
        if (problems.length > 0) logger.error({ event_id: event.id, topic: event.topic, problems }, 'event fails its catalogue schema; its deliveries are dead on arrival');
        for (const subscription of matching) {
          deliveries.push({
            merchantId: event.merchantId,
            id: newId('del'),
            eventId: event.id,
            topic: event.topic,
            subscriptionId: subscription.id,
            status: problems.length > 0 ? 'dead' : 'pending',
            lastError: problems.length > 0 ? 'invalid_payload' : null,
            replayOf: null,
          });
        }
      }
      await insertDeliveries(tx, deliveries, now());
      return deliveries.filter((d) => d.status === 'pending').length;
    });
  };
}
