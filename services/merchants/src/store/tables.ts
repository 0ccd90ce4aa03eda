import type { MerchantId, Queryable } from '@merx/kit';
import type { ConnectionFields } from '../domain/connection.js';
import type { DestinationFields } from '../domain/destination.js';
import type { Resource } from '../domain/resource.js';
import type { RuleFields } from '../domain/rule.js';
import type { SourceFields } from '../domain/source.js';
import { MERCHANTS_SCHEMA } from './migrations.js';
import { listResourcesForMerchant, sealedColumnsOf, type ResourceTable } from './resource-table.js';

export const SOURCES: ResourceTable<SourceFields> = { name: 'sources', columns: { name: 'text', kind: 'text', status: 'text', settings: 'jsonb' } };

export const DESTINATIONS: ResourceTable<DestinationFields> = {
  name: 'destinations',
  columns: { name: 'text', kind: 'text', url: 'text', status: 'text', disabled_reason: 'text', secret: 'text' },
  sealed: ['secret'],
};

/** Where the merchants service keeps signing secrets, for `npm run secrets:reseal`. */
export const SEALED_DESTINATION_SECRETS = sealedColumnsOf(DESTINATIONS);

export const RULES: ResourceTable<RuleFields> = {
  name: 'rules',
  columns: { name: 'text', event_types: 'text[]', condition: 'text', action: 'text', transform: 'jsonb', enabled: 'boolean' },
};

export const CONNECTIONS: ResourceTable<ConnectionFields> = {
  name: 'connections',
  columns: { name: 'text', source_id: 'text', destination_id: 'text', rule_ids: 'text[]', event_types: 'text[]', status: 'text' },
};

/** Ids of connections that use a source, a destination or a rule (what a delete must not orphan). */
export async function connectionsUsingForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  use: { column: 'source_id' | 'destination_id'; id: string } | { rule: string },
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'rule' in use
      ? `SELECT id FROM ${MERCHANTS_SCHEMA}.connections WHERE merchant_id = $1 AND $2 = ANY(rule_ids) ORDER BY id LIMIT 20`
      : `SELECT id FROM ${MERCHANTS_SCHEMA}.connections WHERE merchant_id = $1 AND ${use.column} = $2 ORDER BY id LIMIT 20`,
    [merchantId, 'rule' in use ? use.rule : use.id],
  );
  return rows.map((row) => row.id);
}

/** The active connections of a source that route this event type: what routing applies to one record. */
export async function routingConnectionsForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  sourceId: string,
  eventType: string,
): Promise<Resource<ConnectionFields>[]> {
  const connections = await listResourcesForMerchant(db, CONNECTIONS, merchantId, { limit: 1000 }, [
    { column: 'source_id', equals: sourceId },
    { column: 'status', equals: 'active' },
    { column: 'event_types', contains: eventType },
  ]);
  return connections.reverse();
}
