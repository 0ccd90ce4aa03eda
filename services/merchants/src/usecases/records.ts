import { MAX_RECORDS_PER_BATCH, recordTypes } from '@merx/contracts';
import {
  buildEvent,
  Conflict,
  fieldPath,
  newId,
  NotFound,
  parsePageRequest,
  parseTimeFilter,
  toListPage,
  ValidationFailed,
  type Db,
  type FieldError,
  type MerchantId,
  type Outbox,
} from '@merx/kit';
import { presentRecord, recordEvent, validateRecord, type IngestedRecord } from '../domain/record.js';
import type { SourceFields } from '../domain/source.js';
import {
  findRecordsByKeyForMerchant,
  insertRecordsOnceForMerchant,
  listRecordsOfSourceForMerchant,
  routesOfRecordsForMerchant,
  type RecordFilters,
} from '../store/records-store.js';
import { findResourceForMerchant } from '../store/resource-table.js';
import { SOURCES } from '../store/tables.js';

export type RecordOutcome = 'accepted' | 'duplicate' | 'rejected';

export interface RecordResult {
  index: number;
  status: RecordOutcome;
  type: string | null;
  external_id: string | null;
  record_id: string | null;
  event_id: string | null;
  errors: FieldError[];
}

/** The batch itself must be well formed; its records are judged one by one. */
function recordsOfBatch(body: unknown): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object: {"records": [...]}' }]);
  }
  const { records, ...rest } = body as Record<string, unknown>;
  const errors: FieldError[] = Object.keys(rest).map((field) => ({
    field: fieldPath('', field),
    code: 'unknown_field',
    message: `${field} is not part of a record batch`,
  }));
  if (records === undefined) errors.push({ field: 'records', code: 'required', message: 'records is required: an array of 1 to 500 records' });
  else if (!Array.isArray(records)) errors.push({ field: 'records', code: 'invalid_type', message: 'records must be an array' });
  else if (records.length === 0) errors.push({ field: 'records', code: 'too_short', message: 'records must hold at least one record' });
  else if (records.length > MAX_RECORDS_PER_BATCH)
    errors.push({ field: 'records', code: 'too_long', message: `records must hold at most ${MAX_RECORDS_PER_BATCH} records; send the rest in another batch` });
  if (errors.length > 0) throw new ValidationFailed(errors);
  return records as unknown[];
}

const keyOf = (record: { type: string; external_id: string }) => `${record.type}\u0000${record.external_id}`;

function parseRecordFilters(query: Record<string, unknown>): RecordFilters {
  const errors: FieldError[] = [];
  const filters: RecordFilters = {};
  const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
  if (query.type !== undefined) {
    if ((recordTypes as readonly unknown[]).includes(query.type)) filters.type = query.type as string;
    else errors.push({ field: 'type', code: 'invalid_value', message: `type must be one of ${recordTypes.join(', ')}` });
  }
  if (query.external_id !== undefined) {
    const externalId = text('external_id');
    if (externalId && externalId.length <= 255) filters.externalId = externalId;
    else errors.push({ field: 'external_id', code: 'invalid_value', message: 'external_id must be given once, 1-255 characters' });
  }
  for (const name of ['since', 'until'] as const) {
    const time = parseTimeFilter(query, name, errors);
    if (time) filters[name] = time;
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
  return filters;
}

export function recordUseCases({ db, outbox, now = () => new Date() }: { db: Db; outbox: Outbox; now?: () => Date }) {
  return {
    /**
     * Ingests a batch in one transaction: valid records are inserted once per (source, type,
     * external_id) and each accepted one emits its event with it; repeats are reported as
     * duplicates naming the record they repeat; invalid ones are rejected with their reasons.
     * If the transaction fails, nothing of the batch is written and no event leaves.
     */
    async ingestRecords(merchantId: MerchantId, sourceId: string, body: unknown) {
      const inputs = recordsOfBatch(body);
      const results: RecordResult[] = [];
      const valid: { index: number; record: IngestedRecord }[] = [];
      const receivedAt = now();
      inputs.forEach((input, index) => {
        const { record, errors } = validateRecord(input);
        const raw = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
        results.push({
          index,
          status: record ? 'accepted' : 'rejected',
          type: typeof raw.type === 'string' ? raw.type : null,
          external_id: typeof raw.external_id === 'string' ? raw.external_id : null,
          record_id: null,
          event_id: null,
          errors,
        });
        if (!record) return;
        // Spelled out, not spread: V8 copies a spread object that gains members on a slow path, a
        // few µs a record, the largest single cost of a bulk ingest's validation.
        const { type, external_id, occurred_at, data } = record;
        valid.push({ index, record: { type, external_id, occurred_at, data, id: newId('rec'), merchantId, sourceId, eventId: newId('evt'), receivedAt } });
      });

      await outbox.transaction(async (tx, emit) => {
        // FOR KEY SHARE: a concurrent pause or delete of the source waits for this batch (and a
        // batch arriving after the pause commits sees it).
        const source = await findResourceForMerchant<SourceFields>(tx, SOURCES, merchantId, sourceId, 'key share');
        if (!source) throw new NotFound('source', sourceId);
        if (source.fields.status !== 'active') throw new Conflict(`Source ${sourceId} is ${source.fields.status}; it accepts records only while active.`);
        const inserted = await insertRecordsOnceForMerchant(
          tx,
          merchantId,
          valid.map((v) => v.record),
        );
        const repeated = valid.filter((v) => !inserted.has(v.record.id));
        const earlier = new Map(
          (
            await findRecordsByKeyForMerchant(
              tx,
              merchantId,
              sourceId,
              repeated.map((v) => ({ type: v.record.type, externalId: v.record.external_id })),
            )
          ).map((r) => [keyOf(r), r]),
        );
        for (const { index, record } of valid) {
          const result = results[index]!;
          if (inserted.has(record.id)) {
            const { topic, object } = recordEvent(record);
            emit({ ...buildEvent(topic, merchantId, { object }, receivedAt), id: record.eventId });
            Object.assign(result, { record_id: record.id, event_id: record.eventId });
          } else {
            const first = earlier.get(keyOf(record));
            Object.assign(result, { status: 'duplicate', record_id: first?.id ?? null, event_id: first?.eventId ?? null });
          }
        }
      });

      const count = (status: RecordOutcome) => results.filter((r) => r.status === status).length;
      return {
        object: 'record_batch' as const,
        source_id: sourceId,
        accepted: count('accepted'),
        duplicates: count('duplicate'),
        rejected: count('rejected'),
        results,
      };
    },

    async listRecords(merchantId: MerchantId, sourceId: string, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      const filters = parseRecordFilters(query);
      if (!(await findResourceForMerchant(db, SOURCES, merchantId, sourceId))) throw new NotFound('source', sourceId);
      const rows = await listRecordsOfSourceForMerchant(db, merchantId, sourceId, page, filters);
      const routes = await routesOfRecordsForMerchant(
        db,
        merchantId,
        rows.slice(0, page.limit).map((r) => r.id),
      );
      return toListPage(rows, page.limit, (record) => presentRecord(record, routes.get(record.id) ?? []));
    },
  };
}

export type RecordUseCases = ReturnType<typeof recordUseCases>;
