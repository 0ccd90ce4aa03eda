import assert from 'node:assert/strict';
import { becameSendable, destinationAfterSync, removalApplies, type DestinationEndpoint, type DestinationSync } from './destination.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';
const HOUR = 3_600_000;
const t0 = new Date('2026-01-02T03:00:00.000Z');
const t1 = new Date(t0.getTime() + HOUR);

const sync = (overrides: Partial<DestinationSync> = {}): DestinationSync => ({
  id: 'dst_01jd3k7q8m2x4v6b9c0d1e2f3g',
  object: 'destination_endpoint',
  kind: 'webhook',
  url: 'https://erp.example/merx',
  status: 'active',
  secret: 'whsec_AAAA',
  version: 1,
  ...overrides,
});

const held = (overrides: Partial<DestinationSync> = {}): DestinationEndpoint =>
  destinationAfterSync(undefined, undefined, sync(overrides), MERCHANT, HOUR, t0)!;

describe('destination endpoints from syncs', () => {
  it('creates an endpoint from its first sync, sendable only while active', () => {
    const active = held();
    assert.deepEqual([active.status, active.disabledReason, active.format, active.version, active.enabledAt], ['enabled', null, 'webhook', 1, t0]);
    assert.equal(becameSendable(undefined, active), true);
    for (const status of ['paused', 'disabled'] as const) {
      const off = held({ status });
      assert.deepEqual([off.status, off.disabledReason], ['disabled', 'by_merchant']);
      assert.equal(becameSendable(undefined, off), false);
    }
  });

  it('ignores a sync that is not newer than the one held', () => {
    const current = held({ version: 3 });
    assert.equal(destinationAfterSync(current, undefined, sync({ version: 3, url: 'https://elsewhere.example/' }), MERCHANT, HOUR, t1), undefined);
    assert.equal(destinationAfterSync(current, undefined, sync({ version: 2 }), MERCHANT, HOUR, t1), undefined);
  });

  it("never brings back a destination with a sync its removal's tombstone is not older than", () => {
    assert.equal(destinationAfterSync(undefined, 3, sync({ version: 2 }), MERCHANT, HOUR, t1), undefined);
    assert.equal(destinationAfterSync(undefined, 3, sync({ version: 3 }), MERCHANT, HOUR, t1), undefined);
    assert.equal(destinationAfterSync(undefined, 3, sync({ version: 4 }), MERCHANT, HOUR, t1)?.version, 4, 'versions only grow: a newer one is a later life');
  });

  it('lets a removal take only an older endpoint away', () => {
    assert.equal(removalApplies(held({ version: 2 }), { id: 'dst_1', object: 'destination_endpoint', version: 3 }), true);
    assert.equal(removalApplies(held({ version: 3 }), { id: 'dst_1', object: 'destination_endpoint', version: 3 }), false);
    assert.equal(removalApplies(undefined, { id: 'dst_1', object: 'destination_endpoint', version: 3 }), false);
  });

  it("restarts the failure clock when active again, and keeps the engine's reason while off", () => {
    const goneByEngine: DestinationEndpoint = { ...held(), status: 'disabled', disabledReason: 'endpoint_gone' };
    const recorded = destinationAfterSync(goneByEngine, undefined, sync({ status: 'disabled', version: 2 }), MERCHANT, HOUR, t1)!;
    assert.deepEqual([recorded.status, recorded.disabledReason], ['disabled', 'endpoint_gone']);
    const reactivated = destinationAfterSync(recorded, undefined, sync({ status: 'active', version: 3 }), MERCHANT, HOUR, t1)!;
    assert.deepEqual([reactivated.status, reactivated.disabledReason, reactivated.enabledAt], ['enabled', null, t1]);
    assert.equal(becameSendable(recorded, reactivated), true);
    const again = destinationAfterSync(reactivated, undefined, sync({ status: 'active', version: 4, url: 'https://erp.example/v2' }), MERCHANT, HOUR, t1)!;
    assert.equal(becameSendable(reactivated, again), false, 'a change to an active destination schedules nothing new');
  });

  it('keeps a replaced secret signing for the overlap, as a subscription rotation does', () => {
    const rotated = destinationAfterSync(held(), undefined, sync({ secret: 'whsec_BBBB', version: 2, kind: 'http' }), MERCHANT, HOUR, t1)!;
    assert.deepEqual(
      [rotated.secret, rotated.previousSecret, rotated.previousSecretExpiresAt, rotated.secretRotatedAt, rotated.format],
      ['whsec_BBBB', 'whsec_AAAA', new Date(t1.getTime() + HOUR), t1, 'http'],
    );
    const unchanged = destinationAfterSync(rotated, undefined, sync({ secret: 'whsec_BBBB', version: 3 }), MERCHANT, HOUR, t1)!;
    assert.deepEqual([unchanged.previousSecret, unchanged.secretRotatedAt], ['whsec_AAAA', t1], 'the same secret again is no rotation');
  });
});
