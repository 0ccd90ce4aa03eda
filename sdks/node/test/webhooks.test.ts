import assert from 'node:assert/strict';
import Merx, { WebhookVerificationError, webhooks, type ProductsCreatedEvent } from '@merx/sdk';
import { WebhookReceiver } from './support/receiver.js';
import { merxServer, type MerxServer } from './support/server.js';

describe('webhooks.verify: Standard Webhooks headers and the body hmac of a real delivery', function () {
  this.timeout(120_000);
  let server: MerxServer;
  let receiver: WebhookReceiver;
  let merx: Merx;
  let secret: string;
  let delivery: { body: Buffer; headers: Record<string, string> };

  before(async () => {
    server = await merxServer();
    receiver = await WebhookReceiver.start();
    const merchant = await server.createMerchant();
    merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
    const subscription = await merx.webhooks.subscriptions.create({ url: receiver.url, topics: ['products.created'] });
    secret = subscription.secret;
    await merx.products.create({ sku: 'HOOK-1', title: 'Hooked', price: '9.99', currency: 'USD' });
    const [received] = await receiver.waitFor('products.created');
    delivery = { body: received!.body, headers: received!.headers as Record<string, string> };
  });
  after(() => receiver.close());

  it('verifies a real delivery and returns the typed event', () => {
    const event = merx.webhooks.verify(delivery.body, delivery.headers, secret);
    assert.equal(event.topic, 'products.created');
    const created = event as ProductsCreatedEvent;
    assert.equal(created.data.object.sku, 'HOOK-1');
    // The raw text verifies as well as the bytes, and with the standalone helper that needs no client.
    assert.equal(webhooks.verify(delivery.body.toString('utf8'), new Headers(delivery.headers), secret).id, event.id);
  });

  it('refuses a tampered body, a wrong secret, a stale timestamp and missing headers', () => {
    const tampered = delivery.body.toString('utf8').replace('HOOK-1', 'HOOK-2');
    const refusals: Array<[string, () => unknown]> = [
      ['tampered body', () => webhooks.verify(tampered, delivery.headers, secret)],
      ['wrong secret', () => webhooks.verify(delivery.body, delivery.headers, `whsec_${Buffer.from('another key of 32 bytes........').toString('base64')}`)],
      ['missing headers', () => webhooks.verify(delivery.body, {}, secret)],
      ['stale timestamp', () => webhooks.verify(delivery.body, delivery.headers, secret, { tolerance: -1 })],
    ];
    for (const [what, attempt] of refusals) assert.throws(attempt, WebhookVerificationError, what);
  });

  it('the body hmac alone verifies the event after it was parsed and stored', () => {
    const stored = JSON.parse(delivery.body.toString('utf8')) as Record<string, unknown>;
    const reordered = Object.fromEntries(Object.entries(stored).reverse());
    assert.equal(webhooks.verifyBodyHmac(reordered, secret).topic, 'products.created');
    assert.throws(() => webhooks.verifyBodyHmac({ ...reordered, topic: 'products.deleted' }, secret), WebhookVerificationError);
  });

  it('a body signed by sign() verifies its headers: a receiver can be tested without a server', () => {
    const body = '{"hello":"world"}';
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = webhooks.sign(body, { secret, messageId: 'msg_1', timestamp });
    webhooks.verifySignature(body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature }, secret);
    assert.throws(
      () => webhooks.verifySignature(body, { 'webhook-id': 'msg_2', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature }, secret),
      WebhookVerificationError,
    );
  });

  it('during a secret rotation a receiver holding either secret verifies the delivery', async () => {
    const subscription = await merx.webhooks.subscriptions.create({ url: receiver.url, topics: ['products.deleted'] });
    const rotated = await merx.webhooks.subscriptions.rotateSecret(subscription.id);
    const product = await merx.products.create({ sku: 'HOOK-ROT', title: 'Rotated', price: '1.00', currency: 'USD' });
    await merx.products.delete(product.id);
    const [received] = await receiver.waitFor('products.deleted');
    const signatures = String(received!.headers['webhook-signature']).split(' ');
    assert.equal(signatures.length, 2, 'signed with the new and the old secret');
    for (const secrets of [rotated.secret, subscription.secret, [subscription.secret, rotated.secret]]) {
      assert.equal(webhooks.verify(received!.body, received!.headers as Record<string, string>, secrets).topic, 'products.deleted');
    }
    assert.equal(webhooks.verifyBodyHmac(received!.body, rotated.secret).topic, 'products.deleted');
    assert.throws(() => webhooks.verifyBodyHmac(received!.body, subscription.secret), WebhookVerificationError, 'the body hmac uses the new secret only');
  });
});
