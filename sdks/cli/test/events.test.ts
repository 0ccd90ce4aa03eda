import assert from 'node:assert/strict';
import Merx, { webhooks, WebhookVerificationError } from '@merx/sdk';
import { Cli, waitForOutput } from './support/cli.js';
import { WebhookReceiver } from './support/receiver.js';
import { eventually, merxServer, type MerxServer } from './support/server.js';

const exited = (child: import('node:child_process').ChildProcess) =>
  new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('close', (code) => resolve(code))));

describe('merx listen, trigger, events tail and webhooks deliveries tail', function () {
  this.timeout(180_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('listen --forward-to delivers a real event to a loopback receiver, signed so the SDK verifies it with the printed secret', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const receiver = await WebhookReceiver.start(204);
    const listen = cli.spawn(['listen', '--topics', 'products', '--forward-to', receiver.url, '--max-events', '2']);
    try {
      const banner = await waitForOutput(listen, /Ready![\s\S]*secret of this session: (whsec_\S+)/);
      const secret = /secret of this session: (whsec_\S+)/.exec(banner)![1]!;
      const triggered = await cli.json(['trigger', 'products.created']);
      const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
      await merx.sources.create({ name: 'Not a product', kind: 'custom' }); // filtered out by --topics
      await merx.products.update(triggered.objects.product, { title: 'Renamed' });
      assert.equal(await exited(listen), 0, 'listen stops after --max-events');
      assert.equal(receiver.deliveries.length, 2);
      const [created, updated] = receiver.deliveries.map((delivery) => webhooks.verify(delivery.body, delivery.headers as Record<string, string>, secret));
      assert.equal(created!.topic, 'products.created');
      assert.equal(created!.merchant_id, merchant.id);
      assert.equal((created!.data as { object: { id: string } }).object.id, triggered.objects.product);
      assert.equal(updated!.topic, 'products.updated');
      assert.equal(receiver.deliveries[0]!.headers['webhook-id'], created!.id);
      assert.throws(
        () => webhooks.verify(receiver.deliveries[0]!.body, receiver.deliveries[0]!.headers as Record<string, string>, 'whsec_d3JvbmcgIHNlY3JldA=='),
        WebhookVerificationError,
      );
    } finally {
      listen.kill();
      await receiver.close();
    }
  });

  it('listen prints each event as a JSON line when piped, and shows a receiver that refuses', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const plain = cli.spawn(['listen', '--topics', 'orders.created', '--max-events', '1']);
    let out = '';
    plain.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    await waitForOutput(plain, /Ready!/);
    assert.equal((await cli.run(['trigger', 'orders.created'])).code, 0);
    assert.equal(await exited(plain), 0);
    const event = JSON.parse(out.trim());
    assert.equal(event.topic, 'orders.created');
    assert.match(event.id, /^evt_/);

    const failing = await WebhookReceiver.start(500);
    const forwarding = cli.spawn(['listen', '--topics', 'products.created', '--forward-to', failing.url, '--max-events', '1']);
    let forwarded = '';
    forwarding.stdout!.on('data', (chunk: Buffer) => (forwarded += chunk.toString('utf8')));
    try {
      await waitForOutput(forwarding, /Ready!/);
      assert.equal((await cli.run(['trigger', 'products.created'])).code, 0);
      assert.equal(await exited(forwarding), 0);
      assert.equal(JSON.parse(forwarded.trim()).forwarded.status, 500);
    } finally {
      forwarding.kill();
      await failing.close();
    }
  });

  it('trigger makes each kind of event it knows, and refuses one it does not', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const names = [
      'products.deleted',
      'reviews.submitted',
      'campaign_spend.updated',
      'system_alerts.raised',
      'connections.updated',
      'rules.deleted',
      'api_keys.revoked',
      'webhooks.secret_rotated',
      'destinations.updated',
      'sources.deleted',
    ];
    const since = new Date(Date.now() - 1000).toISOString();
    for (const name of names) {
      const result = await cli.run(['trigger', name]);
      assert.equal(result.code, 0, `${name}: ${result.stderr}`);
    }
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    await eventually(async () => {
      const topics = new Set<string>();
      for await (const event of merx.events.list({ since, limit: 100 })) topics.add(event.topic);
      return names.every((name) => topics.has(name));
    }, 'every triggered event');
    const unknown = await cli.run(['trigger', 'products.exploded']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /products\.created/);
  });

  it('events tail --since replays the recent events, then follows new ones', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    await merx.products.create({ sku: 'TAIL-1', title: 'Before', price: '1.00', currency: 'USD' });
    const tail = cli.spawn(['events', 'tail', '--since', '10m', '--topics', 'products', '--max-events', '2']);
    let out = '';
    tail.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    await waitForOutput(tail, /products\.created/);
    await merx.products.create({ sku: 'TAIL-2', title: 'After', price: '1.00', currency: 'USD' });
    assert.equal(await exited(tail), 0);
    const skus = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).data.object.sku);
    assert.deepEqual(skus, ['TAIL-1', 'TAIL-2']);
    assert.equal((await cli.run(['events', 'tail', '--since', 'yesterday-ish'])).code, 2);
  });

  it('webhooks deliveries tail shows each delivery attempt of a real subscription', async () => {
    const merchant = await server.createMerchant();
    const cli = new Cli(server, merchant);
    const receiver = await WebhookReceiver.start(200);
    const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    const subscription = await merx.webhooks.subscriptions.create({ url: receiver.url, topics: ['products.created'] });
    const tail = cli.spawn(['webhooks', 'deliveries', 'tail', '--subscription-id', subscription.id, '--max-deliveries', '1']);
    let out = '';
    tail.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    try {
      await waitForOutput(tail, /Following webhook deliveries/);
      await merx.products.create({ sku: 'DELIVER-1', title: 'Delivered', price: '1.00', currency: 'USD' });
      assert.equal(await exited(tail), 0);
      const lines = out
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.equal(lines.at(-1).status, 'succeeded');
      assert.equal(lines.at(-1).subscription_id, subscription.id);
      assert.equal(receiver.deliveries.length, 1);
    } finally {
      tail.kill();
      await receiver.close();
    }
  });
});
