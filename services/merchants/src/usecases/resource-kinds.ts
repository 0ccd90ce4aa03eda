import { connectionStatuses, destinationKinds, destinationStatuses, recordEventNames, ruleActions, sourceKinds, sourceStatuses } from '@merx/contracts';
import {
  buildEvent,
  checkEndpointUrl,
  Conflict,
  generateSigningSecret,
  ValidationFailed,
  type FieldError,
  type HostResolver,
  type MerchantId,
  type Queryable,
  type TargetPolicy,
} from '@merx/kit';
import { validateConnectionChanges, validateNewConnection, type ConnectionFields } from '../domain/connection.js';
import { reasonForStatus, validateDestinationChanges, validateNewDestination, type DestinationFields } from '../domain/destination.js';
import { validateNewRule, validateRuleChanges, type RuleFields } from '../domain/rule.js';
import { validateNewSource, validateSourceChanges, type SourceFields } from '../domain/source.js';
import type { Resource } from '../domain/resource.js';
import { findResourceForMerchant, findResourcesForMerchant, type Condition } from '../store/resource-table.js';
import { CONNECTIONS, connectionsUsingForMerchant, DESTINATIONS, RULES, SOURCES } from '../store/tables.js';
import type { ResourceKind, Requester } from './config-resources.js';
import { destinationEndpointOf, destinationRemovedEvent } from './destination-endpoints.js';

/** An enum filter of a list: absent, or one of the allowed values (anything else is a 422, never an empty list). */
function enumFilter(query: Record<string, unknown>, name: string, allowed: readonly string[], errors: FieldError[]): Condition[] {
  const value = query[name];
  if (value === undefined) return [];
  if (typeof value === 'string' && allowed.includes(value)) return [{ column: name, equals: value }];
  errors.push({ field: name, code: 'invalid_value', message: `${name} must be one of ${allowed.join(', ')}` });
  return [];
}

function idFilter(query: Record<string, unknown>, name: string, prefix: string, errors: FieldError[]): Condition[] {
  const value = query[name];
  if (value === undefined) return [];
  if (typeof value === 'string' && new RegExp(`^${prefix}_[0-9a-z]{26}$`).test(value)) return [{ column: name, equals: value }];
  errors.push({ field: name, code: 'invalid_id', message: `${name} must be an id of the form ${prefix}_…` });
  return [];
}

function filtersOrFail(errors: FieldError[], conditions: Condition[]): Condition[] {
  if (errors.length > 0) throw new ValidationFailed(errors);
  return conditions;
}

function refuseDeleteWhileUsed(noun: string, connectionIds: string[]): void {
  if (connectionIds.length > 0) {
    throw new Conflict(`This ${noun} is used by connection(s) ${connectionIds.join(', ')}; delete or change them first.`);
  }
}

export const sourceKind: ResourceKind<SourceFields> = {
  object: 'source',
  idPrefix: 'src',
  topic: 'sources',
  table: SOURCES,
  validateNew: (body) => validateNewSource(body),
  validateChanges: (body) => validateSourceChanges(body),
  filters(query) {
    const errors: FieldError[] = [];
    return filtersOrFail(errors, [...enumFilter(query, 'status', sourceStatuses, errors), ...enumFilter(query, 'kind', sourceKinds, errors)]);
  },
  async beforeDelete(tx, merchantId, current) {
    refuseDeleteWhileUsed('source', await connectionsUsingForMerchant(tx, merchantId, { column: 'source_id', id: current.id }));
  },
};

/** The address policy of destinations is the delivery engine's: the same settings decide both. */
export interface DestinationPolicy {
  allowPrivateAddresses: boolean;
  allowedPrivateHosts: string[];
  lookup?: HostResolver;
}

