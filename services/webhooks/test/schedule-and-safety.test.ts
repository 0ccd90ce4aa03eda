import assert from 'node:assert/strict';
import { newId } from '@merx/kit';
import { ManualClock } from '@merx/kit/testing';
import { webhookSettingsFromEnv } from '../src/settings.js';
import { startHarness, testSettings, type Harness, type WebhooksClient } from './harness.js';
import { WebhookReceiver } from './receiver.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

describe('the full 72-hour retry schedule, on a clock the test moves', function () {
  this.timeout(60_000);

  it('retries at 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 20 h, then dead-letters within 72 hours', async () => {
    const clock = new ManualClock(new Date());
    // The production defaults: only the receiver's address is let through.
    const settings = webhookSettingsFromEnv({ MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS: '127.0.0.1' });
    const harness = await startHarness({ settings, now: clock.now, random: () => 0.5 });
    const receiver = await WebhookReceiver.start();
    receiver.answerWith(() => ({ status: 503, body: 'down for maintenance' }));
    try {
      const api = await harness.merchant();
      await api.subscribe(receiver.url(), ['products']);
      const event = await harness.publish(api.merchantId, 'products.created');
      const [listed] = await api.deliveriesOf(event.id);
      const start = clock.now().getTime();
      let delivery = await api.deliveryWhen(listed.id, (d) => d.attempt_count === 1);
      while (delivery.status === 'failing') {
        clock.set(new Date(delivery.next_attempt_at));
        harness.webhooks.worker.wake();
        const count = delivery.attempt_count;
        delivery = await api.deliveryWhen(listed.id, (d) => d.attempt_count === count + 1);
      }
      const offsets = delivery.attempts.map((a: any) => Date.parse(a.started_at) - start);
      const steps = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 20 * HOUR];
      const expected = steps.map((_, i) => steps.slice(0, i + 1).reduce((sum, step) => sum + step, 0));
      assert.deepEqual(offsets, expected);
      assert.equal(delivery.status, 'dead');
      assert.ok(offsets.at(-1)! <= 72 * HOUR && offsets.at(-1)! + 20 * HOUR > 72 * HOUR, 'the next step would leave the window');
      assert.equal(receiver.received.length, 10);
      assert.ok(delivery.attempts.every((a: any) => a.status_code === 503 && a.response_excerpt === 'down for maintenance'));
    } finally {
      await receiver.close();
      await harness.stop();
    }
  });
});

