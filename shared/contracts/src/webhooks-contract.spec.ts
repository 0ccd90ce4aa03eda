import assert from 'node:assert/strict';
import { createContractValidator, eventTopics, openApiDocument, resolvePointer, type OperationObject, type ParameterObject, type Reference } from './index.js';

const id = (prefix: string, tail = '01jd3k7q8m2x4v6b9c0d1e2f3g') => `${prefix}_${tail}`;
const at = '2026-11-22T10:04:05.123Z';
const later = '2026-11-22T10:05:06.456Z';
const requestId = id('req');
const subscriptionId = id('wh');
const deliveryId = id('del');
const eventId = id('evt');

const aSubscription = (overrides: Record<string, unknown> = {}) => ({
  id: subscriptionId,
  object: 'webhook_subscription',
  url: 'https://example.com/merx/webhooks',
  topics: ['orders', 'products.created', '*'],
  description: 'Order sync',
  status: 'enabled',
  disabled_reason: null,
  secret_rotated_at: null,
  previous_secret_expires_at: null,
  version: 1,
  created_at: at,
  updated_at: at,
  ...overrides,
});

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const aProduct = () => ({
  id: id('prod'),
  object: 'product',
  sku: 'TSHIRT-BLK-M',
  title: 'T-shirt',
  description: null,
  price: '19.99',
  currency: 'USD',
  status: 'active',
  inventory_quantity: 12,
  attributes: { color: 'black' },
  version: 1,
  created_at: at,
  updated_at: at,
});

/** The event members a webhook carries, without `hmac_sha256`. */
const aPayload = (overrides: Record<string, unknown> = {}) => ({
  id: eventId,
  topic: 'products.created',
  merchant_id: id('mch'),
  created_at: at,
  api_version: 'v1',
  data: { object: aProduct() },
  ...overrides,
});

const anEvent = (overrides: Record<string, unknown> = {}) => {
  const { id: eventIdentifier, ...rest } = aPayload(overrides);
  return { id: eventIdentifier, object: 'event', ...rest };
};

const anAttempt = (number: number, overrides: Record<string, unknown> = {}) => ({
  number,
  started_at: at,
  status_code: 500,
  duration_ms: 231,
  error: 'http',
  error_message: 'the endpoint answered 500',
  response_excerpt: '{"error":"boom"}',
  ...overrides,
});

const aDelivery = (overrides: Record<string, unknown> = {}) => ({
  id: deliveryId,
  object: 'webhook_delivery',
  event_id: eventId,
  topic: 'products.created',
  subscription_id: subscriptionId,
  destination_id: null,
  status: 'failing',
  attempt_count: 2,
  next_attempt_at: later,
  last_status_code: null,
  last_error: 'timeout',
  replay_of: null,
  replayed_by: null,
  created_at: at,
  updated_at: later,
  completed_at: null,
  ...overrides,
});

const aDeadLetter = (overrides: Record<string, unknown> = {}) => ({
  id: deliveryId,
  object: 'webhook_dead_letter',
  event_id: eventId,
  topic: 'products.created',
  subscription_id: subscriptionId,
  destination_id: null,
  payload: aPayload(),
  last_status_code: 503,
  last_error: 'http',
  attempt_count: 18,
  dead_at: later,
  created_at: at,
  ...overrides,
});

const someStats = (overrides: Record<string, unknown> = {}) => ({
  object: 'webhook_subscription_stats',
  subscription_id: subscriptionId,
  window_start: at,
  window_end: later,
  attempts: 40,
  succeeded: 38,
  failed: 2,
  success_rate: 0.95,
  latency_ms: { p50: 120, p99: 870.5 },
  deliveries: { pending: 1, failing: 2, dead: 0 },
  ...overrides,
});