export function destinationKind(policy: DestinationPolicy): ResourceKind<DestinationFields> {
  const targetPolicy = (requester: Requester): TargetPolicy => ({
    allowPrivateAddresses: policy.allowPrivateAddresses,
    allowedPrivateHosts: policy.allowedPrivateHosts,
    requireHttps: requester.mode !== 'sandbox',
  });
  const checkUrl = async (url: unknown, requester: Requester, errors: FieldError[]) => {
    if (url !== undefined) errors.push(...(await checkEndpointUrl(url, targetPolicy(requester), policy.lookup)));
  };
  return {
    object: 'destination',
    idPrefix: 'dst',
    topic: 'destinations',
    table: DESTINATIONS,
    hidden: ['secret'],
    async validateNew(body, requester) {
      const { input, check } = validateNewDestination(body);
      await checkUrl((body as { url?: unknown }).url, requester, check.errors);
      check.throwIfAny();
      return { name: input.name!, kind: input.kind!, url: input.url!, status: input.status!, disabled_reason: null, secret: generateSigningSecret() };
    },
    async validateChanges(body, _current, requester) {
      const { changes, check } = validateDestinationChanges(body);
      await checkUrl((body as { url?: unknown }).url, requester, check.errors);
      check.throwIfAny();
      return changes.status === undefined ? changes : { ...changes, disabled_reason: reasonForStatus(changes.status) };
    },
    filters(query) {
      const errors: FieldError[] = [];
      return filtersOrFail(errors, [...enumFilter(query, 'status', destinationStatuses, errors), ...enumFilter(query, 'kind', destinationKinds, errors)]);
    },
    async beforeDelete(tx, merchantId, current) {
      refuseDeleteWhileUsed('destination', await connectionsUsingForMerchant(tx, merchantId, { column: 'destination_id', id: current.id }));
    },
    afterWrite(emit, destination) {
      emit(buildEvent('internal.destination_synced', destination.merchantId, { object: destinationEndpointOf(destination) }));
    },
    afterDelete(emit, destination) {
      emit(destinationRemovedEvent(destination.merchantId, destination));
    },
  };
}

export const ruleKind: ResourceKind<RuleFields> = {
  object: 'rule',
  idPrefix: 'rul',
  topic: 'rules',
  table: RULES,
  validateNew: (body) => validateNewRule(body),
  validateChanges: (body, current) => validateRuleChanges(body, current.fields),
  filters(query) {
    const errors: FieldError[] = [];
    const conditions = [...enumFilter(query, 'action', ruleActions, errors)];
    if (query.enabled !== undefined) {
      if (query.enabled === 'true' || query.enabled === 'false') conditions.push({ column: 'enabled', equals: query.enabled === 'true' });
      else errors.push({ field: 'enabled', code: 'invalid_value', message: 'enabled must be true or false' });
    }
    if (query.event_type !== undefined) {
      if (typeof query.event_type === 'string' && recordEventNames.includes(query.event_type))
        conditions.push({ column: 'event_types', contains: query.event_type });
      else errors.push({ field: 'event_type', code: 'invalid_value', message: `event_type must be one of ${recordEventNames.join(', ')}` });
    }
    return filtersOrFail(errors, conditions);
  },
  async beforeDelete(tx, merchantId, current) {
    refuseDeleteWhileUsed('rule', await connectionsUsingForMerchant(tx, merchantId, { rule: current.id }));
  },
};

/**
 * A connection may only name the merchant's own source, destination and rules. They are read
 * FOR KEY SHARE, so a concurrent delete of one of them waits for this write and then sees the
 * connection (409), instead of both succeeding.
 */
async function checkReferences(tx: Queryable, merchantId: MerchantId, fields: ConnectionFields, changes: Partial<ConnectionFields> | undefined): Promise<void> {
  const errors: FieldError[] = [];
  const checkOne = async (table: typeof SOURCES | typeof DESTINATIONS, field: 'source_id' | 'destination_id', noun: string) => {
    if (changes && changes[field] === undefined) return;
    const found = await findResourceForMerchant(tx, table as typeof SOURCES, merchantId, fields[field], 'key share');
    if (!found) errors.push({ field, code: 'unknown_reference', message: `${fields[field]} is not a ${noun} of this merchant` });
  };
  await checkOne(SOURCES, 'source_id', 'source');
  await checkOne(DESTINATIONS, 'destination_id', 'destination');
  if (!changes || changes.rule_ids !== undefined) {
    const found = new Set((await findResourcesForMerchant(tx, RULES, merchantId, fields.rule_ids, 'key share')).map((rule: Resource<RuleFields>) => rule.id));
    fields.rule_ids.forEach((id, index) => {
      if (!found.has(id)) errors.push({ field: `rule_ids[${index}]`, code: 'unknown_reference', message: `${id} is not a rule of this merchant` });
    });
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
}

export const connectionKind: ResourceKind<ConnectionFields> = {
  object: 'connection',
  idPrefix: 'con',
  topic: 'connections',
  table: CONNECTIONS,
  validateNew: (body) => validateNewConnection(body),
  validateChanges: (body) => validateConnectionChanges(body),
  filters(query) {
    const errors: FieldError[] = [];
    return filtersOrFail(errors, [
      ...idFilter(query, 'source_id', 'src', errors),
      ...idFilter(query, 'destination_id', 'dst', errors),
      ...enumFilter(query, 'status', connectionStatuses, errors),
    ]);
  },
  beforeWrite: checkReferences,
};
