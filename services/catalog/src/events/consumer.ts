import { currentContext, updateContext, WORK_QUEUES, type Actor, type Bus, type Consumer, type Logger } from '@merx/kit';
import type { ResetSandboxProducts } from '../usecases/sandbox-reset.js';

/** The catalog's durable queue, shared by its replicas (the bus prefixes it with the deployment). */
export const CATALOG_QUEUE = WORK_QUEUES.catalog;

/** What the catalog reacts to; everything else on merx.events is for other services. */
export const CATALOG_BINDINGS = ['sandbox.reset'];

/** Who the catalog's events name when the event that caused them names nobody. */
const CATALOG_ACTOR: Actor = { type: 'system', id: 'catalog' };

export interface CatalogConsumerDeps {
  bus: Bus;
  logger: Logger;
  resetSandboxProducts: ResetSandboxProducts;
}

/** Hands each event to its use case; the delivery is acked once the handler's transaction has committed. */
export function consumeCatalogEvents({ bus, logger, resetSandboxProducts }: CatalogConsumerDeps): Promise<Consumer> {
  return bus.consume({ queue: CATALOG_QUEUE, bindings: CATALOG_BINDINGS }, async (event) => {
    if (event.topic !== 'sandbox.reset') return;
    // The events emitted here carry the reset's actor (whoever asked for it), so the audit log
    // says who caused the seeded products; an envelope's context must name one.
    if (!currentContext()?.actor) updateContext({ actor: CATALOG_ACTOR });
    const report = await resetSandboxProducts(event);
    if (report) logger.info({ reset_id: report.resetId, removed: report.removed, seeded: report.seeded }, 'sandbox reset: catalog part done');
    else logger.debug({ event_id: event.id }, 'sandbox reset already done; redelivery dropped');
  });
}
