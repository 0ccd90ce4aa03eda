import assert from 'node:assert/strict';
import { profileChangeOf } from './merchant.js';

const OBJECT = {
  id: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g',
  object: 'merchant',
  name: 'Renamed shop',
  mode: 'sandbox',
  plan: 'sandbox',
  default_currency: 'EUR',
  timezone: 'Europe/Berlin',
  status: 'active',
  version: 5,
  profile_version: 4,
  standing_version: 2,
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:04:05.123Z',
};

describe('merchant profile changes (merchants.updated)', () => {
  it('reads the profile, version and time of a change whose previous names a profile field', () => {
    for (const previous of [{ name: 'Shop' }, { default_currency: 'USD' }, { timezone: 'UTC' }, { name: 'Shop', status: 'active' }]) {
      assert.deepEqual(profileChangeOf({ object: OBJECT, previous }), {
        profile: { name: 'Renamed shop', defaultCurrency: 'EUR', timezone: 'Europe/Berlin' },
        version: 4,
        updatedAt: new Date('2026-11-22T10:04:05.123Z'),
      });
    }
  });

  it('reads the version of a change from before profile_version from its version (in flight during an upgrade)', () => {
    const { profile_version: _profileVersion, standing_version: _standingVersion, ...legacy } = OBJECT;
    assert.equal(profileChangeOf({ object: legacy, previous: { name: 'Shop' } })?.version, 5);
  });

  it("is no profile change when previous names only standing (oauth's own events) or nothing", () => {
    assert.equal(profileChangeOf({ object: OBJECT, previous: { status: 'active' } }), undefined);
    assert.equal(profileChangeOf({ object: OBJECT, previous: { plan: 'sandbox', mode: 'sandbox' } }), undefined);
    assert.equal(profileChangeOf({ object: OBJECT, previous: {} }), undefined);
    assert.equal(profileChangeOf({ object: OBJECT }), undefined);
  });

  it('refuses a profile change that does not hold together, naming what is wrong', () => {
    const bad = { ...OBJECT, name: '', default_currency: 'eur', timezone: 'Mars/Olympus', profile_version: 0, updated_at: 'yesterday' };
    assert.throws(
      () => profileChangeOf({ object: bad, previous: { name: 'Shop' } }),
      /unusable profile \(name, default_currency, timezone, profile_version, updated_at\)/,
    );
  });
});
