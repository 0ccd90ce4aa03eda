import assert from 'node:assert/strict';
import { databases, order, useHarness } from './harness.js';

for (const { name, embedded } of databases) {
  describe(`record ingestion on ${name}`, function () {
    this.timeout(30_000);
    const harness = useHarness(embedded);

    it('answers accepted, duplicate or rejected per record and emits one event per accepted record', async () => {
      const api = await harness().merchant();
      const source = await api.source();
      const alert = { type: 'alert', external_id: 'alr-1', occurred_at: '2026-11-22T11:00:00+01:00', data: { message: 'Feed is late', severity: 'critical' } };
      const batch = await api.ingest(source.id, [
        order('o-1', { total: 12.5 }),
        order('o-2'),
        order('o-1'),
        { type: 'order', occurred_at: 'yesterday', data: {} },
        alert,
      ]);

      assert.deepEqual([batch.object, batch.source_id, batch.accepted, batch.duplicates, batch.rejected], ['record_batch', source.id, 3, 1, 1]);
      assert.deepEqual(
        batch.results.map((r: { status: string }) => r.status),
        ['accepted', 'accepted', 'duplicate', 'rejected', 'accepted'],
      );
      const [first, second, repeat, rejected, raised] = batch.results;
      assert.match(first.record_id, /^rec_/);
      assert.deepEqual([repeat.record_id, repeat.event_id], [first.record_id, first.event_id], 'a duplicate names the record it repeats');
      assert.deepEqual([rejected.record_id, rejected.event_id, rejected.type], [null, null, 'order']);
      assert.deepEqual(rejected.errors.map((e: { field: string; code: string }) => `${e.field}:${e.code}`).sort(), [
        'external_id:required',
        'occurred_at:invalid_timestamp',
      ]);

      const again = await api.ingest(source.id, [order('o-2', { total: 99 }), order('o-3')]);
      assert.deepEqual(
        again.results.map((r: { status: string }) => r.status),
        ['duplicate', 'accepted'],
      );
      assert.equal(again.results[0].record_id, second.record_id);

      const listed = await api.get(`/api/v1/sources/${source.id}/records?limit=10`);
      assert.equal(listed.status, 200, listed.text);
      const byExternalId = new Map(listed.body.data.map((record: { external_id: string }) => [record.external_id, record]));
      assert.deepEqual([...byExternalId.keys()].sort(), ['alr-1', 'o-1', 'o-2', 'o-3']);
      const o1 = byExternalId.get('o-1') as any;
      assert.deepEqual(
        [o1.id, o1.event_id, o1.data, o1.occurred_at],
        [first.record_id, first.event_id, { total: 12.5, currency: 'EUR' }, '2026-11-22T10:04:05.123Z'],
      );
      assert.equal((byExternalId.get('o-2') as any).data.total, 10, 'a duplicate changes nothing');
      assert.equal((await api.get(`/api/v1/sources/${source.id}/records?type=alert`)).body.data.length, 1);

      const events = await api.events();
      assert.deepEqual(
        events.map((e) => e.topic),
        ['sources.created', 'orders.created', 'orders.created', 'system_alerts.raised', 'orders.created'],
      );
      const [, e1, e2, eAlert, e3] = events;
      assert.deepEqual([e1!.id, e2!.id, eAlert!.id, e3!.id], [first.event_id, second.event_id, raised.event_id, again.results[1].event_id]);
      const { routes: _routes, event_id: _eventId, ...o1Object } = o1;
      assert.deepEqual(e1!.data.object, o1Object);
      const alertObject = eAlert!.data.object as any;
      assert.deepEqual(
        [alertObject.object, alertObject.kind, alertObject.severity, alertObject.message, alertObject.source_id],
        ['system_alert', 'source_error', 'critical', 'Feed is late', source.id],
      );
      assert.deepEqual([alertObject.record.id, alertObject.record.occurred_at], [raised.record_id, '2026-11-22T10:00:00.000Z']);
    });

    it('accepts each record once when identical batches race, and emits its event once', async () => {
      const api = await harness().merchant();
      const source = await api.source();
      const records = Array.from({ length: 20 }, (_, index) => order(`race-${index}`));
      const batches = await Promise.all(Array.from({ length: 4 }, () => api.ingest(source.id, records)));

      assert.equal(
        batches.reduce((sum, batch) => sum + batch.accepted, 0),
        20,
      );
      assert.equal(
        batches.reduce((sum, batch) => sum + batch.duplicates, 0),
        60,
      );
      for (let index = 0; index < 20; index++) {
        const results = batches.map((batch) => batch.results[index]);
        assert.equal(results.filter((r) => r.status === 'accepted').length, 1, `race-${index} accepted once`);
        assert.equal(new Set(results.map((r) => r.record_id)).size, 1, `race-${index}: every answer names the same record`);
      }
      const listed = await api.get(`/api/v1/sources/${source.id}/records?limit=100`);
      assert.equal(listed.body.data.length, 20);
      const events = await api.events('orders.created');
      assert.equal(events.length, 20);
      assert.deepEqual(new Set(events.map((e) => (e.data.object as { id: string }).id)), new Set(listed.body.data.map((r: { id: string }) => r.id)));
    });

    it('refuses a paused source (409), an unknown or foreign one (404) and a malformed batch (422), emitting nothing', async () => {
      const api = await harness().merchant();
      const stranger = await harness().merchant();
      const source = await api.source({ status: 'paused' });
      const theirs = await stranger.source();

      const paused = await api.post(`/api/v1/sources/${source.id}/records`, { records: [order('p-1')] });
      assert.equal(paused.status, 409, paused.text);
      assert.equal((await api.post(`/api/v1/sources/${theirs.id}/records`, { records: [order('p-1')] })).status, 404);
      assert.equal((await api.get(`/api/v1/sources/${theirs.id}/records`)).status, 404);
      assert.equal((await api.post('/api/v1/sources/src_00000000000000000000000000/records', { records: [order('p-1')] })).status, 404);
      const empty = await api.post(`/api/v1/sources/${source.id}/records`, { records: [] });
      assert.equal(empty.status, 422, empty.text);

      assert.equal((await api.patch(`/api/v1/sources/${source.id}`, { status: 'active' })).status, 200);
      const resumed = await api.ingest(source.id, [order('p-1')]);
      assert.equal(resumed.accepted, 1, 'the refused batches left no trace');
      assert.deepEqual(await api.topics(), ['sources.created', 'sources.updated', 'orders.created']);
      assert.equal((await stranger.get(`/api/v1/sources/${theirs.id}/records`)).body.data.length, 0);
    });
  });
}