describe('webhook endpoints: what may be saved and where requests may go', function () {
  this.timeout(30_000);
  let harness: Harness;
  let api: WebhooksClient;
  let resolutions = 0;

  before(async () => {
    // `rebind.example` answers a public address the first time and loopback afterwards: a DNS
    // rebinding attack, caught when the connection is made.
    harness = await startHarness({
      settings: testSettings(),
      resolver: async (hostname) => {
        if (hostname === 'rebind.example') return [{ address: resolutions++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
        if (hostname === 'intranet.example') return [{ address: '10.1.2.3', family: 4 }];
        const dns = await import('node:dns');
        return dns.promises.lookup(hostname, { all: true });
      },
    });
  });
  after(async () => {
    await harness.stop();
  });
  beforeEach(async () => {
    api = await harness.merchant();
  });

  async function refusedUrl(url: string, client = api): Promise<{ code: string; message: string }> {
    const response = await client.post('/api/v1/webhooks/subscriptions', { url, topics: ['*'] });
    assert.equal(response.status, 422, response.text);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    const error = response.body.errors.find((e: any) => e.field === 'url');
    assert.ok(error, response.text);
    return error;
  }

  it('refuses private, loopback, link-local and CGNAT addresses, by literal or by name', async () => {
    const cases: Array<[string, RegExp]> = [
      ['http://localhost:8080/hooks', /127\.0\.0\.1|::1.*loopback/],
      ['http://10.0.0.7/hooks', /private/],
      ['http://192.168.1.10/hooks', /private/],
      ['http://[::1]:9000/hooks', /loopback/],
      ['http://169.254.169.254/latest/meta-data', /link-local/],
      ['http://100.64.0.1/hooks', /100\.64\.0\.1/],
      ['http://intranet.example/hooks', /resolves to 10\.1\.2\.3/],
      ['http://0.0.0.0:80/', /0\.0\.0\.0/],
    ];
    for (const [url, message] of cases) {
      const error = await refusedUrl(url);
      assert.equal(error.code, 'private_address', url);
      assert.match(error.message, message, url);
    }
    assert.equal((await api.get('/api/v1/webhooks/subscriptions')).body.data.length, 0, 'nothing half-written');
  });

  it('holds live merchants to https and refuses malformed URLs with the reason', async () => {
    const live = await harness.merchant({ mode: 'live' });
    assert.equal((await refusedUrl('http://hooks.example.com/merx', live)).code, 'https_required');
    assert.equal((await refusedUrl('ftp://hooks.example.com/')).code, 'invalid_url');
    assert.equal((await refusedUrl('https://user:pw@hooks.example.com/')).code, 'credentials_in_url');
    assert.equal((await refusedUrl(`https://hooks.example.com/${'a'.repeat(2100)}`)).code, 'too_long');
  });

  it('reports every structural error of a bad body at once, then the address policy once the structure holds', async () => {
    const response = await api.post('/api/v1/webhooks/subscriptions', {
      url: 'http://localhost/',
      topics: ['orders', 'nope.never', 7],
      description: 5,
      status: 'paused',
      secret: 'whsec_x',
    });
    assert.equal(response.status, 422);
    assert.deepEqual(response.body.errors.map((e: any) => `${e.field}:${e.code}`).sort(), [
      'description:invalid_type',
      'secret:unknown_field',
      'status:invalid_value',
      'topics[1]:unknown_topic',
      'topics[2]:unknown_topic',
    ]);
    // The address policy (it resolves the host) is judged only for a body whose structure holds.
    const wellFormed = await api.post('/api/v1/webhooks/subscriptions', { url: 'http://localhost/', topics: ['orders'] });
    assert.deepEqual(
      wellFormed.body.errors.map((e: any) => `${e.field}:${e.code}`),
      ['url:private_address'],
    );
    for (const body of [undefined, [], 'text', { topics: [] }]) {
      const bad = await api.request('POST', '/api/v1/webhooks/subscriptions', body);
      assert.ok([400, 422].includes(bad.status), `${JSON.stringify(body)} → ${bad.status}`);
    }
  });

  it('checks the address again at every connection: a name that rebinds to loopback is blocked, not sent', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const url = `http://rebind.example:${receiver.port}/hooks`;
      const saved = await api.post('/api/v1/webhooks/subscriptions', { url, topics: ['products'] });
      assert.equal(saved.status, 201, 'at save time the name resolved to a public address');
      const event = await harness.publish(api.merchantId, 'products.created');
      const [listed] = await api.deliveriesOf(event.id);
      const delivery = await api.deliveryWhen(listed.id, (d) => d.attempt_count >= 1);
      assert.equal(delivery.attempts[0].error, 'blocked');
      assert.equal(delivery.attempts[0].status_code, null);
      assert.equal(receiver.received.length, 0, 'nothing reached the loopback receiver');
    } finally {
      await receiver.close();
    }
  });
});

describe('a worker that stops mid-delivery', function () {
  this.timeout(30_000);

  it('has its claims retried by the living: the interrupted attempt is kept, the delivery completes', async () => {
    const harness = await startHarness();
    const receiver = await WebhookReceiver.start();
    try {
      const api = await harness.merchant();
      const subscription = await api.subscribe(receiver.url(), ['products']);
      const event = await harness.publish(api.merchantId, 'products.created');
      await receiver.waitFor((r) => r.headers['webhook-id'] === event.id);
      const [first] = await api.deliveriesOf(event.id);
      await api.deliveryWhen(first.id, (d) => d.status === 'succeeded');
      // The state a SIGKILL leaves: a delivery claimed by a worker whose heartbeat stopped.
      const claimedAt = new Date(Date.now() - 5_000);
      const deliveryId = newId('del');
      await harness.db.query(`INSERT INTO webhooks.workers (id, heartbeat_at) VALUES ('wkr_gone', $1)`, [new Date(Date.now() - 60_000)]);
      await harness.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO webhooks.deliveries (merchant_id, id, event_id, topic, endpoint_kind, endpoint_id, status, next_attempt_at, created_at, updated_at)
           VALUES ($1, $2, $3, 'products.created', 'subscription', $4, 'pending', $5, $5, $5)`,
          [api.merchantId, deliveryId, event.id, subscription.id, claimedAt],
        );
        await tx.query(`INSERT INTO webhooks.claims (merchant_id, endpoint_id, delivery_id, worker_id, claimed_at) VALUES ($1, $2, $3, 'wkr_gone', $4)`, [
          api.merchantId,
          subscription.id,
          deliveryId,
          claimedAt,
        ]);
      });
      const delivery = await api.deliveryWhen(deliveryId, (d) => d.status === 'succeeded');
      assert.deepEqual(
        delivery.attempts.map((a: any) => [a.number, a.error]),
        [
          [1, 'interrupted'],
          [2, null],
        ],
      );
      assert.equal(delivery.attempts[0].started_at, claimedAt.toISOString());
      assert.equal(receiver.forEvent(event.id).length, 2);
    } finally {
      await receiver.close();
      await harness.stop();
    }
  });
});