const anAlert = (overrides: Record<string, unknown> = {}) => ({
  id: id('alr'),
  object: 'system_alert',
  kind: 'event_dead_lettered',
  severity: 'warning',
  message: 'A delivery of products.created to https://example.com/merx/webhooks gave up after 72 h.',
  subscription_id: subscriptionId,
  destination_id: null,
  delivery_id: deliveryId,
  event_id: eventId,
  source_id: null,
  record: null,
  created_at: at,
  ...overrides,
});

const envelope = (topic: string, data: Record<string, unknown>) => ({
  id: eventId,
  topic,
  merchant_id: id('mch'),
  created_at: at,
  api_version: 'v1',
  data,
  context: { request_id: requestId, actor: { type: 'api_key', id: id('key') } },
});

const json = { contentType: 'application/json' };
const list = (data: unknown[]) => ({ object: 'list', data, has_more: false, next_cursor: null });

describe('webhooks contract: the document', () => {
  const operations = createContractValidator().operations();
  const byId = new Map(operations.map((operation) => [operation.operationId, operation]));

  it('documents every webhooks and events operation, reads with webhooks:read and writes with webhooks:write', () => {
    const expected: Array<[string, string, string]> = [
      ['webhooks.subscriptions.create', 'POST', '/api/v1/webhooks/subscriptions'],
      ['webhooks.subscriptions.list', 'GET', '/api/v1/webhooks/subscriptions'],
      ['webhooks.subscriptions.retrieve', 'GET', '/api/v1/webhooks/subscriptions/{id}'],
      ['webhooks.subscriptions.update', 'PATCH', '/api/v1/webhooks/subscriptions/{id}'],
      ['webhooks.subscriptions.delete', 'DELETE', '/api/v1/webhooks/subscriptions/{id}'],
      ['webhooks.subscriptions.rotate_secret', 'POST', '/api/v1/webhooks/subscriptions/{id}/rotate-secret'],
      ['webhooks.subscriptions.stats.retrieve', 'GET', '/api/v1/webhooks/subscriptions/{id}/stats'],
      ['webhooks.deliveries.list', 'GET', '/api/v1/webhooks/deliveries'],
      ['webhooks.deliveries.retrieve', 'GET', '/api/v1/webhooks/deliveries/{id}'],
      ['webhooks.dead_letters.list', 'GET', '/api/v1/webhooks/dead-letters'],
      ['webhooks.dead_letters.retrieve', 'GET', '/api/v1/webhooks/dead-letters/{id}'],
      ['webhooks.dead_letters.replay', 'POST', '/api/v1/webhooks/dead-letters/{id}/replay'],
      ['webhooks.dead_letters.replay_all', 'POST', '/api/v1/webhooks/dead-letters/replay'],
      ['events.list', 'GET', '/api/v1/events'],
      ['events.retrieve', 'GET', '/api/v1/events/{id}'],
    ];
    for (const [operationId, method, pathTemplate] of expected) {
      const scope = method === 'GET' ? 'webhooks:read' : 'webhooks:write';
      assert.deepEqual(byId.get(operationId), { method, pathTemplate, operationId, scopes: [scope], security: 'oauth2' }, operationId);
    }
    const documented = operations.filter((operation) => /^\/api\/v1\/(webhooks|events)\b/.test(operation.pathTemplate));
    assert.equal(documented.length, expected.length, documented.map((operation) => operation.operationId).join(', '));
  });

  it('answers each operation with the statuses it can give', () => {
    const statuses = (path: string, method: 'get' | 'post' | 'patch' | 'delete') => Object.keys(openApiDocument.paths[path]![method]!.responses);
    // Every bearer operation may answer 422: a query parameter it does not declare is refused.
    // And 400: a path not in canonical form is refused at the edge, whatever the operation.
    const base = ['400', '401', '403', '422', '429', '500', '503'];
    const withBase = (...codes: string[]) => [...new Set([...codes, ...base])].sort();
    const subscriptions = '/api/v1/webhooks/subscriptions';
    assert.deepEqual(statuses(subscriptions, 'post'), withBase('201', '400', '409', '413', '415'));
    assert.deepEqual(statuses(`${subscriptions}/{id}`, 'patch'), withBase('200', '400', '404', '412', '413', '415'));
    assert.deepEqual(statuses(`${subscriptions}/{id}`, 'delete'), withBase('204', '404'));
    assert.deepEqual(statuses(`${subscriptions}/{id}/rotate-secret`, 'post'), withBase('200', '404', '409'));
    assert.deepEqual(statuses('/api/v1/webhooks/dead-letters/{id}/replay', 'post'), withBase('201', '404', '409'));
    assert.deepEqual(statuses('/api/v1/webhooks/dead-letters/replay', 'post'), withBase('202', '400', '409', '413', '415'));
    assert.deepEqual(statuses('/api/v1/events', 'get'), withBase('200', '400'));
  });

  it('takes the documented filters on every list and the conditional headers on writes', () => {
    const parameterNames = (path: string, method: 'get' | 'post' | 'patch') => {
      const operation: OperationObject = openApiDocument.paths[path]![method]!;
      return (operation.parameters ?? []).map((parameter) =>
        '$ref' in parameter ? (resolvePointer(openApiDocument, (parameter as Reference).$ref) as ParameterObject).name : parameter.name,
      );
    };
    assert.deepEqual(parameterNames('/api/v1/webhooks/subscriptions', 'get'), ['limit', 'cursor', 'status']);
    assert.deepEqual(parameterNames('/api/v1/webhooks/deliveries', 'get'), [
      'limit',
      'cursor',
      'subscription_id',
      'destination_id',
      'event_id',
      'topic',
      'status',
      'since',
      'until',
    ]);
    assert.deepEqual(parameterNames('/api/v1/webhooks/dead-letters', 'get'), [
      'limit',
      'cursor',
      'subscription_id',
      'destination_id',
      'topic',
      'since',
      'until',
    ]);
    assert.deepEqual(parameterNames('/api/v1/events', 'get'), ['limit', 'cursor', 'topic', 'since', 'until']);
    assert.deepEqual(parameterNames('/api/v1/webhooks/subscriptions', 'post'), ['Idempotency-Key']);
    assert.deepEqual(parameterNames('/api/v1/webhooks/subscriptions/{id}', 'patch'), ['If-Match']);
  });

  it('declares the webhooks and events tags, the first explaining how requests are signed', () => {
    const tags = new Map(openApiDocument.tags.map((tag) => [tag.name, tag.description]));
    for (const words of [/webhook-signature/, /hmac_sha256/, /RFC 8785/, /72 h/, /dead letter/]) assert.match(tags.get('webhooks') ?? '', words);
    assert.ok(tags.get('events'));
  });
});

