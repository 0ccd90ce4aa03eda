import { buildEvent, newId, recordInInbox, trustedMerchantId, type Db, type Logger, type MerxEvent, type Outbox } from '@merx/kit';
import type { RuleFields } from '../domain/rule.js';
import { ingestedRecordOfEvent, type IngestedRecordResource } from '../domain/record.js';
import type { Resource } from '../domain/resource.js';
import type { RoutingDecision, RuleForRouting, RuleRunner } from '../domain/rules/index.js';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import { insertRoutingsForMerchant, type StoredRouting } from '../store/records-store.js';
import { findResourcesForMerchant } from '../store/resource-table.js';
import { RULES, routingConnectionsForMerchant } from '../store/tables.js';

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

/**
 * Routes one record event: every active connection of the record's source that takes this event
 * type applies its rules in order (in the rule runner, which bounds their time), and each routed
 * result goes to the delivery engine as internal.record_routed. Rules run before the transaction;
 * the outcomes, the messages and the inbox row then commit together, so a redelivered event routes
 * nothing twice.
 */
export function recordRouting({ db, outbox, runner, logger }: { db: Db; outbox: Outbox; runner: RuleRunner; logger: Logger }) {
  return async function routeRecordEvent(event: MerxEvent): Promise<void> {
    const record = ingestedRecordOfEvent(event.topic, event.data.object as Record<string, unknown>);
    if (!record) return; // a platform alert, not an ingested record: nothing to route
    const merchantId = trustedMerchantId(event.merchant_id);
    const connections = await routingConnectionsForMerchant(db, merchantId, record.source_id, event.topic);
    const ruleIds = [...new Set(connections.flatMap((connection) => connection.fields.rule_ids))];
    const rules = new Map((await findResourcesForMerchant(db, RULES, merchantId, ruleIds)).map((rule) => [rule.id, toRuleForRouting(rule)]));
    const decisions: { connection: (typeof connections)[number]; decision: RoutingDecision }[] = [];
    for (const connection of connections) {
      const ordered = connection.fields.rule_ids.map((id) => rules.get(id)).filter((rule): rule is RuleForRouting => rule !== undefined);
      const decision = await runner.route({
        eventType: event.topic,
        record: { type: record.type, external_id: record.external_id, occurred_at: record.occurred_at, source_id: record.source_id, data: record.data },
        rules: ordered,
      });
      decisions.push({ connection, decision });
    }
    const routedAt = new Date().toISOString();
    await outbox.transaction(async (tx, emit) => {
      if (!(await recordInInbox(tx, MERCHANTS_SCHEMA, ROUTING_CONSUMER, event))) {
        logger.debug({ event_id: event.id }, 'record event already routed');
        return;
      }
      const routings: StoredRouting[] = decisions.map(({ connection, decision }) => {
        const routedId = decision.outcome === 'routed' ? newId('rtd') : null;
        if (decision.outcome === 'routed') {
          const payload = routedPayload(event, record, decision.data);
          emit(
            buildEvent('internal.record_routed', merchantId, {
              object: {
                id: routedId,
                object: 'routed_record',
                destination_id: connection.fields.destination_id,
                connection_id: connection.id,
                record_id: record.id,
                event_id: event.id,
                payload,
              },
            }),
          );
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
      await insertRoutingsForMerchant(tx, merchantId, routings);
    });
  };
}
