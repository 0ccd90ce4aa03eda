import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chainEntry, findChainBreak, GENESIS_HASH, hashEntry, presentEntry, UnknownHashVersion, type AuditEntry } from './entry.js';

// A known chain, hashed with hash_version 1. The hashes are golden: computed once by a separate
// implementation (sorted-key JSON in Python), so any change to the hashed form fails here before
// it could break the verification of a stored chain.
const base = {
  merchantId: 'mch_golden',
  actor: { type: 'api_key' as const, id: 'key_golden' },
  resource: { type: 'product', id: 'prod_golden' },
  requestId: 'req_golden',
  ip: '203.0.113.7',
};
const GOLDEN_1 = '916ab2c0f2a6ce44f740f8eff833bf89fd71b52b68b0a58de50f2b320bd2a416';
const GOLDEN_2 = '595210e281fc4e6530dbac90b3cd2994c28a7123d4e580c5c655d47437604550';
const CANONICAL_1 =
  '{"action":"products.created","actor":{"id":"key_golden","type":"api_key"},"changes":{"after":{"price":"9.50","title":"Mug"},"before":null},"event_id":"evt_1","id":"aud_1","ip":"203.0.113.7","merchant_id":"mch_golden","object":"audit_entry","occurred_at":"2026-01-02T03:04:05.678Z","prev_hash":"0000000000000000000000000000000000000000000000000000000000000000","request_id":"req_golden","resource":{"id":"prod_golden","type":"product"},"sequence":1}';

function goldenChain(): [AuditEntry, AuditEntry] {
  const first = chainEntry(
    {
      ...base,
      id: 'aud_1',
      occurredAt: '2026-01-02T03:04:05.678Z',
      action: 'products.created',
      changes: { before: null, after: { title: 'Mug', price: '9.50' } },
      eventId: 'evt_1',
    },
    undefined,
  );
  const second = chainEntry(
    {
      ...base,
      id: 'aud_2',
      occurredAt: '2026-01-02T03:05:00.000Z',
      action: 'products.updated',
      changes: { before: { title: 'Mug' }, after: { title: 'Big mug' } },
      eventId: 'evt_2',
      ip: null,
    },
    first,
  );
  return [first, second];
}

describe('audit hashes (hash_version 1)', () => {
  it('hash a known chain to its golden values', () => {
    const [first, second] = goldenChain();
    assert.equal(first.hashVersion, 1);
    assert.equal(createHash('sha256').update(`${GENESIS_HASH}\n${CANONICAL_1}`).digest('hex'), GOLDEN_1, 'the documented form');
    assert.equal(first.hash, GOLDEN_1);
    assert.equal(second.prevHash, GOLDEN_1);
    assert.equal(second.hash, GOLDEN_2);
    assert.equal(findChainBreak([first, second], { sequence: 0, hash: GENESIS_HASH }), undefined);
  });

  it('do not depend on what the API shows: a field the API adds is not hashed', () => {
    const [first] = goldenChain();
    const shown = presentEntry(first);
    assert.equal(shown.hash_version, 1);
    assert.equal(hashEntry({ ...first, ...{ shownLater: 'a new response field' } } as AuditEntry), GOLDEN_1);
  });

  it('break on any hashed field, and on a version this release does not know', () => {
    const [first, second] = goldenChain();
    assert.deepEqual(findChainBreak([first, { ...second, changes: { before: null, after: null } }], { sequence: 0, hash: GENESIS_HASH }), {
      id: 'aud_2',
      sequence: 2,
      reason: 'hash_mismatch',
    });
    assert.deepEqual(findChainBreak([{ ...first, hashVersion: 99 }, second], { sequence: 0, hash: GENESIS_HASH }), {
      id: 'aud_1',
      sequence: 1,
      reason: 'hash_mismatch',
    });
    assert.throws(() => hashEntry({ ...first, hashVersion: 99 }), UnknownHashVersion);
  });
});