describe('webhooks contract: responses', () => {
  const validator = createContractValidator();

  it('accepts a created subscription with its secret, ETag and Location, and refuses it without the secret', () => {
    const created = {
      method: 'POST',
      path: '/api/v1/webhooks/subscriptions',
      status: 201,
      ...json,
      headers: { 'X-Request-Id': requestId, ETag: '"v1"', Location: `/api/v1/webhooks/subscriptions/${subscriptionId}` },
    };
    assert.deepEqual(validator.validateResponse({ ...created, body: aSubscription({ secret }) }), []);
    assert.match(validator.validateResponse({ ...created, body: aSubscription() }).join('\n'), /required property 'secret'/);
    assert.match(
      validator.validateResponse({ ...created, body: aSubscription({ secret }), headers: { 'X-Request-Id': requestId, ETag: '"v1"' } }).join('\n'),
      /header Location is missing/,
    );
  });

  it('never shows the secret outside create and rotate', () => {
    const path = `/api/v1/webhooks/subscriptions/${subscriptionId}`;
    assert.deepEqual(validator.validateResponse({ method: 'GET', path, status: 200, ...json, body: aSubscription() }), []);
    assert.match(
      validator.validateResponse({ method: 'GET', path, status: 200, ...json, body: aSubscription({ secret }) }).join('\n'),
      /additional properties: secret/,
    );
    assert.match(
      validator
        .validateResponse({ method: 'GET', path: '/api/v1/webhooks/subscriptions', status: 200, ...json, body: list([aSubscription({ secret })]) })
        .join('\n'),
      /additional properties: secret/,
    );
    const rotated = aSubscription({ secret, secret_rotated_at: later, previous_secret_expires_at: '2026-11-23T10:05:06.456Z', version: 2 });
    assert.deepEqual(validator.validateResponse({ method: 'POST', path: `${path}/rotate-secret`, status: 200, ...json, body: rotated }), []);
  });

  it('ties disabled_reason to the status and rejects statuses and topics outside the enums', () => {
    const path = `/api/v1/webhooks/subscriptions/${subscriptionId}`;
    const check = (body: unknown) => validator.validateResponse({ method: 'PATCH', path, status: 200, ...json, body }).join('\n');
    assert.equal(check(aSubscription({ status: 'disabled', disabled_reason: 'endpoint_gone' })), '');
    assert.match(check(aSubscription({ status: 'paused' })), /status must be equal to one of the allowed values: "enabled", "disabled"/);
    assert.match(check(aSubscription({ status: 'disabled', disabled_reason: null })), /disabled_reason must be string/);
    assert.match(check(aSubscription({ disabled_reason: 'by_merchant' })), /disabled_reason must be equal to constant/);
    assert.match(check(aSubscription({ topics: ['orders.exploded'] })), /topics\/0 must be equal to one of the allowed values/);
  });

  it('accepts a delivery with its attempts only on the single GET', () => {
    const withAttempts = aDelivery({
      attempts: [anAttempt(1, { status_code: null, error: 'timeout', error_message: 'no answer within 15 s', response_excerpt: null }), anAttempt(2)],
    });
    const single = { method: 'GET', path: `/api/v1/webhooks/deliveries/${deliveryId}`, status: 200, ...json };
    assert.deepEqual(validator.validateResponse({ ...single, body: withAttempts }), []);
    assert.match(validator.validateResponse({ ...single, body: aDelivery() }).join('\n'), /required property 'attempts'/);
    const listed = { method: 'GET', path: '/api/v1/webhooks/deliveries?status=failing', status: 200, ...json };
    assert.deepEqual(validator.validateResponse({ ...listed, body: list([aDelivery()]) }), []);
    assert.match(validator.validateResponse({ ...listed, body: list([withAttempts]) }).join('\n'), /additional properties: attempts/);
  });

  it('rejects a delivery status, an error kind or an attempt outside the contract', () => {
    const single = { method: 'GET', path: `/api/v1/webhooks/deliveries/${deliveryId}`, status: 200, ...json };
    const check = (body: unknown) => validator.validateResponse({ ...single, body }).join('\n');
    assert.match(check(aDelivery({ status: 'retrying', attempts: [] })), /body\/status must be equal to one of the allowed values/);
    assert.match(check(aDelivery({ last_error: 'teapot', attempts: [] })), /body\/last_error must be equal to one of the allowed values/);
    assert.match(check(aDelivery({ attempts: [anAttempt(0)] })), /attempts\/0\/number must be >= 1/);
    assert.match(
      check(aDelivery({ attempts: [anAttempt(1, { response_excerpt: 'x'.repeat(4097) })] })),
      /response_excerpt must NOT have more than 4096 characters/,
    );
  });

  it('accepts a dead letter with the payload as sent, and refuses one carrying hmac_sha256', () => {
    const single = { method: 'GET', path: `/api/v1/webhooks/dead-letters/${deliveryId}`, status: 200, ...json };
    assert.deepEqual(validator.validateResponse({ ...single, body: aDeadLetter() }), []);
    assert.deepEqual(validator.validateResponse({ ...single, path: '/api/v1/webhooks/dead-letters', body: list([aDeadLetter()]) }), []);
    const signed = aDeadLetter({ payload: { ...aPayload(), hmac_sha256: 'ab'.repeat(32) } });
    assert.match(validator.validateResponse({ ...single, body: signed }).join('\n'), /body\/payload must NOT have additional properties: hmac_sha256/);
    const badData = aDeadLetter({ payload: aPayload({ data: { object: { ...aProduct(), price: 19.99 } } }) });
    assert.match(validator.validateResponse({ ...single, body: badData }).join('\n'), /payload\/data\/object\/price must be string/);
  });

  it('answers a single replay with the new delivery and its Location, a bulk replay with 202', () => {
    const replay = aDelivery({
      id: id('del', '01jd3k7q8m2x4v6b9c0d1e2zzz'),
      status: 'pending',
      attempt_count: 0,
      last_error: null,
      next_attempt_at: at,
      replay_of: deliveryId,
    });
    const single = {
      method: 'POST',
      path: `/api/v1/webhooks/dead-letters/${deliveryId}/replay`,
      status: 201,
      ...json,
      headers: { 'X-Request-Id': requestId, Location: `/api/v1/webhooks/deliveries/${replay.id}` },
    };
    assert.deepEqual(validator.validateResponse({ ...single, body: replay }), []);
    const bulk = { method: 'POST', path: '/api/v1/webhooks/dead-letters/replay', status: 202, ...json };
    assert.deepEqual(
      validator.validateResponse({ ...bulk, body: { object: 'dead_letter_replay', replayed: 1, delivery_ids: [replay.id], has_more: false } }),
      [],
    );
    assert.match(
      validator.validateResponse({ ...bulk, body: { object: 'dead_letter_replay', replayed: 1, delivery_ids: ['wh_1'], has_more: false } }).join('\n'),
      /delivery_ids\/0 must match pattern/,
    );
  });

  it('accepts stats and refuses a success rate above 1', () => {
    const stats = { method: 'GET', path: `/api/v1/webhooks/subscriptions/${subscriptionId}/stats`, status: 200, ...json };
    assert.deepEqual(validator.validateResponse({ ...stats, body: someStats() }), []);
    const idle = someStats({ attempts: 0, succeeded: 0, failed: 0, success_rate: null, latency_ms: { p50: null, p99: null } });
    assert.deepEqual(validator.validateResponse({ ...stats, body: idle }), []);
    assert.match(validator.validateResponse({ ...stats, body: someStats({ success_rate: 95 }) }).join('\n'), /success_rate must be <= 1/);
  });

  it('accepts an event and checks its data against the catalogue', () => {
    const single = { method: 'GET', path: `/api/v1/events/${eventId}`, status: 200, ...json };
    assert.deepEqual(validator.validateResponse({ ...single, body: anEvent() }), []);
    const updated = anEvent({ topic: 'products.updated', data: { object: aProduct(), previous: { price: '9.99' } } });
    assert.deepEqual(validator.validateResponse({ ...single, path: '/api/v1/events?topic=products', body: list([updated]) }), []);
    const check = (body: unknown) => validator.validateResponse({ ...single, body }).join('\n');
    assert.match(check(anEvent({ data: { object: { ...aProduct(), price: 1 } } })), /body\/data\/object\/price must be string/);
    assert.match(check(anEvent({ data: { object: aProduct(), previous: { price: '1.00' } } })), /body\/data\/previous boolean schema is false/);
    assert.match(check({ ...anEvent(), context: { actor: { type: 'system', id: 'webhooks' } } }), /additional properties: context/);
    assert.match(check(anEvent({ topic: 'products' })), /body\/topic must be equal to one of the allowed values/);
  });
});

