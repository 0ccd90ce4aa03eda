import { create } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { MAX_RECORDS_PER_BATCH } from '@merx/contracts';
import {
  MAX_BULK_PAGE_ITEMS,
  IngestRecordsResponse_Status,
  IngestRecordsResponseSchema,
  RecordService,
  RecordType,
  type IngestRecordsRequest,
  type IngestRecordsResponse,
  type RecordInput,
} from '@merx/contracts/grpc';
import {
  bulkMessageItems,
  bulkStreamHandler,
  grpcServiceDefinitionOf,
  MerxError,
  type grpc,
  type Logger,
  type MerchantId,
  type TokenVerifier,
} from '@merx/kit';
import type { RecordOutcome, RecordUseCases } from '../usecases/records.js';

const TYPE_NAMES: Record<number, string> = {
  [RecordType.ORDER]: 'order',
  [RecordType.REVIEW]: 'review',
  [RecordType.CAMPAIGN_SPEND]: 'campaign_spend',
  [RecordType.ALERT]: 'alert',
};

const STATUS_OF: Record<RecordOutcome, IngestRecordsResponse_Status> = {
  accepted: IngestRecordsResponse_Status.ACCEPTED,
  duplicate: IngestRecordsResponse_Status.DUPLICATE,
  rejected: IngestRecordsResponse_Status.REJECTED,
};

interface StreamedRecord {
  index: number;
  sourceId: string;
  /** The record as the REST batch carries it. */
  body: Record<string, unknown>;
  externalId: string;
}

/** A record of a message as the REST record it stands for; empty strings and unset fields are absent, so their checks say `required`. */
function streamedRecordOf(sourceId: string, record: RecordInput | undefined, index: number): StreamedRecord {
  const body: Record<string, unknown> = {};
  if (record) {
    // An enum number the contract does not name is refused by the record's own type check.
    if (record.type !== RecordType.UNSPECIFIED) body.type = TYPE_NAMES[record.type] ?? `unknown enum value ${record.type}`;
    if (record.externalId !== '') body.external_id = record.externalId;
    if (record.occurTime) body.occurred_at = timestampDate(record.occurTime).toISOString();
    if (record.data) body.data = record.data;
  }
  return { index, sourceId, body, externalId: record?.externalId ?? '' };
}

/** Consecutive records of one source, at most a REST batch each: the stream keeps its order. */
function runsBySource(records: StreamedRecord[]): StreamedRecord[][] {
  const runs: StreamedRecord[][] = [];
  for (const record of records) {
    const last = runs.at(-1);
    if (last && last[0]!.sourceId === record.sourceId && last.length < MAX_RECORDS_PER_BATCH) last.push(record);
    else runs.push([record]);
  }
  return runs;
}

/**
 * merx.v1.RecordService: records go through the very use case of `POST /sources/{id}/records`
 * (validation, once per external_id, the event in the same transaction, routing after it), a
 * batch per run of one source's records. A source that does not exist or is paused rejects its
 * records with the REST problem, and the stream goes on.
 */
export function recordGrpcService(records: RecordUseCases, verifier: TokenVerifier, logger: Logger) {
  const ingest = async (merchantId: MerchantId, run: StreamedRecord[]): Promise<IngestRecordsResponse[]> => {
    try {
      const batch = await records.ingestRecords(merchantId, run[0]!.sourceId, { records: run.map((record) => record.body) });
      return batch.results.map((result, position) =>
        create(IngestRecordsResponseSchema, {
          index: run[position]!.index,
          externalId: result.external_id ?? run[position]!.externalId,
          status: STATUS_OF[result.status],
          recordId: result.record_id ?? '',
          eventId: result.event_id ?? '',
          ...(result.status === 'rejected'
            ? { problem: { code: 'validation_failed', detail: result.errors.map((e) => `${e.field}: ${e.message}`).join('; '), violations: result.errors } }
            : {}),
        }),
      );
    } catch (error) {
      if (!(error instanceof MerxError) || !error.expose) throw error;
      return run.map((record) =>
        create(IngestRecordsResponseSchema, {
          index: record.index,
          externalId: record.externalId,
          status: IngestRecordsResponse_Status.REJECTED,
          problem: { code: error.code, detail: error.message },
        }),
      );
    }
  };

  const ingestRecords = bulkStreamHandler<IngestRecordsRequest, StreamedRecord, IngestRecordsResponse>({
    verifier,
    scope: 'config:write',
    logger,
    chunkSize: MAX_RECORDS_PER_BATCH,
    readAhead: 2 * MAX_RECORDS_PER_BATCH,
    itemsOf: (message, firstIndex) =>
      bulkMessageItems({ single: 'record', page: 'records', max: MAX_BULK_PAGE_ITEMS }, message.record, message.records, firstIndex, (record, index) =>
        streamedRecordOf(message.sourceId, record, index),
      ),
    pageOf: (acks) => create(IngestRecordsResponseSchema, { acks }),
    // Records are once per (source, type, external id): the same record twice is answered in stream order.
    keyOf: (record) => (record.externalId === '' ? undefined : `${record.sourceId}\u0000${String(record.body.type)}\u0000${record.externalId}`),
    async write(claims, items) {
      const answers: IngestRecordsResponse[] = [];
      for (const run of runsBySource(items)) answers.push(...(await ingest(claims.merchantId, run)));
      return answers;
    },
  });

  return { definition: grpcServiceDefinitionOf(RecordService), implementation: { IngestRecords: ingestRecords } as grpc.UntypedServiceImplementation };
}
