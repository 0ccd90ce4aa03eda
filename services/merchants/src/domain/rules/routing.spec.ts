import assert from 'node:assert/strict';
import { ConditionCache } from './condition-cache.js';
import { routeThroughRules } from './routing.js';
import type { RoutingJob, RuleForRouting, RuleRecord } from './types.js';

const RECORD: RuleRecord = {
  type: 'order',
  external_id: 'ord-1001',
  occurred_at: '2025-03-01T10:15:00.000Z',
  source_id: 'src_01jd3k7q8m2x4v6b9c0d1e2f3g',
  data: { total: 120, currency: 'EUR', customer: { email: 'ada@example.com', name: 'Ada' } },
};

function rule(id: string, action: RuleForRouting['action'], condition: string, extra: Partial<RuleForRouting> = {}): RuleForRouting {
  return { id, eventTypes: ['orders.created'], condition, action, transform: null, enabled: true, ...extra };
}

function job(rules: RuleForRouting[], record: RuleRecord = RECORD): RoutingJob {
  return { eventType: 'orders.created', record, rules };
}

describe('routeThroughRules', () => {
  it('routes everything when the connection has no rules', () => {
    const decision = routeThroughRules(job([]));
    assert.equal(decision.outcome, 'routed');
    assert.equal(decision.ruleId, null);
    assert.deepEqual(decision.outcome === 'routed' && decision.data, RECORD.data);
    assert.match(decision.reason!, /no enabled forward rule applies to orders\.created/);
  });

  it('routes at the first forward rule that matches', () => {
    const decision = routeThroughRules(
      job([rule('rul_small', 'forward', 'data.total < 50.0'), rule('rul_eur', 'forward', 'data.currency == "EUR"'), rule('rul_drop', 'drop', 'true')]),
    );
    assert.deepEqual(decision, { outcome: 'routed', data: RECORD.data, ruleId: 'rul_eur', reason: 'forward rule rul_eur matched' });
  });

  it('filters when forward rules exist and none matches', () => {
    assert.deepEqual(routeThroughRules(job([rule('rul_usd', 'forward', 'data.currency == "USD"')])), {
      outcome: 'filtered',
      ruleId: null,
      reason: 'no forward rule matched',
    });
  });

  it('drops at a matching drop rule, before later forward rules', () => {
    assert.deepEqual(routeThroughRules(job([rule('rul_test', 'drop', 'external_id.startsWith("ord-")'), rule('rul_all', 'forward', 'true')])), {
      outcome: 'dropped',
      ruleId: 'rul_test',
      reason: 'drop rule rul_test matched',
    });
  });

  it('routes a record no drop rule matched when there is no forward rule', () => {
    const decision = routeThroughRules(job([rule('rul_test', 'drop', 'type == "review"')]));
    assert.equal(decision.outcome, 'routed');
    assert.equal(decision.ruleId, null);
  });

  it('skips disabled rules, and a disabled forward rule does not make the connection filter', () => {
    const decision = routeThroughRules(job([rule('rul_off', 'drop', 'true', { enabled: false }), rule('rul_off_fwd', 'forward', 'false', { enabled: false })]));
    assert.equal(decision.outcome, 'routed');
    assert.equal(decision.ruleId, null);
  });

  it('skips rules for other event types, including their forward rules', () => {
    const reviewsOnly = { eventTypes: ['reviews.submitted'] };
    const decision = routeThroughRules(job([rule('rul_rev_drop', 'drop', 'true', reviewsOnly), rule('rul_rev_fwd', 'forward', 'false', reviewsOnly)]));
    assert.equal(decision.outcome, 'routed');
    assert.equal(decision.ruleId, null);
  });

  it('applies matching transforms in order and routes the result', () => {
    const rules = [
      rule('rul_keep', 'transform', 'true', { transform: { keep: ['total', 'customer.email'] } }),
      rule('rul_never', 'transform', 'data.total > 1000.0', { transform: { set: { big: true } } }),
      rule('rul_rename', 'transform', 'has(data.customer.email)', { transform: { rename: { 'customer.email': 'email' } } }),
      rule('rul_fwd', 'forward', 'has(data.email) && !has(data.currency)'),
    ];
    assert.deepEqual(routeThroughRules(job(rules)), {
      outcome: 'routed',
      data: { total: 120, customer: {}, email: 'ada@example.com' },
      ruleId: 'rul_fwd',
      reason: 'forward rule rul_fwd matched; transformed by rul_keep, rul_rename',
    });
  });

  it('routes transformed data when no forward rule exists', () => {
    const decision = routeThroughRules(job([rule('rul_tag', 'transform', 'true', { transform: { set: { 'meta.via': 'merx' } } })]));
    assert.equal(decision.outcome, 'routed');
    assert.deepEqual(decision.outcome === 'routed' && decision.data, { ...RECORD.data, meta: { via: 'merx' } });
  });

  it('treats a run-time error as no match and says why', () => {
    const rules = [rule('rul_ship', 'drop', 'data.shipping.country == "DE"'), rule('rul_eur', 'forward', 'data.currency == "EUR"')];
    assert.deepEqual(routeThroughRules(job(rules)), {
      outcome: 'routed',
      data: RECORD.data,
      ruleId: 'rul_eur',
      reason: 'forward rule rul_eur matched; rule rul_ship skipped, its condition failed: No such key: shipping at line 1, column 6',
    });
  });

  it('filters when the only forward rule fails at run time, with the error as the reason', () => {
    assert.deepEqual(routeThroughRules(job([rule('rul_big', 'forward', 'data.amount >= 100.0')])), {
      outcome: 'filtered',
      ruleId: null,
      reason: 'no forward rule matched; rule rul_big skipped, its condition failed: No such key: amount at line 1, column 6',
    });
  });

  it('skips a stored condition that no longer compiles instead of failing', () => {
    const decision = routeThroughRules(job([rule('rul_old', 'forward', 'data.items.all(x, data.items.all(y, data.items.all(z, true)))')]));
    assert.equal(decision.outcome, 'filtered');
    assert.match(decision.reason!, /rule rul_old skipped, its condition failed: comprehensions .* nest 3 deep/);
  });

  it('sees the record fields and the transformed data in conditions', () => {
    const rules = [
      rule('rul_strip', 'transform', 'true', { transform: { remove: ['currency'] } }),
      rule('rul_fwd', 'forward', 'type == "order" && source_id.startsWith("src_") && occurred_at > timestamp("2025-01-01T00:00:00Z") && !has(data.currency)'),
    ];
    assert.equal(routeThroughRules(job(rules)).ruleId, 'rul_fwd');
  });

  it('leaves the job as it was', () => {
    const record = structuredClone(RECORD);
    routeThroughRules(job([rule('rul_t', 'transform', 'true', { transform: { remove: ['customer'], set: { total: 0 } } })], record));
    assert.deepEqual(record, RECORD);
  });

  it('compiles each condition text once', () => {
    const cache = new ConditionCache(10);
    const rules = [rule('rul_a', 'transform', 'data.total > 1.0', { transform: { set: { a: 1 } } }), rule('rul_b', 'forward', 'data.total > 1.0')];
    routeThroughRules(job(rules), cache);
    routeThroughRules(job(rules), cache);
    assert.equal(cache.size, 1);
  });
});

describe('ConditionCache', () => {
  it('evicts the least recently used text beyond its capacity', () => {
    const cache = new ConditionCache(2);
    const first = cache.compile('type == "order"');
    cache.compile('type == "review"');
    assert.equal(cache.compile('type == "order"'), first);
    cache.compile('type == "alert"');
    assert.deepEqual([cache.has('type == "order"'), cache.has('type == "review"'), cache.has('type == "alert"')], [true, false, true]);
  });

  it('caches refusals too', () => {
    const cache = new ConditionCache(2);
    const refused = cache.compile('nope(');
    assert.equal(refused.ok, false);
    assert.equal(cache.compile('nope('), refused);
  });

  it('wants a positive capacity', () => {
    assert.throws(() => new ConditionCache(0), RangeError);
  });
});
