import {
  buildEvent,
  Conflict,
  fieldPath,
  newId,
  NotFound,
  parsePageRequest,
  parseTimestamp,
  toListPage,
  ValidationFailed,
  type Db,
  type Emit,
  type FieldError,
  type MerchantId,
  type Outbox,
  type Queryable,
} from '@merx/kit';
import { eventCatalogue } from '@merx/contracts';
import { DELIVERY_STATUSES, type Delivery, type DeliveryStatus, type WebhookPayload } from '../domain/delivery.js';
import { presentDeadLetter, presentDelivery, presentDeliveryWithAttempts, presentEvent } from '../domain/present.js';
import {
  attemptsOfDelivery,
  findDeliveryForMerchant,
  insertDeliveries,
  listDeliveriesForMerchant,
  lockDeadLettersForReplay,
  markReplayed,
  type DeliveryFilters,
} from '../store/deliveries-store.js';
import { findEndpointForMerchant } from '../store/endpoints-store.js';
import { findEventForMerchant, listEventsForMerchant, type EventFilters } from '../store/events-store.js';

export interface DeliveryUseCaseDeps {
  db: Db;
  /** Replays are merchant acts: each one is an event (and so an audit entry). */
  outbox: Outbox;
  eventRetentionDays: number;
  /** Called after a replay commits, so a worker of this process sends it at once. */
  onDeliveriesDue(): void;
  now?: () => Date;
}

const KNOWN_TOPICS = new Set(eventCatalogue.flatMap((event) => [event.name, event.topic]));
const MAX_BULK_REPLAY = 1000;

function single(query: Record<string, unknown>, name: string, errors: FieldError[]): string | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') {
    errors.push({ field: name, code: 'invalid_type', message: `${name} must be given once` });
    return undefined;
  }
  return value;
}

function parseTopic(value: unknown, errors: FieldError[]): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KNOWN_TOPICS.has(value)) {
    errors.push({ field: 'topic', code: 'unknown_topic', message: 'topic must be an event name (orders.created) or a topic (orders) of the event catalogue' });
    return undefined;
  }
  return value;
}

const ENDPOINT_FILTERS = {
  subscription_id: { prefix: 'wh', what: 'a webhook subscription id (wh_…)' },
  destination_id: { prefix: 'dst', what: 'a destination id (dst_…)' },
} as const;

function parseEndpointId(field: keyof typeof ENDPOINT_FILTERS, value: unknown, errors: FieldError[]): string | undefined {
  if (value === undefined) return undefined;
  const { prefix, what } = ENDPOINT_FILTERS[field];
  if (typeof value !== 'string' || !new RegExp(`^${prefix}_[0-9a-z]{26}$`).test(value)) {
    errors.push({ field, code: 'invalid_id', message: `${field} must be ${what}` });
    return undefined;
  }
  return value;
}

/** Query-string filters shared by deliveries, dead letters and events. */
function parseFilters(source: Record<string, unknown>, allowed: readonly string[], fromQuery: boolean): DeliveryFilters {
  const errors: FieldError[] = [];
  const read = (name: string) => (fromQuery ? single(source, name, errors) : source[name]);
  const filters: DeliveryFilters = {};
  if (allowed.includes('subscription_id')) {
    const id = parseEndpointId('subscription_id', read('subscription_id'), errors);
    if (id) filters.subscriptionId = id;
  }
  if (allowed.includes('destination_id')) {
    const id = parseEndpointId('destination_id', read('destination_id'), errors);
    if (id) filters.destinationId = id;
  }
  if (allowed.includes('event_id')) {
    const eventId = read('event_id');
    if (typeof eventId === 'string' && /^evt_[0-9a-z]{26}$/.test(eventId)) filters.eventId = eventId;
    else if (eventId !== undefined) errors.push({ field: 'event_id', code: 'invalid_id', message: 'event_id must be an event id (evt_…)' });
  }
  const topic = parseTopic(read('topic'), errors);
  if (topic) filters.topic = topic;
  if (allowed.includes('status')) {
    const status = read('status');
    if (status !== undefined) {
      if (typeof status === 'string' && (DELIVERY_STATUSES as readonly string[]).includes(status)) filters.status = status as DeliveryStatus;
      else errors.push({ field: 'status', code: 'invalid_value', message: `status must be one of ${DELIVERY_STATUSES.join(', ')}` });
    }
  }
  const time = (name: 'since' | 'until') => {
    const value = read(name);
    if (value === undefined) return undefined;
    const parsed = parseTimestamp(value);
    if (!parsed)
      errors.push({ field: name, code: 'invalid_timestamp', message: `${name} must be an ISO 8601 timestamp with a zone, such as 2026-11-22T10:04:05.123Z` });
    return parsed;
  };
  const since = time('since');
  const until = time('until');
  if (since) filters.since = since;
  if (until) filters.until = until;
  if (since && until && since >= until) errors.push({ field: 'until', code: 'out_of_range', message: 'until must be later than since' });
  if (errors.length > 0) throw new ValidationFailed(errors);
  return filters;
}

