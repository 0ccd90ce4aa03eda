import assert from 'node:assert/strict';
import Merx, { MerxOperator, NotFoundError, OPERATIONS, type WebhookDeadLetter } from '@merx/sdk';
import { FaultProxy } from './support/proxy.js';
import { WebhookReceiver } from './support/receiver.js';
import { eventually, merxServer, type Merchant, type MerxServer } from './support/server.js';

/** The naming rule, written independently of the generator: segments in camelCase, `admin` implied on the operator client. */
function nodePath(operationId: string, client: 'Merx' | 'MerxOperator'): string[] {
  return operationId
    .split('.')
    .filter((segment) => !(client === 'MerxOperator' && segment === 'admin'))
    .map((segment) => segment.replace(/[-_]([a-z0-9])/g, (_, next: string) => next.toUpperCase()));
}

function resolve(client: object, path: string[]): unknown {
  let target: unknown = client;
  for (const segment of path) target = (target as Record<string, unknown>)[segment];
  return target;
}

const templateRegex = (route: string) => new RegExp(`^${route.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}(\\?.*)?$`);

describe('every operation of the document', function () {
  this.timeout(300_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  it('is a method of Merx or MerxOperator, and the generated list is the served one', async () => {
    const document = (await (await fetch(`${server.baseUrl}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId?: string; security?: Array<Record<string, string[]>> }>>;
    };
    const merx = new Merx({ apiKey: 'mx_test_a_b', baseUrl: server.baseUrl });
    const operator = new MerxOperator({ operatorToken: 'unused', baseUrl: server.baseUrl });
    const served: string[] = [];
    for (const [route, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!['get', 'put', 'post', 'patch', 'delete'].includes(method) || !operation.operationId) continue;
        const client = (operation.security ?? []).some((requirement) => 'operator' in requirement) ? 'MerxOperator' : 'Merx';
        served.push(`${operation.operationId} ${method.toUpperCase()} ${route} ${client} ${nodePath(operation.operationId, client).join('.')}`);
        const target = resolve(client === 'Merx' ? merx : operator, nodePath(operation.operationId, client));
        assert.equal(typeof target, 'function', `${client}.${nodePath(operation.operationId, client).join('.')} for ${operation.operationId}`);
      }
    }
    const generated = OPERATIONS.map((operation) => `${operation.operationId} ${operation.method} ${operation.path} ${operation.client} ${operation.call}`);
    for (const operation of OPERATIONS)
      assert.deepEqual(
        operation.pathParams,
        [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]),
        operation.operationId,
      );
    assert.deepEqual([...generated].sort(), served.sort(), 'regenerate the SDK: npm run generate -w @merx/sdk');
  });

  it('a tour calls each one against the real server, and the proxy saw every one', async () => {
    const proxy = await FaultProxy.start(server.baseUrl);
    const receiver = await WebhookReceiver.start();
    const failing = await WebhookReceiver.start(500);
    try {
      const merchant = await server.createMerchant();
      const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: proxy.url });
      const operator = new MerxOperator({ operatorToken: server.operatorToken, baseUrl: proxy.url });
      await tour(merx, operator, merchant, receiver, failing);
    } finally {
      await Promise.all([proxy.close(), receiver.close(), failing.close()]);
    }
    const seen = proxy.seen();
    const missing = OPERATIONS.filter(
      (operation) => !seen.some((request) => request.method === operation.method && templateRegex(operation.path).test(request.path)),
    );
    assert.deepEqual(
      missing.map((operation) => operation.operationId),
      [],
      'operations the tour did not reach',
    );
  });
});

async function tour(merx: Merx, operator: MerxOperator, merchant: Merchant, receiver: WebhookReceiver, failing: WebhookReceiver): Promise<void> {
  // Platform documents and health: no token needed.
  assert.match((await merx.openapi.retrieve()).openapi, /^3\.1/);
  assert.ok((await merx.oauth.jwks()).keys[0]?.kid);
  assert.equal((await merx.health.retrieve()).status, 'ok');
  assert.equal((await merx.readiness.retrieve()).status, 'ready');
  const clientId = merchant.apiKey.slice(0, merchant.apiKey.lastIndexOf('_'));
  const token = await merx.oauth.token(
    { grant_type: 'client_credentials' },
    { headers: { Authorization: `Basic ${Buffer.from(`${clientId}:${merchant.apiKey}`).toString('base64')}` } },
  );
  assert.equal(token.token_type.toLowerCase(), 'bearer');

  // Products.
  const product = await merx.products.create({ sku: 'TOUR-1', title: 'Tour', price: '3.00', currency: 'USD' });
  assert.equal((await merx.products.retrieve(product.id)).id, product.id);
  assert.deepEqual(
    (await merx.products.list({ limit: 10 })).data.map((item) => item.id),
    [product.id],
  );
  const updated = await merx.products.update(product.id, { title: 'Tour 2' }, { ifMatch: product.lastResponse.etag! });
  assert.equal(updated.version, 2);

  // The merchant's profile.
  const profile = await merx.merchant.retrieve();
  const changed = await merx.merchant.update({ name: 'Tour merchant' }, { ifMatch: profile.lastResponse.etag! });
  assert.equal(changed.name, 'Tour merchant');

  // API keys.
  const key = await merx.apiKeys.create({ name: 'Tour key', scopes: ['products:read'] });
  assert.ok(key.secret.startsWith('mx_test_'));
  assert.equal((await merx.apiKeys.retrieve(key.id)).name, 'Tour key');
  assert.ok((await merx.apiKeys.list()).data.some((item) => item.id === key.id));
  await merx.apiKeys.revoke(key.id);

  // Configuration: source, destination, rule, connection, records.
  const source = await merx.sources.create({ name: 'Shop', kind: 'storefront', settings: { domain: 'shop.example' } });
  const destination = await merx.destinations.create({ name: 'ERP', url: receiver.url, kind: 'webhook' });
  assert.ok(destination.secret.startsWith('whsec_'));
  const rule = await merx.rules.create({ name: 'Large orders', condition: 'data.total >= 100.0', action: 'forward', event_types: ['orders.created'] });
  const connection = await merx.connections.create({ source_id: source.id, destination_id: destination.id, rule_ids: [rule.id] });
  assert.equal((await merx.sources.retrieve(source.id)).id, source.id);
  assert.equal((await merx.destinations.retrieve(destination.id)).id, destination.id);
  assert.equal((await merx.rules.retrieve(rule.id)).id, rule.id);
  assert.equal((await merx.connections.retrieve(connection.id)).id, connection.id);
  assert.ok((await merx.sources.list()).data.some((item) => item.id === source.id));
  assert.ok((await merx.destinations.list()).data.some((item) => item.id === destination.id));
  assert.ok((await merx.rules.list()).data.some((item) => item.id === rule.id));
  assert.ok((await merx.connections.list()).data.some((item) => item.id === connection.id));
  await merx.sources.update(source.id, { name: 'Shop EU' });
  await merx.destinations.update(destination.id, { name: 'ERP EU' });
  await merx.destinations.rotateSecret(destination.id);
  await merx.rules.update(rule.id, { condition: 'data.total >= 50.0' });
  await merx.connections.update(connection.id, { name: 'Shop to ERP' });
  const batch = await merx.sources.records.create(source.id, {
    records: [{ type: 'order', external_id: 'order-1', occurred_at: '2026-01-02T03:04:05.678Z', data: { total: 120.0, currency: 'EUR', channel: 'web' } }],
  });
  assert.equal(batch.results[0]?.status, 'accepted');
  assert.deepEqual(
    (await merx.sources.records.list(source.id)).data.map((record) => record.external_id),
    ['order-1'],
  );
  await merx.connections.delete(connection.id);
  await merx.rules.delete(rule.id);
  await merx.destinations.delete(destination.id);
  await merx.sources.delete(source.id);

  // Webhooks: a subscription whose endpoint fails, so a delivery dies and can be replayed.
  const subscription = await merx.webhooks.subscriptions.create({ url: failing.url, topics: ['products.updated'] });
  await merx.products.update(product.id, { title: 'Tour 3' });
  assert.equal((await merx.webhooks.subscriptions.retrieve(subscription.id)).url, failing.url);
  assert.ok((await merx.webhooks.subscriptions.list()).data.some((item) => item.id === subscription.id));
  const rotated = await merx.webhooks.subscriptions.rotateSecret(subscription.id);
  assert.notEqual(rotated.secret, subscription.secret);
  assert.equal((await merx.webhooks.subscriptions.stats.retrieve(subscription.id)).subscription_id, subscription.id);
  const dead = await eventually<WebhookDeadLetter>(
    async () => (await merx.webhooks.deadLetters.list({ subscription_id: subscription.id })).data[0],
    'a dead letter',
  );
  assert.equal((await merx.webhooks.deadLetters.retrieve(dead.id)).event_id, dead.event_id);
  const deliveries = (await merx.webhooks.deliveries.list({ subscription_id: subscription.id })).data;
  assert.ok((await merx.webhooks.deliveries.retrieve(deliveries[0]!.id)).attempts.length > 0);
  // The endpoint failed through its whole window, so the subscription may be switched off: on again.
  await merx.webhooks.subscriptions.update(subscription.id, { status: 'enabled', url: receiver.url });
  assert.equal((await merx.webhooks.deadLetters.replay(dead.id)).event_id, dead.event_id);
  assert.equal((await merx.webhooks.deadLetters.replayAll({ subscription_id: subscription.id })).object, 'dead_letter_replay');
  await merx.webhooks.subscriptions.delete(subscription.id);

  // Events and the audit log.
  const events = (await merx.events.list({ topic: 'products' })).data;
  assert.ok((await merx.events.retrieve(events[0]!.id)).topic.startsWith('products.'));
  const entries = await eventually(async () => {
    const page = await merx.audit.list({ resource_id: product.id });
    return page.data.length ? page.data : undefined;
  }, 'audit entries');
  assert.equal((await merx.audit.retrieve(entries[0]!.id)).id, entries[0]!.id);
  assert.equal((await merx.audit.verify()).valid, true);
  await merx.products.delete(product.id);

  // Installed apps: none here, so revoking a grant is a 404 from the real route.
  assert.deepEqual((await merx.apps.list()).data, []);
  await assert.rejects(merx.apps.uninstall('app_00000000000000000000000000'), NotFoundError);

  // The operator API, with the operator token.
  const provisioned = await operator.merchants.create({ name: 'Tour operator merchant', owner: { email: `op-${merchant.id}@sdk-tests.example` } });
  assert.ok(provisioned.api_key.secret.startsWith('mx_test_'));
  assert.equal((await operator.merchants.update(provisioned.merchant.id, { plan: 'standard' })).plan, 'standard');
  await operator.merchants.throttle.update(provisioned.merchant.id, { burst: { capacity: 300, refill_per_second: 150 } });
  assert.equal((await operator.merchants.throttle.retrieve(provisioned.merchant.id)).overrides.burst?.capacity, 300);
  const app = await operator.apps.create({ name: 'Tour app', redirect_uris: ['https://app.example/callback'], scopes: ['products:read'] });
  assert.ok(app.client_secret);
  assert.ok((await operator.signingKeys.rotate()).current_kid);
  const poison = await operator.bus.poison.list({ queue: 'catalog.events' });
  assert.ok(poison);
  assert.equal((await operator.bus.poison.replay({ queue: 'catalog.events' })).object, 'bus_poison_replay');

  // Last: the sandbox reset wipes this merchant's data.
  const reset = await merx.sandbox.reset({ seed: true });
  assert.equal((await merx.sandbox.resets.retrieve(reset.id)).id, reset.id);
}
