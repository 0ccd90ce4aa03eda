import assert from 'node:assert/strict';
import type { MerxEvent } from '@merx/kit';
import { testSecretKeys } from '@merx/kit/testing';
import { databases, useHarness } from './harness.js';

const publicTopics = (events: MerxEvent[]) => events.filter((event) => !event.topic.startsWith('internal.')).map((event) => event.topic);

for (const { name, embedded } of databases) {
  describe(`configuration resources on ${name}`, function () {
    this.timeout(30_000);
    const harness = useHarness(embedded);

    it('creates, reads, lists, updates with If-Match and deletes a source, with one event per change', async () => {
      const api = await harness().merchant();
      const created = await api.post('/api/v1/sources', { name: 'Shop', kind: 'storefront', settings: { region: 'eu' } }, { 'idempotency-key': 'src-1' });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.headers.get('etag'), '"v1"');
      const id = created.body.id;
      assert.equal(created.headers.get('location'), `/api/v1/sources/${id}`);
      assert.equal(
        (await api.post('/api/v1/sources', { name: 'Shop', kind: 'storefront', settings: { region: 'eu' } }, { 'idempotency-key': 'src-1' })).body.id,
        id,
      );
      assert.deepEqual((await api.get(`/api/v1/sources/${id}`)).body, created.body);
      assert.deepEqual(
        (await api.get('/api/v1/sources?status=active')).body.data.map((s: { id: string }) => s.id),
        [id],
      );

      assert.equal((await api.patch(`/api/v1/sources/${id}`, { name: 'Old' }, { 'if-match': '"v2"' })).status, 412);
      const updated = await api.patch(`/api/v1/sources/${id}`, { name: 'Main shop', status: 'paused' }, { 'if-match': '"v1"' });
      assert.equal(updated.status, 200, updated.text);
      assert.equal(updated.headers.get('etag'), '"v2"');
      assert.deepEqual([updated.body.name, updated.body.status, updated.body.version], ['Main shop', 'paused', 2]);
      assert.equal((await api.delete(`/api/v1/sources/${id}`, { 'if-match': '"v1"' })).status, 412);
      assert.equal((await api.get(`/api/v1/sources/${id}`)).body.version, 2, 'a refused delete leaves the source');
      assert.equal((await api.delete(`/api/v1/sources/${id}`, { 'if-match': '"v2"' })).status, 204);
      assert.equal((await api.get(`/api/v1/sources/${id}`)).status, 404);

      const events = await api.events();
      assert.deepEqual(
        events.map((event) => event.topic),
        ['sources.created', 'sources.updated', 'sources.deleted'],
      );
      assert.deepEqual(events[0]!.data.object, created.body);
      assert.deepEqual(events[1]!.data.object, updated.body);
      assert.deepEqual(events[1]!.data.previous, { name: 'Shop', status: 'active' });
      assert.deepEqual(events[2]!.data.object, updated.body);
    });

    it('shows a destination secret once, syncs it to the delivery engine on every write and never in public events', async () => {
      const api = await harness().merchant();
      const created = await api.post('/api/v1/destinations', { name: 'ERP', kind: 'http', url: 'https://erp.example.com/in' });
      assert.equal(created.status, 201, created.text);
      const { id, secret } = created.body;
      assert.match(secret, /^whsec_/);
      const read = await api.get(`/api/v1/destinations/${id}`);
      assert.equal(read.body.secret, undefined);
      assert.ok(!read.text.includes(secret));
      assert.ok(!(await api.get('/api/v1/destinations')).text.includes(secret));

      const updated = await api.patch(`/api/v1/destinations/${id}`, { url: 'https://erp.example.com/v2', status: 'paused' }, { 'if-match': '"v1"' });
      assert.equal(updated.status, 200, updated.text);
      assert.ok(!updated.text.includes(secret));
      assert.equal((await api.delete(`/api/v1/destinations/${id}`)).status, 204);

      const events = await api.events();
      assert.deepEqual(
        events.map((event) => event.topic),
        [
          'destinations.created',
          'internal.destination_synced',
          'destinations.updated',
          'internal.destination_synced',
          'destinations.deleted',
          'internal.destination_removed',
        ],
      );
      const synced = events.filter((event) => event.topic === 'internal.destination_synced').map((event) => event.data.object);
      for (const object of synced)
        assert.ok(String(object.secret).startsWith('sealed:v1:') && !JSON.stringify(object).includes('whsec_'), 'the secret crosses the bus sealed');
      const opened = synced.map((object) => ({
        ...object,
        secret: testSecretKeys().open(String(object.secret), { merchantId: api.merchantId, recordId: id }),
      }));
      assert.deepEqual(opened, [
        { id, object: 'destination_endpoint', kind: 'http', url: 'https://erp.example.com/in', status: 'active', secret, version: 1 },
        { id, object: 'destination_endpoint', kind: 'http', url: 'https://erp.example.com/v2', status: 'paused', secret, version: 2 },
      ]);
      const removed = events.find((event) => event.topic === 'internal.destination_removed')!;
      assert.deepEqual(removed.data.object, { id, object: 'destination_endpoint', version: 3 });
      const updateEvent = events.find((event) => event.topic === 'destinations.updated')!;
      assert.deepEqual(updateEvent.data.previous, { url: 'https://erp.example.com/in', status: 'active' }, 'pausing leaves disabled_reason null: no change');
      for (const event of events.filter((event) => !event.topic.startsWith('internal.'))) {
        assert.ok(!JSON.stringify(event).includes(secret), `${event.topic} carries the secret`);
        assert.equal((event.data.object as Record<string, unknown>).secret, undefined);
      }
    });

    it("rotates a destination's secret: shown once, synced with a new version, announced without it", async () => {
      const api = await harness().merchant();
      const created = await api.post('/api/v1/destinations', { name: 'ERP', url: 'https://erp.example.com/in' });
      const rotated = await api.post(`/api/v1/destinations/${created.body.id}/rotate-secret`, undefined, { 'idempotency-key': 'rotate-1' });
      assert.equal(rotated.status, 200, rotated.text);
      assert.match(rotated.body.secret, /^whsec_/);
      assert.notEqual(rotated.body.secret, created.body.secret);
      assert.equal(rotated.body.version, 2);
      assert.equal(rotated.headers.get('etag'), '"v2"');
      const replayed = await api.post(`/api/v1/destinations/${created.body.id}/rotate-secret`, undefined, { 'idempotency-key': 'rotate-1' });
      assert.equal(replayed.body.secret, rotated.body.secret, 'a repeated Idempotency-Key replays the first answer, rotating once');
      assert.ok(!(await api.get(`/api/v1/destinations/${created.body.id}`)).text.includes(rotated.body.secret));

      const events = await api.events();
      assert.deepEqual(
        events.map((event) => event.topic),
        ['destinations.created', 'internal.destination_synced', 'destinations.updated', 'internal.destination_synced'],
      );
      // Both syncs carry the secret sealed (a fresh IV each time): compared once opened.
      const opened = (object: Record<string, unknown>) => ({
        ...object,
        secret: testSecretKeys().open(String(object.secret), { merchantId: api.merchantId, recordId: created.body.id }),
      });
      assert.deepEqual(opened(events[3]!.data.object), { ...opened(events[1]!.data.object), secret: rotated.body.secret, version: 2 });
      assert.ok(String(events[3]!.data.object.secret).startsWith('sealed:'), 'the rotated secret crosses the bus sealed');
      assert.deepEqual(events[2]!.data.previous, {});
      assert.ok(!JSON.stringify(events[2]).includes('whsec_'), 'the public event never carries a secret');

      assert.equal((await api.post('/api/v1/destinations/dst_01jd3k7q8m2x4v6b9c0d1e2f3g/rotate-secret')).status, 404);
      const other = await harness().merchant();
      assert.equal((await other.post(`/api/v1/destinations/${created.body.id}/rotate-secret`)).status, 404, "another merchant's destination is not found");
    });

    it('holds destination URLs to the delivery engine policy: https for live merchants, never a private address', async () => {
      const live = await harness().merchant({ mode: 'live' });
      const sandbox = await harness().merchant();
      const plain = await live.post('/api/v1/destinations', { name: 'ERP', url: 'http://erp.example.com/in' });
      assert.equal(plain.status, 422, plain.text);
      assert.deepEqual(
        plain.body.errors.map((e: { field: string }) => e.field),
        ['url'],
      );
      const internal = await sandbox.post('/api/v1/destinations', { name: 'ERP', url: 'http://10.1.2.3/in' });
      assert.equal(internal.status, 422, internal.text);
      const destination = await sandbox.destination({ url: 'http://erp.example.com/in' });
      assert.equal((await sandbox.patch(`/api/v1/destinations/${destination.id}`, { url: 'http://127.0.0.1:8080/' })).status, 422);
      assert.equal((await sandbox.get(`/api/v1/destinations/${destination.id}`)).body.url, 'http://erp.example.com/in');
      assert.deepEqual(await live.topics(), []);
      assert.deepEqual(await sandbox.topics(), ['destinations.created', 'internal.destination_synced']);
    });

    it('refuses to delete a source, destination or rule a connection uses (409) until the connection goes', async () => {
      const api = await harness().merchant();
      const source = await api.source();
      const destination = await api.destination();
      const rule = await api.rule({ action: 'forward', condition: 'data.total > 1.0' });
      const connection = await api.connection({ source_id: source.id, destination_id: destination.id, rule_ids: [rule.id], event_types: ['orders.created'] });
      assert.deepEqual([connection.status, connection.version, connection.rule_ids], ['active', 1, [rule.id]]);

      for (const path of [`/api/v1/sources/${source.id}`, `/api/v1/destinations/${destination.id}`, `/api/v1/rules/${rule.id}`]) {
        const refused = await api.delete(path);
        assert.equal(refused.status, 409, `${path}: ${refused.text}`);
        assert.match(refused.body.detail, new RegExp(connection.id));
        assert.equal((await api.get(path)).status, 200, `${path} is still there`);
      }
      const renamed = await api.patch(`/api/v1/connections/${connection.id}`, { name: 'Orders to ERP', rule_ids: [] }, { 'if-match': '"v1"' });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal((await api.delete(`/api/v1/rules/${rule.id}`)).status, 204, 'a rule no connection uses any more can go');
      assert.equal((await api.delete(`/api/v1/connections/${connection.id}`, { 'if-match': '"v2"' })).status, 204);
      assert.equal((await api.delete(`/api/v1/sources/${source.id}`)).status, 204);
      assert.equal((await api.delete(`/api/v1/destinations/${destination.id}`)).status, 204);

      assert.deepEqual(publicTopics(await api.events()), [
        'sources.created',
        'destinations.created',
        'rules.created',
        'connections.created',
        'connections.updated',
        'rules.deleted',
        'connections.deleted',
        'sources.deleted',
        'destinations.deleted',
      ]);
      const update = (await api.events('connections.updated'))[0]!;
      assert.deepEqual(update.data.previous, { name: null, rule_ids: [rule.id] });
    });

    it('never lets a connection and the delete of its rule both succeed when they race', async () => {
      const api = await harness().merchant();
      const [source, destination] = [await api.source(), await api.destination()];
      for (let round = 0; round < 5; round++) {
        const rule = await api.rule({ action: 'forward' });
        const [connect, remove] = await Promise.all([
          api.post('/api/v1/connections', { source_id: source.id, destination_id: destination.id, rule_ids: [rule.id] }),
          api.delete(`/api/v1/rules/${rule.id}`),
        ]);
        const outcome = `${connect.status}/${remove.status}`;
        assert.ok(outcome === '201/409' || outcome === '422/204', `round ${round}: connection ${connect.status}, delete ${remove.status}`);
        if (connect.status === 201) assert.equal((await api.get(`/api/v1/rules/${rule.id}`)).status, 200);
      }
    });

    it("answers 422 for another merchant's source, destination and rules in a connection, and 404 for its resources", async () => {
      const api = await harness().merchant();
      const stranger = await harness().merchant();
      const [source, destination] = [await api.source(), await api.destination()];
      const [theirSource, theirDestination, theirRule] = [await stranger.source(), await stranger.destination(), await stranger.rule({ action: 'drop' })];

      const refused = await api.post('/api/v1/connections', { source_id: theirSource.id, destination_id: theirDestination.id, rule_ids: [theirRule.id] });
      assert.equal(refused.status, 422, refused.text);
      assert.deepEqual(refused.body.errors.map((error: { field: string; code: string }) => `${error.field}:${error.code}`).sort(), [
        'destination_id:unknown_reference',
        'rule_ids[0]:unknown_reference',
        'source_id:unknown_reference',
      ]);
      const connection = await api.connection({ source_id: source.id, destination_id: destination.id });
      const moved = await api.patch(`/api/v1/connections/${connection.id}`, { destination_id: theirDestination.id });
      assert.equal(moved.status, 422, moved.text);
      assert.deepEqual(
        moved.body.errors.map((error: { field: string }) => error.field),
        ['destination_id'],
      );
      assert.equal((await api.get(`/api/v1/connections/${connection.id}`)).body.destination_id, destination.id);

      for (const path of [`/api/v1/sources/${theirSource.id}`, `/api/v1/destinations/${theirDestination.id}`, `/api/v1/rules/${theirRule.id}`]) {
        assert.equal((await api.get(path)).status, 404, path);
        assert.equal((await api.delete(path)).status, 404, path);
      }
      assert.equal((await api.get('/api/v1/connections')).body.data.length, 1);
      assert.deepEqual(publicTopics(await api.events()), ['sources.created', 'destinations.created', 'connections.created']);
    });

    it('disables a destination on internal.destination_disabled, with destinations.updated, once', async () => {
      const api = await harness().merchant();
      const stranger = await harness().merchant();
      const destination = await api.destination();
      await api.events();
      const message = { id: destination.id, object: 'destination_endpoint', reason: 'endpoint_gone', disabled_at: new Date().toISOString(), version: 1 };

      await harness().publish(stranger.merchantId, 'internal.destination_disabled', message);
      assert.equal(
        (await api.get(`/api/v1/destinations/${destination.id}`)).body.status,
        'active',
        "another merchant's message does not reach this destination",
      );
      const event = await harness().publish(api.merchantId, 'internal.destination_disabled', message);
      const read = await api.get(`/api/v1/destinations/${destination.id}`);
      assert.deepEqual([read.body.status, read.body.disabled_reason, read.body.version], ['disabled', 'endpoint_gone', 2]);
      assert.equal(read.headers.get('etag'), '"v2"');
      await harness().deliver(event);

      const events = (await api.events()).filter((e) => e.topic !== 'internal.destination_disabled');
      assert.deepEqual(
        events.map((e) => e.topic),
        ['destinations.created', 'internal.destination_synced', 'destinations.updated', 'internal.destination_synced'],
      );
      assert.deepEqual(events[2]!.data.object, read.body);
      assert.deepEqual(events[2]!.data.previous, { status: 'active', disabled_reason: null });
      assert.deepEqual([events[3]!.data.object.status, events[3]!.data.object.version], ['disabled', 2]);
      assert.deepEqual(
        (await stranger.events()).map((e) => e.topic),
        ['internal.destination_disabled'],
        'nothing follows a message naming a destination the merchant lacks',
      );

      const reactivated = await api.patch(`/api/v1/destinations/${destination.id}`, { status: 'active' });
      assert.deepEqual([reactivated.body.status, reactivated.body.disabled_reason], ['active', null]);
      await api.events();
      // A disable of the version the engine held before the merchant re-enabled it arrives late: the newer version stands.
      await harness().publish(api.merchantId, 'internal.destination_disabled', { ...message, reason: 'endpoint_failing', version: 2 });
      const afterLate = await api.get(`/api/v1/destinations/${destination.id}`);
      assert.deepEqual([afterLate.body.status, afterLate.body.version], ['active', 3]);
      // Fails today (see the report): the delivery engine's message names no actor, and the events
      // emitted in answer carry a context without one, which the event catalogue refuses.
      assert.deepEqual(harness().events.takeProblems(), [], 'every event the service emits matches the catalogue');
    });
  });
}
