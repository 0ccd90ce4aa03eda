import { createHash } from 'node:crypto';
import { canonicalJson, type Actor, type MerxEvent } from '@merx/kit';

/** One line of a merchant's audit log. `hash` covers every other field and the previous hash. */
export interface AuditEntry {
  id: string;
  merchantId: string;
  /** Position in the merchant's chain, from 1, without gaps. */
  sequence: number;
  occurredAt: string;
  actor: Actor;
  action: string;
  resource: { type: string; id: string };
  changes: { before: Record<string, unknown> | null; after: Record<string, unknown> | null };
  requestId: string | null;
  ip: string | null;
  eventId: string;
  /** Which frozen form `hash` was computed over (see HASHED_FORMS); a chain may mix versions. */
  hashVersion: number;
  prevHash: string;
  hash: string;
}

export type UnchainedEntry = Omit<AuditEntry, 'sequence' | 'prevHash' | 'hash' | 'hashVersion'>;

/** The chain of every merchant starts from this value, so the first entry has a previous hash too. */
export const GENESIS_HASH = '0'.repeat(64);

const SYSTEM_ACTOR: Actor = { type: 'system', id: 'merx' };

function pick(source: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((key) => [key, source[key]]));
}

/**
 * What changed, before and after, from the event's payload: a create has no before, a delete no
 * after, an update the changed fields on both sides (its `previous` names them).
 */
export function changesOf(event: MerxEvent): AuditEntry['changes'] {
  const object = event.data.object ?? {};
  const previous = event.data.previous;
  if (previous && Object.keys(previous).length > 0) return { before: previous, after: pick(object, Object.keys(previous)) };
  const verb = event.topic.split('.').slice(1).join('.');
  if (/deleted|revoked|removed/.test(verb)) return { before: object, after: null };
  return { before: null, after: object };
}

export function entryFromEvent(id: string, event: MerxEvent): UnchainedEntry {
  const object = event.data.object ?? {};
  return {
    id,
    merchantId: event.merchant_id,
    occurredAt: event.created_at,
    actor: event.context?.actor ?? SYSTEM_ACTOR,
    action: event.topic,
    resource: {
      type: typeof object.object === 'string' ? object.object : event.topic.split('.')[0]!,
      id: typeof object.id === 'string' ? object.id : event.id,
    },
    changes: changesOf(event),
    requestId: event.context?.request_id ?? null,
    ip: event.context?.ip ?? null,
    eventId: event.id,
  };
}

/**
 * The forms an entry's hash is computed over, by `hash_version`. Each is frozen once entries carry
 * it: the API may show new fields, and a new form gets a new version, while every stored chain
 * keeps verifying with the form it was written in. Version 1 is the canonical (RFC 8785) JSON of
 * these fields, which were the API's shape when chains began.
 */
const HASHED_FORMS: Record<number, (entry: Omit<AuditEntry, 'hash'>) => unknown> = {
  1: (entry) => ({
    id: entry.id,
    object: 'audit_entry',
    sequence: entry.sequence,
    occurred_at: entry.occurredAt,
    actor: entry.actor,
    action: entry.action,
    resource: entry.resource,
    changes: entry.changes,
    request_id: entry.requestId,
    ip: entry.ip,
    event_id: entry.eventId,
    prev_hash: entry.prevHash,
    merchant_id: entry.merchantId,
  }),
};

/** The form new entries are hashed with. */
export const CURRENT_HASH_VERSION = 1;

export class UnknownHashVersion extends Error {
  constructor(version: number) {
    super(`audit hash_version ${version} is not known to this release`);
    this.name = 'UnknownHashVersion';
  }
}

export function hashEntry(entry: Omit<AuditEntry, 'hash'>): string {
  const form = HASHED_FORMS[entry.hashVersion];
  if (!form) throw new UnknownHashVersion(entry.hashVersion);
  return createHash('sha256')
    .update(`${entry.prevHash}\n${canonicalJson(form(entry))}`)
    .digest('hex');
}

export function chainEntry(entry: UnchainedEntry, previous: { sequence: number; hash: string } | undefined): AuditEntry {
  const linked = { ...entry, sequence: (previous?.sequence ?? 0) + 1, prevHash: previous?.hash ?? GENESIS_HASH, hashVersion: CURRENT_HASH_VERSION };
  return { ...linked, hash: hashEntry(linked) };
}

export interface ChainBreak {
  /** The first entry that does not verify; null when entries are missing after the last good one. */
  id: string | null;
  sequence: number;
  reason: 'hash_mismatch' | 'prev_hash_mismatch' | 'sequence_gap';
}

/**
 * Walks entries in sequence order from a checkpoint (or the genesis) and returns the first place
 * where the chain does not hold, if any.
 */
export function findChainBreak(entries: Iterable<AuditEntry>, start: { sequence: number; hash: string }): ChainBreak | undefined {
  let expected = start;
  for (const entry of entries) {
    if (entry.sequence !== expected.sequence + 1) return { id: entry.id, sequence: entry.sequence, reason: 'sequence_gap' };
    if (entry.prevHash !== expected.hash) return { id: entry.id, sequence: entry.sequence, reason: 'prev_hash_mismatch' };
    if (!HASHED_FORMS[entry.hashVersion] || hashEntry(entry) !== entry.hash) return { id: entry.id, sequence: entry.sequence, reason: 'hash_mismatch' };
    expected = { sequence: entry.sequence, hash: entry.hash };
  }
  return undefined;
}

export function presentEntry(entry: AuditEntry) {
  return {
    id: entry.id,
    object: 'audit_entry' as const,
    sequence: entry.sequence,
    occurred_at: entry.occurredAt,
    actor: entry.actor,
    action: entry.action,
    resource: entry.resource,
    changes: entry.changes,
    request_id: entry.requestId,
    ip: entry.ip,
    event_id: entry.eventId,
    hash: entry.hash,
    hash_version: entry.hashVersion,
    prev_hash: entry.prevHash,
  };
}
