import { WORK_QUEUES, type Bus, type Consumer, type Db, type Logger } from '@merx/kit';
import { mirrorMerchantProfile } from '../usecases/mirror-merchant-profile.js';

/** oauth's durable queue, shared by its replicas (the bus prefixes it with the deployment). */
export const OAUTH_QUEUE = WORK_QUEUES.oauth;

/** What oauth consumes: the merchant's profile changes, which the merchants service alone publishes. */
export const OAUTH_BINDINGS = ['merchants.updated'];

export interface MerchantEventsDeps {
  bus: Bus;
  db: Db;
  logger: Logger;
}

export function consumeMerchantEvents({ bus, db, logger }: MerchantEventsDeps): Promise<Consumer> {
  // Order does not matter for correctness (the copy is replaced only by a newer profile version);
  // one delivery at a time on one replica keeps the work small and the log readable. Profile changes are rare.
  return bus.consume({ queue: OAUTH_QUEUE, bindings: OAUTH_BINDINGS, prefetch: 1, singleActiveConsumer: true }, async (event) => {
    if (event.topic !== 'merchants.updated') return;
    const outcome = await mirrorMerchantProfile(db, event);
    if (outcome === 'unknown_merchant') logger.warn({ event_id: event.id }, 'merchants.updated for a merchant oauth does not know; nothing to mirror');
    else if (outcome === 'mirrored') logger.debug({ event_id: event.id }, 'merchant profile mirrored');
    else if (outcome === 'stale') logger.debug({ event_id: event.id }, 'merchant profile change older than the copy; kept the copy');
  });
}