describe('webhooks contract: request bodies and components', () => {
  const validator = createContractValidator();

  it('checks a subscription create body', () => {
    const body = { url: 'https://example.com/hooks', topics: ['orders', 'products.created'], description: null, status: 'disabled' };
    assert.deepEqual(validator.validateComponent('WebhookSubscriptionCreate', body), []);
    assert.deepEqual(validator.validateComponent('WebhookSubscriptionCreate', { url: 'http://localhost:4000/hooks', topics: ['*'] }), []);
    const check = (value: unknown) => validator.validateComponent('WebhookSubscriptionCreate', value).join('\n');
    assert.match(check({ topics: ['*'] }), /required property 'url'/);
    assert.match(check({ ...body, topics: [] }), /topics must NOT have fewer than 1 items/);
    assert.match(check({ ...body, topics: ['nope'] }), /topics\/0 must be equal to one of the allowed values/);
    assert.match(check({ ...body, url: 'ftp://example.com/hooks' }), /url must match pattern/);
    assert.match(check({ ...body, description: 'x'.repeat(501) }), /description must NOT have more than 500 characters/);
    assert.match(check({ ...body, secret }), /additional properties: secret/);
  });

  it('lets every topic and event name of the catalogue be subscribed to', () => {
    const topics = ['*', ...eventTopics, 'webhooks.secret_rotated', 'system_alerts.raised'];
    assert.deepEqual(validator.validateComponent('WebhookSubscriptionCreate', { url: 'https://example.com/hooks', topics }), []);
  });

  it('checks a subscription patch body: every field optional, a bad status enum refused', () => {
    assert.deepEqual(validator.validateComponent('WebhookSubscriptionUpdate', {}), []);
    assert.deepEqual(validator.validateComponent('WebhookSubscriptionUpdate', { status: 'enabled', description: 'Renamed' }), []);
    assert.match(
      validator.validateComponent('WebhookSubscriptionUpdate', { status: 'paused' }).join('\n'),
      /status must be equal to one of the allowed values: "enabled", "disabled"/,
    );
    assert.match(validator.validateComponent('WebhookSubscriptionUpdate', { version: 3 }).join('\n'), /additional properties: version/);
  });

  it('checks a bulk replay request', () => {
    assert.deepEqual(validator.validateComponent('DeadLetterReplayRequest', {}), []);
    const filter = { subscription_id: subscriptionId, topic: 'orders', since: '2026-11-01T00:00:00Z', until: at, limit: 50 };
    assert.deepEqual(validator.validateComponent('DeadLetterReplayRequest', filter), []);
    assert.match(validator.validateComponent('DeadLetterReplayRequest', { limit: 1001 }).join('\n'), /limit must be <= 1000/);
    assert.match(validator.validateComponent('DeadLetterReplayRequest', { status: 'dead' }).join('\n'), /additional properties: status/);
  });

  it("checks the body receivers get against its event's webhook entry, hmac_sha256 included", () => {
    const body = { ...aPayload(), hmac_sha256: '0f'.repeat(32) };
    const signed = { 'webhook-id': eventId, 'webhook-timestamp': '1763800000', 'webhook-signature': `v1,${'A'.repeat(43)}= v1,${'B'.repeat(43)}=` };
    assert.deepEqual(validator.validateComponent('ProductsCreatedEvent', body), []);
    assert.deepEqual(validator.validateWebhook({ body: JSON.stringify(body), headers: signed }), []);
    assert.match(validator.validateComponent('ProductsCreatedEvent', aPayload()).join('\n'), /required property 'hmac_sha256'/);
    assert.match(validator.validateComponent('ProductsCreatedEvent', { ...body, hmac_sha256: 'AB' }).join('\n'), /hmac_sha256 must match pattern/);
    assert.match(validator.validateComponent('ProductsCreatedEvent', { ...body, topic: 'products.deleted' }).join('\n'), /topic must be equal to constant/);
    assert.match(
      validator.validateComponent('ProductsCreatedEvent', { ...body, data: { object: aProduct(), previous: {} } }).join('\n'),
      /additional properties: previous/,
    );
    assert.match(
      validator.validateWebhook({ body, headers: { ...signed, 'webhook-signature': 'v2,abc' } }).join('\n'),
      /header webhook-signature must match pattern/,
    );
    assert.match(validator.validateWebhook({ body, headers: { 'webhook-id': eventId } }).join('\n'), /header webhook-timestamp is missing/);
    assert.match(validator.validateWebhook({ body: { ...body, topic: 'internal.record_routed' } }).join('\n'), /not an event of the webhooks section/);
  });

  it('checks the remaining components directly', () => {
    assert.deepEqual(validator.validateComponent('WebhookSubscription', aSubscription()), []);
    assert.deepEqual(validator.validateComponent('WebhookSubscriptionStats', someStats()), []);
    assert.deepEqual(validator.validateComponent('WebhookAttempt', anAttempt(1, { status_code: 200, error: null, error_message: null })), []);
    assert.deepEqual(validator.validateComponent('WebhookDeadLetter', aDeadLetter()), []);
    assert.deepEqual(validator.validateComponent('Event', anEvent()), []);
    assert.deepEqual(validator.validateComponent('SystemAlert', anAlert()), []);
  });
});