export function deliveryUseCases({ db, outbox, eventRetentionDays, onDeliveriesDue, now = () => new Date() }: DeliveryUseCaseDeps) {
  async function findDeadLetter(tx: Queryable, merchantId: MerchantId, id: string, forUpdate = false): Promise<Delivery> {
    const delivery = await findDeliveryForMerchant(tx, merchantId, id, { forUpdate });
    if (!delivery || delivery.status !== 'dead' || delivery.replayedBy) throw new NotFound('dead letter', id);
    return delivery;
  }

  /** What a delivery sends: a routed record's own payload, or its stored event's. */
  async function payloadOf(tx: Queryable, merchantId: MerchantId, delivery: Delivery): Promise<WebhookPayload> {
    if (delivery.payloadText !== null) return JSON.parse(delivery.payloadText) as WebhookPayload;
    const event = await findEventForMerchant(tx, merchantId, delivery.eventId);
    // Events a delivery still needs are kept past retention, so this is a broken invariant.
    if (!event) throw new Error(`event ${delivery.eventId} of a delivery is missing`);
    return event.payload;
  }

  /**
   * A replay is a new delivery of the same event (same webhook-id, same payload) to the same
   * endpoint, with attempts of its own, announced as `webhooks.dead_letter_replayed` so the audit
   * log names every replay.
   */
  async function replay(tx: Queryable, emit: Emit, merchantId: MerchantId, dead: Delivery[]): Promise<Delivery[]> {
    const created = now();
    const replays: Delivery[] = dead.map((delivery) => ({
      id: newId('del'),
      merchantId,
      eventId: delivery.eventId,
      topic: delivery.topic,
      endpointKind: delivery.endpointKind,
      endpointId: delivery.endpointId,
      payloadText: delivery.payloadText,
      status: 'pending',
      attemptCount: 0,
      nextAttemptAt: created,
      firstAttemptAt: null,
      lastStatusCode: null,
      lastError: null,
      replayOf: delivery.id,
      replayedBy: null,
      createdAt: created,
      updatedAt: created,
      completedAt: null,
    }));
    await insertDeliveries(
      tx,
      replays.map((r) => ({ ...r, status: 'pending' as const, routedId: null })),
      created,
    );
    await markReplayed(
      tx,
      merchantId,
      replays.map((r) => ({ deadId: r.replayOf!, replayId: r.id })),
      created,
    );
    for (const replayed of replays) emit(buildEvent('webhooks.dead_letter_replayed', merchantId, { object: presentDelivery(replayed) }));
    return replays;
  }

  return {
    async listDeliveries(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      const filters = parseFilters(query, ['subscription_id', 'destination_id', 'event_id', 'status'], true);
      return toListPage(await listDeliveriesForMerchant(db, merchantId, page, filters), page.limit, presentDelivery);
    },

    async getDelivery(merchantId: MerchantId, id: string) {
      const delivery = await findDeliveryForMerchant(db, merchantId, id);
      if (!delivery) throw new NotFound('webhook delivery', id);
      return presentDeliveryWithAttempts(delivery, await attemptsOfDelivery(db, merchantId, id));
    },

    async listDeadLetters(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      const filters = parseFilters(query, ['subscription_id', 'destination_id'], true);
      const rows = await listDeliveriesForMerchant(db, merchantId, page, { ...filters, deadLetters: true });
      // Dead letters of one event share its payload, looked up once; a routed record carries its own.
      const payloadKey = (row: Delivery) => (row.payloadText === null ? row.eventId : row.id);
      const payloads = new Map<string, WebhookPayload>();
      for (const row of rows) if (!payloads.has(payloadKey(row))) payloads.set(payloadKey(row), await payloadOf(db, merchantId, row));
      return toListPage(rows, page.limit, (row) => presentDeadLetter(row, payloads.get(payloadKey(row))!));
    },

    async getDeadLetter(merchantId: MerchantId, id: string) {
      const delivery = await findDeadLetter(db, merchantId, id);
      return presentDeadLetter(delivery, await payloadOf(db, merchantId, delivery));
    },

    async replayDeadLetter(merchantId: MerchantId, id: string) {
      const replayed = await outbox.transaction(async (tx, emit) => {
        const dead = await findDeadLetter(tx, merchantId, id, true);
        const endpoint = await findEndpointForMerchant(tx, merchantId, dead.endpointId);
        if (endpoint?.status !== 'enabled') {
          throw new Conflict(
            dead.endpointKind === 'subscription'
              ? `Subscription ${dead.endpointId} is disabled; enable it (PATCH status=enabled) before replaying its dead letters.`
              : `Destination ${dead.endpointId} is not active; set its status to active before replaying its dead letters.`,
          );
        }
        const [created] = await replay(tx, emit, merchantId, [dead]);
        return created!;
      });
      onDeliveriesDue();
      return presentDelivery(replayed);
    },

    async replayDeadLetters(merchantId: MerchantId, body: unknown) {
      if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
        throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object of filters' }]);
      }
      const source = (body ?? {}) as Record<string, unknown>;
      const unknown = Object.keys(source).filter((key) => !['subscription_id', 'destination_id', 'topic', 'since', 'until', 'limit'].includes(key));
      if (unknown.length > 0)
        throw new ValidationFailed(
          unknown.map((field) => ({ field: fieldPath('', field), code: 'unknown_field', message: `${field} is not a replay filter` })),
        );
      const limit = source.limit ?? MAX_BULK_REPLAY;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_BULK_REPLAY) {
        throw new ValidationFailed([{ field: 'limit', code: 'out_of_range', message: `limit must be an integer from 1 to ${MAX_BULK_REPLAY}` }]);
      }
      const filters = parseFilters(source, ['subscription_id', 'destination_id'], false);
      const { ids, hasMore } = await outbox.transaction(async (tx, emit) => {
        const dead = await lockDeadLettersForReplay(tx, merchantId, filters, limit);
        const replays = await replay(tx, emit, merchantId, dead.slice(0, limit));
        return { ids: replays.map((r) => r.id), hasMore: dead.length > limit };
      });
      if (ids.length > 0) onDeliveriesDue();
      return { object: 'dead_letter_replay' as const, replayed: ids.length, delivery_ids: ids, has_more: hasMore };
    },

    async listEvents(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      const filters: EventFilters = parseFilters(query, [], true);
      const notBefore = new Date(now().getTime() - eventRetentionDays * 86_400_000);
      return toListPage(await listEventsForMerchant(db, merchantId, page, filters, notBefore), page.limit, presentEvent);
    },

    async getEvent(merchantId: MerchantId, id: string) {
      const event = await findEventForMerchant(db, merchantId, id);
      const notBefore = new Date(now().getTime() - eventRetentionDays * 86_400_000);
      if (!event || event.createdAt < notBefore) throw new NotFound('event', id);
      return presentEvent(event);
    },
  };
}

export type DeliveryUseCases = ReturnType<typeof deliveryUseCases>;
