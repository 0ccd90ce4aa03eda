import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { canonicalJson } from '@merx/kit';
import { WebhookReceiver, type ReceivedWebhook } from '@merx/webhooks/testing';
import { Webhook } from 'standardwebhooks';
import { call, createMerchant, eventually, sharedStack, type ApiResponse, type Stack, type TestMerchant } from '../src/harness/index.js';

const order = (externalId: string, data: Record<string, unknown>, occurredAt = '2026-11-22T10:00:00.000Z') => ({
  type: 'order',
  external_id: externalId,
  occurred_at: occurredAt,
  data,
});

/** Verifies a destination request with a third party's Standard Webhooks library, as an ERP would. */
function verified(request: ReceivedWebhook, secret: string): unknown {
  return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
}

describe('record ingestion and routing to destinations', () => {
  let stack: Stack;
  let merchant: TestMerchant;
  const receivers: WebhookReceiver[] = [];

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });

  const api = (method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<ApiResponse> =>
    call(stack, method, path, { token: merchant.token, ...options });

  async function created(path: string, body: unknown): Promise<any> {
    const response = await api('POST', path, { body });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  async function receiver(): Promise<WebhookReceiver> {
    const started = await WebhookReceiver.start();
    receivers.push(started);
    return started;
  }

  const ingest = (sourceId: string, records: unknown[], headers: Record<string, string> = {}) =>
    api('POST', `/api/v1/sources/${sourceId}/records`, { body: { records }, headers });

  async function recordWithRoutes(sourceId: string, externalId: string, count: number): Promise<any> {
    const page = await eventually(
      () => api('GET', `/api/v1/sources/${sourceId}/records?external_id=${externalId}`),
      (response) => response.body.data[0]?.routes.length >= count,
      `routing of ${externalId}`,
    );
    return page.body.data[0];
  }

  describe('ingestion', () => {
    it('accepts each record once per (source, type, external_id), reports repeats and rejects bad ones without failing the batch', async () => {
      const source = await created('/api/v1/sources', { name: 'Shop', kind: 'storefront' });
      const first = await ingest(source.id, [
        order('A-1', { total: 120.5, currency: 'EUR' }),
        order('A-1', { total: 1, currency: 'EUR' }),
        { type: 'review', external_id: 'R-1', occurred_at: '2026-11-22T10:00:00+01:00', data: { stars: 5 } },
        { type: 'telegram', external_id: '', occurred_at: 'yesterday', data: 'text', extra: 1 },
        { type: 'alert', external_id: 'AL-1', occurred_at: '2026-11-22T10:00:00Z', data: { severity: 'critical' } },
        { type: 'campaign_spend', external_id: 'C-1', occurred_at: '2026-11-22T10:00:00Z', data: { spend: '12.30', currency: 'EUR' } },
      ]);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual([first.body.accepted, first.body.duplicates, first.body.rejected], [3, 1, 2]);
      assert.deepEqual(
        first.body.results.map((r: any) => r.status),
        ['accepted', 'duplicate', 'accepted', 'rejected', 'rejected', 'accepted'],
      );
      assert.equal(first.body.results[1].record_id, first.body.results[0].record_id, 'a repeat names the record it repeats');
      assert.deepEqual(first.body.results[3].errors.map((e: any) => e.field).sort(), ['data', 'external_id', 'extra', 'occurred_at', 'type']);
      assert.deepEqual(
        first.body.results[4].errors.map((e: any) => e.field),
        ['data.message'],
      );

      const again = await ingest(source.id, [order('A-1', { total: 999 }), order('A-2', { total: 5, currency: 'USD' })]);
      assert.deepEqual(
        again.body.results.map((r: any) => r.status),
        ['duplicate', 'accepted'],
      );
      assert.equal(again.body.results[0].event_id, first.body.results[0].event_id);

      const listed = await api('GET', `/api/v1/sources/${source.id}/records?limit=100`);
      assert.deepEqual(listed.body.data.map((r: any) => r.external_id).sort(), ['A-1', 'A-2', 'C-1', 'R-1']);
      const review = listed.body.data.find((r: any) => r.external_id === 'R-1');
      assert.equal(review.occurred_at, '2026-11-22T09:00:00.000Z', 'times are normalised to UTC');
      assert.deepEqual(
        (await api('GET', `/api/v1/sources/${source.id}/records?type=review`)).body.data.map((r: any) => r.id),
        [review.id],
      );

      const events = async (topic: string) => stack.events.forMerchant(merchant.merchantId).filter((e) => e.topic === topic);
      await stack.events.waitFor((e) => e.topic === 'orders.created' && e.data.object.external_id === 'A-2');
      await stack.events.waitFor((e) => e.topic === 'campaign_spend.updated' && e.merchant_id === merchant.merchantId);
      assert.deepEqual((await events('orders.created')).map((e) => e.data.object.external_id).sort(), ['A-1', 'A-2'], 'a duplicate emits nothing');
      assert.equal((await events('reviews.submitted')).length, 1);
      const a1 = (await events('orders.created')).find((e) => e.data.object.external_id === 'A-1')!;
      assert.equal(a1.id, first.body.results[0].event_id);
      assert.deepEqual(a1.data.object.data, { total: 120.5, currency: 'EUR' });
    });

    it('raises a system alert for an ingested alert record', async () => {
      const source = await created('/api/v1/sources', { name: 'Ads', kind: 'ads' });
      const result = await ingest(source.id, [
        { type: 'alert', external_id: 'AL-9', occurred_at: '2026-11-22T10:00:00Z', data: { message: 'Budget exhausted', severity: 'critical' } },
      ]);
      assert.equal(result.body.accepted, 1, result.text);
      const alert: any = await stack.events.waitFor((e) => e.topic === 'system_alerts.raised' && e.merchant_id === merchant.merchantId);
      assert.deepEqual(
        [alert.data.object.kind, alert.data.object.severity, alert.data.object.message, alert.data.object.source_id],
        ['source_error', 'critical', 'Budget exhausted', source.id],
      );
      assert.equal(alert.data.object.record.external_id, 'AL-9');
    });

    it('accepts a record once when the same batch is sent many times at once', async () => {
      const source = await created('/api/v1/sources', { name: 'Shop', kind: 'storefront' });
      const batch = Array.from({ length: 50 }, (_, i) => order(`RACE-${i}`, { total: i }));
      const answers = await Promise.all(Array.from({ length: 6 }, () => ingest(source.id, batch)));
      for (const answer of answers) assert.equal(answer.status, 200, answer.text);
      const accepted = answers.flatMap((answer) => answer.body.results.filter((r: any) => r.status === 'accepted').map((r: any) => r.external_id));
      assert.equal(accepted.length, 50, 'each record accepted by exactly one of the concurrent batches');
      assert.equal(new Set(accepted).size, 50);
      for (const answer of answers) assert.equal(answer.body.accepted + answer.body.duplicates, 50);
      const listed = await api('GET', `/api/v1/sources/${source.id}/records?limit=100`);
      assert.equal(listed.body.data.length, 50);
      await stack.events.waitFor((e) => e.topic === 'orders.created' && e.data.object.external_id === 'RACE-49');
      const emitted = stack.events.forMerchant(merchant.merchantId).filter((e) => e.topic === 'orders.created');
      await eventually(
        async () => stack.events.forMerchant(merchant.merchantId).filter((e) => e.topic === 'orders.created').length,
        (n) => n >= 50,
        'events of the batch',
      );
      assert.equal(new Set(emitted.map((e) => e.data.object.external_id)).size, emitted.length, 'no record emitted twice');
    });

    it('refuses records for a paused or disabled source (409), a malformed batch (422) and an unknown source (404), writing nothing', async () => {
      const source = await created('/api/v1/sources', { name: 'Shop', kind: 'storefront', status: 'paused' });
      const paused = await ingest(source.id, [order('P-1', {})]);
      assert.equal(paused.status, 409);
      await api('PATCH', `/api/v1/sources/${source.id}`, { body: { status: 'disabled' } });
      assert.equal((await ingest(source.id, [order('P-1', {})])).status, 409);
      await api('PATCH', `/api/v1/sources/${source.id}`, { body: { status: 'active' } });
      for (const body of [
        {},
        { records: [] },
        { records: 'many' },
        { records: Array.from({ length: 501 }, (_, i) => order(`X-${i}`, {})) },
        [order('X', {})],
      ]) {
        const refused = await api('POST', `/api/v1/sources/${source.id}/records`, { body });
        assert.equal(refused.status, 422, JSON.stringify(body).slice(0, 60));
      }
      const huge = await ingest(source.id, [order('BIG', { blob: 'x'.repeat(70 * 1024) })]);
      assert.equal(huge.body.results[0].status, 'rejected');
      assert.equal(huge.body.results[0].errors[0].code, 'too_large');
      assert.equal((await ingest('src_00000000000000000000000000', [order('N', {})])).status, 404);
      assert.equal((await api('GET', `/api/v1/sources/${source.id}/records`)).body.data.length, 0);
    });
  });

  describe('routing', () => {
    it("routes only the orders a rule forwards, signed, to the destination, and shows each record's routing", async () => {
      const erp = await receiver();
      const source = await created('/api/v1/sources', { name: 'Storefront', kind: 'storefront' });
      const destination = await created('/api/v1/destinations', { name: 'ERP', url: erp.url('/erp/orders') });
      const rule = await created('/api/v1/rules', {
        name: 'Large EUR orders',
        event_types: ['orders.created'],
        condition: 'data.total >= 100.0 && data.currency == "EUR"',
        action: 'forward',
      });
      const connection = await created('/api/v1/connections', {
        source_id: source.id,
        destination_id: destination.id,
        rule_ids: [rule.id],
        event_types: ['orders.created'],
      });

      const batch = await ingest(source.id, [
        order('O-1', { total: 250.0, currency: 'EUR' }),
        order('O-2', { total: 99.99, currency: 'EUR' }),
        order('O-3', { total: 500, currency: 'USD' }),
        order('O-4', { currency: 'EUR' }),
        order('O-5', { total: 100, currency: 'EUR' }),
      ]);
      assert.equal(batch.body.accepted, 5, batch.text);
      const arrived = await erp.waitUntil((received) => (received.length >= 2 ? received : undefined), 20_000, 'two routed orders');
      for (const request of arrived) {
        const payload = verified(request, destination.secret) as any;
        assert.equal(payload.topic, 'orders.created');
        assert.equal(payload.merchant_id, merchant.merchantId);
        assert.equal(request.path, '/erp/orders');
        const { hmac_sha256: claimed, ...fields } = JSON.parse(request.body);
        assert.equal(
          createHmac('sha256', Buffer.from(destination.secret.slice(6), 'base64'))
            .update(canonicalJson(fields))
            .digest('hex'),
          claimed,
        );
      }
      assert.deepEqual(arrived.map((r) => r.json.data.object.external_id).sort(), ['O-1', 'O-5']);

      const forwarded = await recordWithRoutes(source.id, 'O-1', 1);
      assert.deepEqual([forwarded.routes[0].outcome, forwarded.routes[0].rule_id, forwarded.routes[0].connection_id], ['routed', rule.id, connection.id]);
      const small = await recordWithRoutes(source.id, 'O-2', 1);
      assert.equal(small.routes[0].outcome, 'filtered');
      const missing = await recordWithRoutes(source.id, 'O-4', 1);
      assert.equal(missing.routes[0].outcome, 'filtered');
      assert.match(missing.routes[0].reason, /total/, 'a missing field makes the condition false, and says so');

      const deliveries = await eventually(
        () => api('GET', `/api/v1/webhooks/deliveries?destination_id=${destination.id}`),
        (response) => response.body.data.filter((d: any) => d.status === 'succeeded').length === 2,
        'two succeeded deliveries to the destination',
      );
      for (const delivery of deliveries.body.data) {
        assert.equal(delivery.destination_id, destination.id);
        assert.equal(delivery.subscription_id, null);
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(erp.received.length, 2, 'nothing else arrives');
    });

    it('applies transforms in order, drops what a drop rule matches, and sends an http destination the record alone', async () => {
      const erp = await receiver();
      const source = await created('/api/v1/sources', { name: 'Marketplace', kind: 'marketplace' });
      const destination = await created('/api/v1/destinations', { name: 'Import API', kind: 'http', url: erp.url('/import') });
      const dropTests = await created('/api/v1/rules', { name: 'No test orders', action: 'drop', condition: 'external_id.startsWith("TEST-")' });
      const reshape = await created('/api/v1/rules', {
        name: 'ERP shape',
        action: 'transform',
        transform: { keep: ['total', 'currency', 'customer'], remove: ['customer.email'], rename: { total: 'amount' }, set: { channel: 'marketplace' } },
      });
      await created('/api/v1/connections', { source_id: source.id, destination_id: destination.id, rule_ids: [dropTests.id, reshape.id] });

      await ingest(source.id, [
        order('TEST-1', { total: 1, currency: 'EUR' }),
        order('M-1', { total: 42.5, currency: 'EUR', customer: { name: 'Ada', email: 'ada@example.com' }, internal_notes: 'secret' }),
      ]);
      const request = await erp.waitFor(() => true, 20_000);
      verified(request, destination.secret);
      assert.deepEqual(JSON.parse(request.body), {
        id: request.json.id,
        object: 'record',
        type: 'order',
        source_id: source.id,
        external_id: 'M-1',
        occurred_at: '2026-11-22T10:00:00.000Z',
        data: { amount: 42.5, currency: 'EUR', customer: { name: 'Ada' }, channel: 'marketplace' },
        received_at: request.json.received_at,
      });
      const dropped = await recordWithRoutes(source.id, 'TEST-1', 1);
      assert.deepEqual([dropped.routes[0].outcome, dropped.routes[0].rule_id], ['dropped', dropTests.id]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(erp.received.length, 1, 'the dropped record never arrives');
    });

    it('does not let a slow rule stall routing: the record is not routed, says why, and the next one is', async () => {
      const erp = await receiver();
      const source = await created('/api/v1/sources', { name: 'Shop', kind: 'storefront' });
      const destination = await created('/api/v1/destinations', { name: 'ERP', url: erp.url('/slow') });
      const heavy = await created('/api/v1/rules', {
        name: 'Quadratic',
        action: 'forward',
        // Two nested loops that never stop early: 9 million pairs, far past the rule time limit
        // (a third level of nesting is refused when the rule is saved).
        condition: 'data.items.exists(x, data.items.exists(y, x + y < 0.0)) || size(data.items) < 10',
      });
      await created('/api/v1/connections', { source_id: source.id, destination_id: destination.id, rule_ids: [heavy.id] });
      const items = Array.from({ length: 3_000 }, (_, i) => i);
      const started = Date.now();
      await ingest(source.id, [order('SLOW-1', { items })]);
      const slow = await recordWithRoutes(source.id, 'SLOW-1', 1);
      assert.equal(slow.routes[0].outcome, 'filtered');
      assert.match(slow.routes[0].reason, /exceeded/);
      await ingest(source.id, [order('FAST-1', { items: [1, 2] })]);
      const request = await erp.waitFor(() => true, 20_000);
      assert.equal(request.json.data.object.external_id, 'FAST-1');
      assert.ok(Date.now() - started < 15_000, 'routing went on');
    });

    it('routes nothing through a paused connection and holds deliveries to a paused destination until it is active', async () => {
      const live = await receiver();
      const later = await receiver();
      const source = await created('/api/v1/sources', { name: 'Shop', kind: 'storefront' });
      const always = await created('/api/v1/destinations', { name: 'Always on', url: live.url('/now') });
      const paused = await created('/api/v1/destinations', { name: 'ERP', url: later.url('/later'), status: 'paused' });
      const alwaysOn = await created('/api/v1/connections', { source_id: source.id, destination_id: always.id });
      const toPaused = await created('/api/v1/connections', { source_id: source.id, destination_id: paused.id, status: 'paused' });

      await ingest(source.id, [order('LATE-0', { total: 1 })]);
      // The always-on connection proves routing ran; the paused one left no trace.
      const first = await recordWithRoutes(source.id, 'LATE-0', 1);
      assert.deepEqual(
        first.routes.map((route: any) => route.connection_id),
        [alwaysOn.id],
      );

      await api('PATCH', `/api/v1/connections/${toPaused.id}`, { body: { status: 'active' } });
      await ingest(source.id, [order('LATE-1', { total: 1 })]);
      const second = await recordWithRoutes(source.id, 'LATE-1', 2);
      assert.ok(second.routes.every((route: any) => route.outcome === 'routed'));
      await live.waitUntil((received) => (received.length >= 2 ? true : undefined), 20_000, 'both records at the active destination');
      const waiting = await eventually(
        () => api('GET', `/api/v1/webhooks/deliveries?destination_id=${paused.id}`),
        (response) => response.body.data.length === 1,
        'the delivery held for the paused destination',
      );
      assert.deepEqual([waiting.body.data[0].status, waiting.body.data[0].attempt_count], ['pending', 0]);
      assert.equal(later.received.length, 0, 'a paused destination receives nothing');

      await api('PATCH', `/api/v1/destinations/${paused.id}`, { body: { status: 'active' } });
      const request = await later.waitFor(() => true, 20_000);
      assert.equal(request.json.data.object.external_id, 'LATE-1');
      verified(request, paused.secret);
    });

    it("rotates a destination's secret: for the overlap every delivery verifies with either secret", async () => {
      const erp = await receiver();
      const source = await created('/api/v1/sources', { name: 'Shop', kind: 'storefront' });
      const destination = await created('/api/v1/destinations', { name: 'ERP', url: erp.url('/erp') });
      await created('/api/v1/connections', { source_id: source.id, destination_id: destination.id });
      await ingest(source.id, [order('BEFORE', {})]);
      const before = await erp.waitFor((r) => r.json?.data?.object?.external_id === 'BEFORE', 20_000);
      verified(before, destination.secret);
      assert.equal(String(before.headers['webhook-signature']).split(' ').length, 1, 'one secret, one signature');

      const rotated = await api('POST', `/api/v1/destinations/${destination.id}/rotate-secret`, { headers: { 'idempotency-key': `rotate-${destination.id}` } });
      assert.equal(rotated.status, 200, rotated.text);
      assert.match(rotated.body.secret, /^whsec_/);
      assert.notEqual(rotated.body.secret, destination.secret);
      assert.equal(rotated.body.version, 2);
      assert.equal((await api('GET', `/api/v1/destinations/${destination.id}`)).body.secret, undefined, "shown in the rotation's answer only");

      // The delivery engine has the new secret moments later: from then on both sign every request.
      let round = 0;
      const after = await eventually(
        async () => {
          const externalId = `AFTER-${round++}`;
          await ingest(source.id, [order(externalId, {})]);
          return erp.waitFor((r) => r.json?.data?.object?.external_id === externalId, 20_000);
        },
        (request) => String(request.headers['webhook-signature']).split(' ').length === 2,
        'a delivery signed with both secrets',
      );
      const payload = verified(after, rotated.body.secret) as any;
      assert.equal(payload.topic, 'orders.created');
      verified(after, destination.secret);
      assert.throws(() => verified(after, `whsec_${Buffer.alloc(24, 7).toString('base64')}`), 'a third secret does not verify');
      const { hmac_sha256: claimed, ...fields } = JSON.parse(after.body);
      assert.equal(
        createHmac('sha256', Buffer.from(rotated.body.secret.slice(6), 'base64'))
          .update(canonicalJson(fields))
          .digest('hex'),
        claimed,
        'hmac_sha256 uses the new secret',
      );
    });

    it("keeps one merchant's records away from another merchant's connections", async () => {
      const erp = await receiver();
      const other = await createMerchant(stack);
      const theirSource = await call(stack, 'POST', '/api/v1/sources', { token: other.token, body: { name: 'Theirs', kind: 'storefront' } });
      const ourSource = await created('/api/v1/sources', { name: 'Ours', kind: 'storefront' });
      const destination = await created('/api/v1/destinations', { name: 'ERP', url: erp.url('/ours') });
      await created('/api/v1/connections', { source_id: ourSource.id, destination_id: destination.id });
      assert.equal(
        (await call(stack, 'POST', `/api/v1/sources/${ourSource.id}/records`, { token: other.token, body: { records: [order('X', {})] } })).status,
        404,
      );
      await call(stack, 'POST', `/api/v1/sources/${theirSource.body.id}/records`, { token: other.token, body: { records: [order('THEIRS-1', {})] } });
      await ingest(ourSource.id, [order('OURS-1', {})]);
      const request = await erp.waitFor(() => true, 20_000);
      assert.equal(request.json.data.object.external_id, 'OURS-1');
      assert.equal((await call(stack, 'GET', `/api/v1/sources/${ourSource.id}/records`, { token: other.token })).status, 404);
    });
  });
});
