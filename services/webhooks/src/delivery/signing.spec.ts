import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { toWebhookPayload, type WebhookPayload } from '../domain/delivery.js';
import { bodyHmac, generateWebhookSecret, prepareRequestBody, RequestBodies, requestBody, secretKey, signatureHeaders, webhookBody } from './signing.js';

const PAYLOAD: WebhookPayload = {
  id: 'evt_01jd3k7q8m2x4v6b9c0d1e2f3g',
  topic: 'products.created',
  merchant_id: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g',
  created_at: '2026-01-02T03:04:05.678Z',
  api_version: 'v1',
  data: { object: { id: 'prod_1', title: 'Café crème', price: '19.99', tags: ['b', 'a'] } },
};

const nowSeconds = () => Math.floor(Date.now() / 1000);

function signedRequest(secrets: string[], timestampSeconds = nowSeconds()) {
  const body = webhookBody(PAYLOAD, secrets[0]!);
  return { body, headers: { ...signatureHeaders({ messageId: PAYLOAD.id, timestampSeconds, body, secrets }) } };
}

describe('delivery signing', () => {
  it('generates whsec_ secrets of 24 random bytes', () => {
    const secret = generateWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.equal(secretKey(secret).length, 24);
    assert.notEqual(generateWebhookSecret(), secret);
    assert.throws(() => secretKey('not-a-secret'), TypeError);
  });

  it('sends the envelope to webhook endpoints and the record alone to http destinations', () => {
    const secret = generateWebhookSecret();
    assert.equal(requestBody('webhook', PAYLOAD, secret), webhookBody(PAYLOAD, secret));
    assert.equal(requestBody('http', PAYLOAD, secret), JSON.stringify(PAYLOAD.data.object));
  });

  it('picks the six published fields in order and drops the rest', () => {
    const event = {
      context: { request_id: 'req_1' },
      data: PAYLOAD.data,
      api_version: 'v1',
      created_at: PAYLOAD.created_at,
      merchant_id: PAYLOAD.merchant_id,
      topic: PAYLOAD.topic,
      id: PAYLOAD.id,
    };
    const payload = toWebhookPayload(event);
    assert.deepEqual(Object.keys(payload), ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data']);
    assert.equal('context' in payload, false);
  });

  it('bodyHmac is the hex HMAC of the canonical JSON, keyed by the secret bytes', () => {
    const secret = generateWebhookSecret();
    // Written by hand: members sorted by key at every level, no whitespace.
    const canonical =
      '{"api_version":"v1","created_at":"2026-01-02T03:04:05.678Z",' +
      '"data":{"object":{"id":"prod_1","price":"19.99","tags":["b","a"],"title":"Café crème"}},' +
      '"id":"evt_01jd3k7q8m2x4v6b9c0d1e2f3g","merchant_id":"mch_01jd3k7q8m2x4v6b9c0d1e2f3g","topic":"products.created"}';
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    assert.equal(bodyHmac(PAYLOAD, secret), createHmac('sha256', key).update(canonical).digest('hex'));
  });

  it('bodyHmac does not depend on key order inside data', () => {
    const secret = generateWebhookSecret();
    const reordered: WebhookPayload = { ...PAYLOAD, data: { object: { tags: ['b', 'a'], price: '19.99', title: 'Café crème', id: 'prod_1' } } };
    assert.equal(bodyHmac(reordered, secret), bodyHmac(PAYLOAD, secret));
    assert.notEqual(bodyHmac(PAYLOAD, generateWebhookSecret()), bodyHmac(PAYLOAD, secret));
  });

  it('the body carries the payload fields in order, then hmac_sha256 a receiver can recompute', () => {
    const secret = generateWebhookSecret();
    const parsed = JSON.parse(webhookBody(PAYLOAD, secret)) as WebhookPayload & { hmac_sha256: string };
    assert.deepEqual(Object.keys(parsed), ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data', 'hmac_sha256']);
    const { hmac_sha256, ...rest } = parsed;
    assert.equal(hmac_sha256, bodyHmac(rest, secret));
  });

  it('a prepared payload gives, for each secret, the bytes JSON.stringify gives with hmac_sha256 appended', () => {
    const [first, second] = [generateWebhookSecret(), generateWebhookSecret()];
    // As stored: the event's own key order, with a member the envelope does not carry.
    const stored = JSON.stringify({ context: { request_id: 'req_1' }, ...PAYLOAD, data: { object: { b: 1, a: [{ y: null, x: 'é\u2028' }] } } });
    const payload = JSON.parse(stored) as WebhookPayload;
    const prepared = prepareRequestBody('webhook', stored);
    for (const secret of [first, second, first]) {
      const body = prepared(secret);
      assert.equal(body, JSON.stringify({ ...toWebhookPayload(payload), hmac_sha256: bodyHmac(payload, secret) }));
      assert.equal(body, webhookBody(payload, secret));
    }
    assert.notEqual(prepared(first), prepared(second));
    const http = prepareRequestBody('http', stored);
    assert.equal(http(first), JSON.stringify(payload.data.object));
    assert.equal(http(second), http(first));
  });

  it('keeps prepared payloads up to its budget, newest last, and gives the same bodies either way', () => {
    const secret = generateWebhookSecret();
    const stored = (n: number) => JSON.stringify({ ...PAYLOAD, id: `evt_${n}` });
    const size = stored(1).length;
    const bodies = new RequestBodies(size * 2);
    for (const n of [1, 2, 3]) assert.equal(bodies.of('webhook', stored(n))(secret), prepareRequestBody('webhook', stored(n))(secret));
    assert.equal(bodies.size, 2, 'the oldest went');
    // The same payload for an http destination is another body.
    assert.equal(bodies.of('http', stored(3))(secret), JSON.stringify(PAYLOAD.data.object));
    assert.equal(bodies.of('webhook', stored(1))(secret), webhookBody(JSON.parse(stored(1)) as WebhookPayload, secret));
    // One payload above the whole budget is still prepared (and kept alone).
    const tiny = new RequestBodies(10);
    assert.equal(tiny.of('webhook', stored(4))(secret), prepareRequestBody('webhook', stored(4))(secret));
    assert.equal(tiny.size, 1);
  });

  it('the envelope of an event without fields is still well-formed JSON', () => {
    const secret = generateWebhookSecret();
    const empty = JSON.parse(webhookBody({} as WebhookPayload, secret)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(empty), ['hmac_sha256']);
  });

  it('the headers verify with the standardwebhooks library', () => {
    const secret = generateWebhookSecret();
    const { body, headers } = signedRequest([secret]);
    assert.equal(headers['webhook-id'], PAYLOAD.id);
    assert.match(headers['webhook-timestamp'], /^\d+$/);
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  });

  it('during a rotation both secrets sign, newest first, and each alone verifies', () => {
    const [newest, previous] = [generateWebhookSecret(), generateWebhookSecret()];
    const { body, headers } = signedRequest([newest, previous]);
    const signatures = headers['webhook-signature'].split(' ');
    assert.equal(signatures.length, 2);
    assert.equal(
      signatures[0],
      signatureHeaders({ messageId: PAYLOAD.id, timestampSeconds: Number(headers['webhook-timestamp']), body, secrets: [newest] })['webhook-signature'],
    );
    new Webhook(newest).verify(body, headers);
    new Webhook(previous).verify(body, headers);
    assert.throws(() => new Webhook(generateWebhookSecret()).verify(body, headers), /No matching signature/);
  });

  it('a tampered body or a stale timestamp fails verification', () => {
    const secret = generateWebhookSecret();
    const { body, headers } = signedRequest([secret]);
    assert.throws(() => new Webhook(secret).verify(body.replace('19.99', '0.01'), headers), /No matching signature/);
    const stale = signedRequest([secret], nowSeconds() - 10 * 60);
    assert.throws(() => new Webhook(secret).verify(stale.body, stale.headers), /too old/);
  });

  it('refuses to sign without a secret', () => {
    assert.throws(() => signatureHeaders({ messageId: PAYLOAD.id, timestampSeconds: nowSeconds(), body: '{}', secrets: [] }), TypeError);
  });
});
