import assert from 'node:assert/strict';
import { runWithContext } from './context.js';
import { buildEvent, topicMatches } from './events.js';
import { isId } from './ids.js';

describe('topicMatches', () => {
  const cases: Array<[string, string, boolean]> = [
    ['products.created', 'products.created', true],
    ['products.created', 'products.updated', false],
    ['products.created', 'products.created.extra', false],
    ['products', 'products.created', false],
    ['products.*', 'products.created', true],
    ['products.*', 'products', false],
    ['products.*', 'products.created.extra', false],
    ['*.created', 'products.created', true],
    ['*.created', 'products.updated', false],
    ['*', 'products', true],
    ['*', 'products.created', false],
    ['#', 'products.created', true],
    ['#', 'products', true],
    ['products.#', 'products', true],
    ['products.#', 'products.created', true],
    ['products.#', 'products.variants.created', true],
    ['products.#', 'orders.created', false],
    ['#.created', 'products.variants.created', true],
    ['#.created', 'created', true],
    ['#.created', 'products.updated', false],
    ['products.#.created', 'products.created', true],
    ['products.#.created', 'products.a.b.created', true],
    ['products.#.created', 'products.a.b.updated', false],
    ['*.#', 'products', true],
    ['*.*', 'products', false],
  ];
  for (const [pattern, topic, expected] of cases) {
    it(`${pattern} ${expected ? 'matches' : 'does not match'} ${topic}`, () => {
      assert.equal(topicMatches(pattern, topic), expected);
    });
  }
});

describe('buildEvent', () => {
  const merchantId = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

  it('builds the v1 envelope', () => {
    const now = new Date('2026-11-22T10:04:05.123Z');
    const event = buildEvent('products.created', merchantId, { object: { id: 'prod_x' } }, now);
    assert.ok(isId(event.id, 'evt'));
    assert.deepEqual(
      { ...event, id: 'x' },
      {
        id: 'x',
        topic: 'products.created',
        merchant_id: merchantId,
        created_at: '2026-11-22T10:04:05.123Z',
        api_version: 'v1',
        data: { object: { id: 'prod_x' } },
      },
    );
    assert.notEqual(buildEvent('products.created', merchantId, { object: {} }).id, event.id);
  });

  it('fills the context from the unit of work it is built in', () => {
    const context = {
      requestId: 'req_01jd3k7q8m2x4v6b9c0d1e2f3g',
      merchantId,
      actor: { type: 'api_key' as const, id: 'mx_test_abc' },
      ip: '203.0.113.9',
    };
    const event = runWithContext(context, () => buildEvent('products.updated', merchantId, { object: { id: 'p' }, previous: { title: 'old' } }));
    assert.deepEqual(event.context, { request_id: context.requestId, actor: context.actor, ip: '203.0.113.9' });
    assert.deepEqual(event.data.previous, { title: 'old' });
  });

  it('carries only what the context knows, and nothing outside one', async () => {
    const partial = await runWithContext({ requestId: 'req_01jd3k7q8m2x4v6b9c0d1e2f3g' }, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return buildEvent('products.deleted', merchantId, { object: {} });
    });
    assert.deepEqual(partial.context, { request_id: 'req_01jd3k7q8m2x4v6b9c0d1e2f3g' });
    assert.equal('context' in buildEvent('products.deleted', merchantId, { object: {} }), false);
  });
});
