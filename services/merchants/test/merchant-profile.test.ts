import assert from 'node:assert/strict';
import { buildEvent } from '@merx/kit';
import { databases, merchantObject, standingObject, useHarness } from './harness.js';

for (const { name, embedded } of databases) {
  describe(`merchant profile on ${name}`, function () {
    this.timeout(90_000);
    const harness = useHarness(embedded);

    it('answers 503 until merchants.created arrives, then the merchant with its ETag; a redelivery changes nothing', async () => {
      const api = await harness().merchant();
      const early = await api.get('/api/v1/merchant');
      assert.equal(early.status, 503, early.text);
      assert.equal((await api.patch('/api/v1/merchant', { name: 'Too soon' })).status, 503);

      const object = merchantObject(api.merchantId, { name: 'Acme GmbH' });
      const created = buildEvent('merchants.created', api.merchantId, { object });
      await harness().deliver(created);
      const known = await api.get('/api/v1/merchant');
      assert.equal(known.status, 200, known.text);
      assert.equal(known.headers.get('etag'), '"v1"');
      assert.deepEqual(known.body, object);

      await harness().deliver({ ...created, data: { object: { ...object, name: 'Replayed' } } });
      assert.equal((await api.get('/api/v1/merchant')).body.name, 'Acme GmbH', 'merchants.created is applied once');
      assert.deepEqual(await api.topics(), ['merchants.created', 'merchants.created'], 'the service publishes nothing of its own');
    });

    it('changes name, currency and time zone with If-Match and emits merchants.updated with previous', async () => {
      const api = await harness().merchant({ provision: true });
      const changes = { name: 'Acme Europe', default_currency: 'USD', timezone: 'America/New_York' };

      const stale = await api.patch('/api/v1/merchant', changes, { 'if-match': '"v7"' });
      assert.equal(stale.status, 412, stale.text);
      const updated = await api.patch('/api/v1/merchant', changes, { 'if-match': '"v1"' });
      assert.equal(updated.status, 200, updated.text);
      assert.equal(updated.headers.get('etag'), '"v2"');
      assert.deepEqual(
        {
          name: updated.body.name,
          default_currency: updated.body.default_currency,
          timezone: updated.body.timezone,
          version: updated.body.version,
          profile_version: updated.body.profile_version,
          standing_version: updated.body.standing_version,
        },
        { ...changes, version: 2, profile_version: 2, standing_version: 1 },
      );
      const unchanged = await api.patch('/api/v1/merchant', { name: 'Acme Europe' });
      assert.equal(unchanged.body.version, 2, 'repeating the current values is no change');

      const read = await api.get('/api/v1/merchant');
      assert.deepEqual(read.body, updated.body);
      const [event, ...more] = await api.events('merchants.updated');
      assert.equal(more.length, 0, 'one event for one change');
      assert.deepEqual(event!.data.object, updated.body);
      assert.deepEqual(event!.data.previous, { name: 'Acme Sandbox', default_currency: 'EUR', timezone: 'Europe/Berlin' });
      assert.deepEqual((await api.get('/api/v1/merchant')).body, updated.body, 'its own event, consumed back, changes nothing');
    });

    it('refuses mode, plan and status with 422 read_only, and bad values with their codes, changing nothing', async () => {
      const api = await harness().merchant({ provision: true });
      const standing = await api.patch('/api/v1/merchant', { mode: 'live', plan: 'scale', status: 'suspended', name: 'Sneaky' });
      assert.equal(standing.status, 422, standing.text);
      const codes = Object.fromEntries(standing.body.errors.map((error: { field: string; code: string }) => [error.field, error.code]));
      assert.deepEqual(codes, { mode: 'read_only', plan: 'read_only', status: 'read_only' });
      const invalid = await api.patch('/api/v1/merchant', { default_currency: 'eur', timezone: 'Mars/Olympus' });
      assert.equal(invalid.status, 422);
      // The currency's form is the schema's to judge, the time zone the domain's, once the structure holds.
      assert.deepEqual(
        invalid.body.errors.map((error: { code: string }) => error.code),
        ['invalid_currency'],
      );
      const badZone = await api.patch('/api/v1/merchant', { default_currency: 'EUR', timezone: 'Mars/Olympus' });
      assert.deepEqual(
        badZone.body.errors.map((error: { code: string }) => error.code),
        ['invalid_timezone'],
      );

      const read = await api.get('/api/v1/merchant');
      assert.deepEqual([read.body.name, read.body.mode, read.body.plan, read.body.version], ['Acme Sandbox', 'sandbox', 'sandbox', 1]);
      assert.deepEqual(await api.topics(), ['merchants.created']);
    });

    it("applies the operator's merchants.standing_changed to the standing, whole, and never to the profile", async () => {
      const api = await harness().merchant({ provision: true });
      assert.equal((await api.patch('/api/v1/merchant', { name: 'Named here' })).status, 200);
      await api.events();

      await harness().publish(
        api.merchantId,
        'merchants.standing_changed',
        standingObject(api.merchantId, { plan: 'scale', status: 'suspended', version: 2 }),
        { plan: 'sandbox', status: 'active' },
      );
      const read = await api.get('/api/v1/merchant');
      assert.equal(read.status, 200);
      assert.deepEqual(
        [read.body.plan, read.body.status, read.body.name, read.body.mode, read.body.profile_version, read.body.standing_version, read.body.version],
        ['scale', 'suspended', 'Named here', 'sandbox', 2, 2, 3],
      );
      assert.equal(read.headers.get('etag'), '"v3"');
      assert.deepEqual(await api.topics(), ['merchants.created', 'merchants.updated', 'merchants.standing_changed'], 'the standing change publishes nothing');
    });

    it('keeps the newer standing when two standing changes arrive out of order, and a redelivery changes nothing', async () => {
      const api = await harness().merchant({ provision: true });
      const suspended = buildEvent('merchants.standing_changed', api.merchantId, {
        object: standingObject(api.merchantId, { status: 'suspended', version: 2 }),
        previous: { status: 'active' },
      });
      const reactivated = buildEvent('merchants.standing_changed', api.merchantId, {
        object: standingObject(api.merchantId, { status: 'active', plan: 'scale', version: 3 }),
        previous: { status: 'suspended', plan: 'sandbox' },
      });
      await harness().deliver(reactivated);
      await harness().deliver(suspended);
      await harness().deliver(reactivated, 2);
      const read = await api.get('/api/v1/merchant');
      assert.deepEqual(
        [read.body.status, read.body.plan, read.body.standing_version, read.body.version],
        ['active', 'scale', 3, 3],
        'the late suspension does not undo the reactivation',
      );
    });

    it('creates the merchant from a standing change that overtook merchants.created, and merchants.created undoes neither half', async () => {
      const api = await harness().merchant();
      await harness().publish(api.merchantId, 'merchants.standing_changed', standingObject(api.merchantId, { plan: 'scale', version: 2 }), { plan: 'sandbox' });
      assert.equal((await api.get('/api/v1/merchant')).status, 503, 'a standing alone is no merchant to show');
      await harness().publish(api.merchantId, 'merchants.created', merchantObject(api.merchantId));
      const read = await api.get('/api/v1/merchant');
      assert.equal(read.status, 200, read.text);
      assert.deepEqual([read.body.plan, read.body.name, read.body.version], ['scale', 'Acme Sandbox', 2], 'the older merchants.created does not undo the plan');
    });

    it('never lets a profile event change the standing: neither its own echo nor a profile from elsewhere', async () => {
      const api = await harness().merchant({ provision: true });
      // The merchant renames (profile v2) while the operator re-plans (standing v2). The broker may
      // hand this service the operator's event first, then the echo of its own rename.
      await harness().publish(api.merchantId, 'merchants.standing_changed', standingObject(api.merchantId, { plan: 'scale', version: 2 }), { plan: 'sandbox' });
      const ownEcho = merchantObject(api.merchantId, { name: 'Renamed', plan: 'sandbox', status: 'suspended', version: 2, profile_version: 2 });
      await harness().publish(api.merchantId, 'merchants.updated', ownEcho, { name: 'Acme Sandbox' });
      const read = await api.get('/api/v1/merchant');
      assert.deepEqual(
        [read.body.plan, read.body.status, read.body.name],
        ['scale', 'active', 'Acme Sandbox'],
        'a profile event says nothing about the standing, and this service owns the profile',
      );
    });

    it('takes an operator change the release before announced as merchants.updated (in flight during an upgrade) as a standing', async () => {
      const api = await harness().merchant({ provision: true });
      const legacy = merchantObject(api.merchantId, { plan: 'standard', version: 4 });
      delete (legacy as Record<string, unknown>).profile_version;
      delete (legacy as Record<string, unknown>).standing_version;
      await harness().publish(api.merchantId, 'merchants.updated', legacy, { plan: 'sandbox' });
      const read = await api.get('/api/v1/merchant');
      assert.deepEqual([read.body.plan, read.body.standing_version, read.body.profile_version], ['standard', 4, 1]);
    });
  });
}
