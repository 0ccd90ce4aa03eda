import {
  handleEventOnce,
  newId,
  NotFound,
  parsePageRequest,
  parseTimeFilter,
  recordFirstSightings,
  toListPage,
  trustedMerchantId,
  ValidationFailed,
  type Db,
  type FieldError,
  type MerchantId,
  type MerxEvent,
} from '@merx/kit';
import { entryFromEvent, findChainBreak, presentEntry, type AuditEntry } from '../domain/entry.js';
import {
  appendEntriesForMerchant,
  appendEntryForMerchant,
  chainHeadForMerchant,
  checkpointForMerchant,
  entriesInChainOrderForMerchant,
  entryAtSequenceForMerchant,
  findEntryForMerchant,
  listEntriesForMerchant,
  type EntryFilters,
} from '../store/entries-store.js';
import { AUDIT_SCHEMA } from '../store/migrations.js';

export const AUDIT_CONSUMER = 'audit.events';
const VERIFY_BATCH = 1_000;

function parseFilters(query: Record<string, unknown>): EntryFilters {
  const errors: FieldError[] = [];
  const filters: EntryFilters = {};
  const text = (name: string, key: keyof EntryFilters) => {
    const value = query[name];
    if (value === undefined) return;
    if (typeof value !== 'string' || value.length === 0 || value.length > 255)
      errors.push({ field: name, code: 'invalid_value', message: `${name} must be given once, 1-255 characters` });
    else (filters as Record<string, unknown>)[key] = value;
  };
  text('resource_id', 'resourceId');
  text('resource_type', 'resourceType');
  text('action', 'action');
  text('actor_id', 'actorId');
  const since = parseTimeFilter(query, 'since', errors);
  const until = parseTimeFilter(query, 'until', errors);
  if (since) filters.since = since;
  if (until) filters.until = until;
  if (errors.length > 0) throw new ValidationFailed(errors);
  return filters;
}

function parseFromSequence(query: Record<string, unknown>): number | undefined {
  const value = query.from_sequence;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[1-9]\d{0,15}$/.test(value)) {
    throw new ValidationFailed([{ field: 'from_sequence', code: 'invalid_value', message: 'from_sequence must be a positive integer' }]);
  }
  return Number(value);
}

export function auditLog(db: Db) {
  return {
    /**
     * One merchant's events, appended in order in one transaction; the inbox rows commit with
     * them, so redelivered events are dropped and a failure leaves nothing behind.
     */
    async recordEventsOfMerchant(merchantId: string, events: MerxEvent[]): Promise<void> {
      await db.transaction(async (tx) => {
        const toAppend = await recordFirstSightings(tx, AUDIT_SCHEMA, AUDIT_CONSUMER, events);
        await appendEntriesForMerchant(
          tx,
          trustedMerchantId(merchantId),
          toAppend.map((event) => entryFromEvent(newId('aud'), event)),
        );
      });
    },

    /** One entry per event, exactly once (the inbox row and the entry commit together). */
    async recordEvent(event: MerxEvent): Promise<'handled' | 'duplicate'> {
      return handleEventOnce(db, AUDIT_SCHEMA, AUDIT_CONSUMER, event, async (tx) => {
        await appendEntryForMerchant(tx, trustedMerchantId(event.merchant_id), entryFromEvent(newId('aud'), event));
      });
    },

    async listEntries(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      const rows = await listEntriesForMerchant(db, merchantId, page, parseFilters(query));
      return toListPage(rows, page.limit, presentEntry);
    },

    async getEntry(merchantId: MerchantId, id: string): Promise<AuditEntry> {
      const entry = await findEntryForMerchant(db, merchantId, id);
      if (!entry) throw new NotFound('audit entry', id);
      return entry;
    },

    /**
     * Recomputes the chain from the retention checkpoint (or from `from_sequence`, trusting the
     * entry before it) to the head, and names the first entry where it does not hold.
     */
    async verifyChain(merchantId: MerchantId, query: Record<string, unknown>) {
      const checkpoint = await checkpointForMerchant(db, merchantId);
      const requested = parseFromSequence(query);
      let anchor = checkpoint;
      if (requested !== undefined && requested - 1 > checkpoint.sequence) {
        const previous = await entryAtSequenceForMerchant(db, merchantId, requested - 1);
        if (!previous) throw new ValidationFailed([{ field: 'from_sequence', code: 'out_of_range', message: 'from_sequence is past the end of the log' }]);
        anchor = { sequence: previous.sequence, hash: previous.hash };
      }
      const head = await chainHeadForMerchant(db, merchantId);
      let cursor = anchor;
      let checked = 0;
      let broken: ReturnType<typeof findChainBreak>;
      for (;;) {
        const batch = await entriesInChainOrderForMerchant(db, merchantId, cursor.sequence + 1, VERIFY_BATCH);
        if (batch.length === 0) break;
        broken = findChainBreak(batch, cursor);
        if (broken) break;
        checked += batch.length;
        const last = batch[batch.length - 1]!;
        cursor = { sequence: last.sequence, hash: last.hash };
      }
      if (!broken && (cursor.sequence !== head.sequence || cursor.hash !== head.hash)) {
        // Entries at the end are missing or the head was rewritten: the break is right after the last good entry.
        broken = { id: null, sequence: cursor.sequence + 1, reason: 'sequence_gap' };
      }
      return {
        object: 'audit_verification' as const,
        valid: !broken,
        from_sequence: anchor.sequence + 1,
        to_sequence: head.sequence,
        entries_checked: checked,
        head_hash: head.hash,
        broken_at: broken ? { id: broken.id, sequence: broken.sequence, reason: broken.reason } : null,
      };
    },
  };
}

export type AuditLog = ReturnType<typeof auditLog>;