describe('webhooks contract: events of the catalogue', () => {
  const validator = createContractValidator();

  it('carries the subscription in webhooks.* events, never its secret', () => {
    for (const topic of ['webhooks.subscription_created', 'webhooks.subscription_deleted', 'webhooks.secret_rotated']) {
      assert.deepEqual(validator.validateEvent(envelope(topic, { object: aSubscription() })), [], topic);
      assert.match(
        validator.validateEvent(envelope(topic, { object: aSubscription({ secret }) })).join('\n'),
        /data\.object must NOT have additional properties: secret/,
        topic,
      );
    }
    const provisionalExtra = envelope('webhooks.subscription_created', { object: { ...aSubscription(), merchant_id: id('mch') } });
    assert.match(validator.validateEvent(provisionalExtra).join('\n'), /additional properties: merchant_id/);
  });

  it("holds webhooks.subscription_updated's previous to the subscription's fields", () => {
    const object = aSubscription({ url: 'https://example.com/v2', version: 2 });
    const updated = (previous: Record<string, unknown>) => validator.validateEvent(envelope('webhooks.subscription_updated', { object, previous }));
    assert.deepEqual(updated({ url: 'https://example.com/merx/webhooks', version: 1, updated_at: at }), []);
    assert.match(updated({ secret }).join('\n'), /data\.previous must NOT have additional properties: secret/);
    assert.match(updated({ status: 'enabled', disabled_reason: 'by_merchant' }).join('\n'), /disabled_reason must be equal to constant/);
  });

  it('carries a strict system alert in system_alerts.raised', () => {
    assert.deepEqual(validator.validateEvent(envelope('system_alerts.raised', { object: anAlert() })), []);
    const disabled = anAlert({ kind: 'endpoint_disabled', severity: 'critical', delivery_id: null, event_id: null });
    assert.deepEqual(validator.validateEvent(envelope('system_alerts.raised', { object: disabled })), []);
    const check = (object: unknown) => validator.validateEvent(envelope('system_alerts.raised', { object })).join('\n');
    assert.match(check(anAlert({ kind: 'endpoint_failing' })), /data\.object\/kind must be equal to one of the allowed values/);
    assert.match(check(anAlert({ severity: 'info' })), /data\.object\/severity must be equal to one of the allowed values/);
    assert.match(check({ ...anAlert(), url: 'https://example.com' }), /additional properties: url/);
    const { event_id: _eventId, ...withoutEventId } = anAlert();
    assert.match(check(withoutEventId), /required property 'event_id'/);
  });
});
