import { buildEvent, newId, recordFirstSightings, trustedMerchantId, type Db, type Logger, type MerchantId, type MerxEvent, type Outbox } from '@merx/kit';
import type { Connection } from '../domain/connection.js';
import { ingestedRecordOfEvent, type IngestedRecordResource } from '../domain/record.js';
import type { Resource } from '../domain/resource.js';
import type { RuleFields } from '../domain/rule.js';
import type { RoutingDecision, RuleForRouting, RuleRunner } from '../domain/rules/index.js';
import { inCauseContext } from '../events/cause-context.js';
import { insertRoutingsForMerchant, type StoredRouting } from '../store/records-store.js';
import { deleteParkedEventsForMerchant } from '../store/routing-backlog-store.js';
import { findResourcesForMerchant } from '../store/resource-table.js';
import { RULES, routingConnectionsForMerchant } from '../store/tables.js';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';

export const ROUTING_CONSUMER = 'merchants.routing';

function toRuleForRouting(rule: Resource<RuleFields>): RuleForRouting {
  return {
    id: rule.id,
    eventTypes: rule.fields.event_types,
    condition: rule.fields.condition,
    action: rule.fields.action,
    transform: rule.fields.transform,
    enabled: rule.fields.enabled,
  };
}

/**
 * The payload a destination receives: the record's event as it was published, with the record's
 * `data` as the connection's transforms left it. For an alert the record sits inside the alert.
 */
function routedPayload(event: MerxEvent, record: IngestedRecordResource, data: Record<string, unknown>) {
  const transformed = { ...record, data };
  const object = event.topic === 'system_alerts.raised' ? { ...(event.data.object as Record<string, unknown>), record: transformed } : transformed;
  return { id: event.id, topic: event.topic, merchant_id: event.merchant_id, created_at: event.created_at, api_version: 'v1' as const, data: { object } };
}

const pairKey = (sourceId: string, topic: string) => `${sourceId}\u0000${topic}`;

interface RecordEvent {
  event: MerxEvent;
  record: IngestedRecordResource;
}

interface RoutedRecordEvent extends RecordEvent {
  decisions: { connection: Connection; decision: RoutingDecision }[];
}

/**
 * Routes record events: every active connection of a record's source that takes its event type
 * applies its rules in order (in the rule runner, which bounds their time), and each routed
 * result goes to the delivery engine as internal.record_routed. Rules run before the transaction;
 * the outcomes, the messages and the inbox rows then commit together, so a redelivered event
 * routes nothing twice.
 *
 * One merchant's events go together: the connections of each (source, event type) and the rules
 * they name are read once, and one transaction records them all. A failing batch is the caller's
 * to split (batchPerKey writes its events again one by one).
 */
export function recordRouting({ db, outbox, runner, logger }: { db: Db; outbox: Outbox; runner: RuleRunner; logger: Logger }) {
  /** The active connections of each (source, event type) among `events`, read once per pair. */
  async function connectionsOf(merchantId: MerchantId, events: RecordEvent[]): Promise<Map<string, Connection[]>> {
    const pairs = new Map<string, { sourceId: string; topic: string }>();
    for (const { event, record } of events) pairs.set(pairKey(record.source_id, event.topic), { sourceId: record.source_id, topic: event.topic });
    const found = new Map<string, Connection[]>();
    for (const [key, { sourceId, topic }] of pairs) found.set(key, await routingConnectionsForMerchant(db, merchantId, sourceId, topic));
    return found;
  }

  async function decide(merchantId: MerchantId, events: RecordEvent[]): Promise<RoutedRecordEvent[]> {
    const connections = await connectionsOf(merchantId, events);
    const ruleIds = [...new Set([...connections.values()].flat().flatMap((connection) => connection.fields.rule_ids))];
    const rules = new Map((await findResourcesForMerchant(db, RULES, merchantId, ruleIds)).map((rule) => [rule.id, toRuleForRouting(rule)]));
    return Promise.all(
      events.map(async ({ event, record }) => {
        const decisions: RoutedRecordEvent['decisions'] = [];
        for (const connection of connections.get(pairKey(record.source_id, event.topic))!) {
          const ordered = connection.fields.rule_ids.map((id) => rules.get(id)).filter((rule): rule is RuleForRouting => rule !== undefined);
          const decision = await runner.route(merchantId, {
            eventType: event.topic,
            record: { type: record.type, external_id: record.external_id, occurred_at: record.occurred_at, source_id: record.source_id, data: record.data },
            rules: ordered,
          });
          decisions.push({ connection, decision });
        }
        return { event, record, decisions };
      }),
    );
  }

  /** The routings of one record, emitting a message for each routed one (in the context of its cause). */
  function routingsOf(
    { event, record, decisions }: RoutedRecordEvent,
    merchantId: MerchantId,
    routedAt: string,
    emit: (event: MerxEvent) => void,
  ): StoredRouting[] {
    return decisions.map(({ connection, decision }) => {
      const routedId = decision.outcome === 'routed' ? newId('rtd') : null;
      if (decision.outcome === 'routed') {
        const payload = routedPayload(event, record, decision.data);
        const object = {
          id: routedId,
          object: 'routed_record',
          destination_id: connection.fields.destination_id,
          connection_id: connection.id,
          record_id: record.id,
          event_id: event.id,
          payload,
        };
        emit(inCauseContext(event, () => buildEvent('internal.record_routed', merchantId, { object })));
      }
      return {
        record_id: record.id,
        connection_id: connection.id,
        destination_id: connection.fields.destination_id,
        outcome: decision.outcome,
        rule_id: decision.ruleId,
        reason: decision.reason,
        routed_id: routedId,
        routed_at: routedAt,
      };
    });
  }

  /** `parked`: the ids of those that came from the routing backlog, whose rows go with their routings. */
  return async function routeRecordEventsOfMerchant(merchantId: string, events: MerxEvent[], parked: string[] = []): Promise<void> {
    const tenant = trustedMerchantId(merchantId);
    const recordEvents = events.flatMap((event) => {
      const record = ingestedRecordOfEvent(event.topic, event.data.object as Record<string, unknown>);
      // A platform alert, not an ingested record: nothing to route.
      return record ? [{ event, record }] : [];
    });
    if (recordEvents.length === 0) {
      if (parked.length > 0) await db.transaction((tx) => deleteParkedEventsForMerchant(tx, tenant, parked));
      return;
    }
    const decided = await decide(tenant, recordEvents);
    const routedAt = new Date().toISOString();
    await outbox.transaction(async (tx, emit) => {
      const fresh = new Set(
        await recordFirstSightings(
          tx,
          MERCHANTS_SCHEMA,
          ROUTING_CONSUMER,
          recordEvents.map(({ event }) => event),
        ),
      );
      const routings: StoredRouting[] = [];
      for (const routed of decided) {
        // The first of two copies in one batch routes; the second is a redelivery like any other.
        if (!fresh.delete(routed.event)) logger.debug({ event_id: routed.event.id }, 'record event already routed');
        else routings.push(...routingsOf(routed, tenant, routedAt, emit));
      }
      await insertRoutingsForMerchant(tx, tenant, routings);
      await deleteParkedEventsForMerchant(tx, tenant, parked);
    });
  };
}
