import assert from 'node:assert/strict';
import { MAX_CONDITION_LENGTH } from '@merx/contracts';
import { checkCondition, compileCondition, conditionContext, CONDITION_LIMITS, type CompiledCondition } from './condition.js';
import type { RuleRecord } from './types.js';

const RECORD: RuleRecord = {
  type: 'order',
  external_id: 'ord-1001',
  occurred_at: '2025-03-01T10:15:00.000Z',
  source_id: 'src_01jd3k7q8m2x4v6b9c0d1e2f3g',
  data: { total: 120, currency: 'EUR', customer: { email: 'ada@example.com', vip: true }, items: [1, 2, 3], 'gift-wrap': 'yes' },
};

function compiled(expression: string): CompiledCondition {
  const result = compileCondition(expression);
  assert.ok(result.ok, `expected ${expression} to compile: ${JSON.stringify(!result.ok && result.problems)}`);
  return result.condition;
}

function evaluate(expression: string, record: Partial<RuleRecord> = {}) {
  return compiled(expression).evaluate(conditionContext({ ...RECORD, ...record }));
}

/** The single field error of an expression the check refuses. */
function refusal(expression: unknown): { code: string; message: string } {
  const errors = checkCondition(expression);
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.equal(errors[0]!.field, 'condition');
  return { code: errors[0]!.code, message: errors[0]!.message };
}

describe('rule conditions', () => {
  describe('checkCondition accepts', () => {
    const valid = [
      'data.total >= 100.0 && data.currency == "EUR"',
      'occurred_at > timestamp("2025-01-01T00:00:00Z")',
      'occurred_at - duration("24h") < timestamp("2025-03-01T00:00:00Z")',
      'occurred_at.getHours("Europe/Berlin") < 12',
      'has(data.x)',
      'has(data.customer.vip) && data.customer.vip == true',
      'type == "order"',
      'type in ["order", "review"] && type.startsWith("ord")',
      'type(data.total) == double',
      'external_id.matches("^ord-[0-9]+$") && source_id != ""',
      'data["gift-wrap"] == "yes"',
      'data.items.exists(x, data.items.all(y, y <= x))',
      'data.total >= 100.0 // big orders only',
      'data.total >= 100.0 &&\n  data.currency == "EUR"',
    ];
    for (const expression of valid) {
      it(JSON.stringify(expression), () => assert.deepEqual(checkCondition(expression), []));
    }
  });

  describe('checkCondition refuses, naming what and where', () => {
    const cases: Array<[string, string]> = [
      ['type == "order" &&\n  customer.vip', 'Unknown variable: customer at line 2, column 3'],
      ['data.total > 1.0 && discount(data.total)', 'Unknown function: discount at line 1, column 21'],
      ['type.shout() == "ORDER!"', 'Unknown function: shout at line 1, column 6'],
      ['data.total >= 100.0 &&', 'Unexpected token: EOF at line 1, column 23'],
      ['data.total = 100', 'Unexpected character: = at line 1, column 12'],
      ['data.currency == "EUR', 'Unterminated string at line 1, column 18'],
      ['  \n\n   data.a &&& data.b', 'Unexpected character: & at line 3, column 13'],
      ['size(true) > 0', "found no matching overload for 'size(bool)' at line 1, column 1"],
      ['occurred_at > "2025-01-01"', 'no such overload: google.protobuf.Timestamp > string at line 1, column 1'],
    ];
    for (const [expression, message] of cases) {
      it(`${JSON.stringify(expression)} → ${message}`, () => {
        assert.deepEqual(refusal(expression), { code: 'invalid_expression', message });
      });
    }

    it('refuses the name the record type is bound through, as any unknown variable', () => {
      assert.deepEqual(refusal('__merx_record_type == "order"'), {
        code: 'invalid_expression',
        message: 'Unknown variable: __merx_record_type at line 1, column 1',
      });
    });
  });

  describe('checkCondition wants a bool', () => {
    const nonBool: Array<[string, string]> = [
      ['"order"', 'string'],
      ['1 + 2', 'int'],
      ['data.total + 1.0', 'double'],
      ['occurred_at', 'google.protobuf.Timestamp'],
    ];
    for (const [expression, type] of nonBool) {
      it(`refuses ${expression} (${type})`, () => {
        const { code, message } = refusal(expression);
        assert.equal(code, 'invalid_expression');
        assert.match(message, new RegExp(`must be of type bool, but the expression starting at line 1, column 1 is ${type.replace('.', '\\.')}$`));
      });
    }

    it('refuses a bare value from data and says how to compare it', () => {
      assert.match(refusal('data.flag').message, /is dyn .*compare it, e\.g\. data\.flag == true/);
    });
  });

  describe('checkCondition bounds complexity', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['three nested comprehensions', 'data.items.all(x, data.items.all(y, data.items.exists(z, z == x + y)))', /nest 3 deep; at most 2 are allowed/],
      ['deep nesting', `${'('.repeat(40)}true${')'.repeat(40)}`, /nests deeper than 32 levels .* at line 1, column 33$/],
      ['too many nodes', Array.from({ length: 300 }, () => 'data.n==1').join('||'), /more than 500 nodes .* at line 1, column \d+$/],
      ['a long list literal', `data.n in [${Array.from({ length: 300 }, (_, i) => i).join(',')}]`, /a list literal has more than 256 elements/],
      ['a large map literal', `size({${Array.from({ length: 70 }, (_, i) => `"k${i}": ${i}`).join(',')}}) > 0`, /a map literal has more than 64 entries/],
      ['many call arguments', 'timestamp(1, 2, 3, 4, 5, 6, 7, 8, 9) > occurred_at', /a call has more than 8 arguments/],
    ];
    for (const [name, expression, message] of cases) {
      it(`refuses ${name} as expression_too_complex`, () => {
        const refused = refusal(expression);
        assert.equal(refused.code, 'expression_too_complex');
        assert.match(refused.message, message);
      });
    }

    it('allows two nested comprehensions and chained ones', () => {
      assert.deepEqual(checkCondition('data.items.filter(x, x > 1.0).map(x, x * 2.0).exists(x, data.items.exists(y, y == x))'), []);
    });

    it('states its limits', () => {
      assert.equal(CONDITION_LIMITS.maxLength, MAX_CONDITION_LENGTH);
      assert.equal(CONDITION_LIMITS.maxComprehensionNesting, 2);
    });
  });

  describe('checkCondition checks the string itself', () => {
    it('refuses a non-string', () => assert.equal(refusal(true).code, 'invalid_type'));
    it('refuses an empty or blank string', () => {
      assert.equal(refusal('').code, 'too_short');
      assert.equal(refusal('  \n').code, 'too_short');
    });
    it(`refuses more than ${MAX_CONDITION_LENGTH} characters`, () => {
      const long = `true || ${'x'.repeat(MAX_CONDITION_LENGTH)}`;
      assert.deepEqual(refusal(long), { code: 'too_long', message: `condition must be at most ${MAX_CONDITION_LENGTH} characters` });
    });
    it('counts characters, not UTF-16 units', () => {
      const emoji = `data.note == "${'😀'.repeat(MAX_CONDITION_LENGTH - 'data.note == ""'.length)}"`;
      assert.equal([...emoji].length, MAX_CONDITION_LENGTH);
      assert.deepEqual(checkCondition(emoji), []);
    });
  });

  describe('evaluation', () => {
    it('matches the design example', () => {
      assert.deepEqual(evaluate('data.total >= 100.0 && data.currency == "EUR"'), { matched: true });
      assert.deepEqual(evaluate('data.total >= 100.0 && data.currency == "EUR"', { data: { total: 99.5, currency: 'EUR' } }), { matched: false });
    });

    it('reads JSON numbers as double, which compare with int literals but do not add to them', () => {
      assert.deepEqual(evaluate('data.total >= 100'), { matched: true });
      assert.deepEqual(evaluate('data.total == 120'), { matched: true });
      assert.deepEqual(evaluate('type(data.total) == double'), { matched: true });
      assert.deepEqual(evaluate('data.total + 1 > 0'), { error: 'no such overload: dyn<double> + int at line 1, column 1' });
      assert.deepEqual(evaluate('data.total + 1.0 > 0.0'), { matched: true });
    });

    it('binds type to the record type without losing the type() function', () => {
      assert.deepEqual(evaluate('type == "order"'), { matched: true });
      assert.deepEqual(evaluate('type == "order"', { type: 'review' }), { matched: false });
      assert.deepEqual(evaluate('type(type) == string'), { matched: true });
    });

    it('compares occurred_at as a timestamp', () => {
      assert.deepEqual(evaluate('occurred_at > timestamp("2025-03-01T10:00:00Z")'), { matched: true });
      assert.deepEqual(evaluate('occurred_at < timestamp("2025-03-01T10:00:00Z")'), { matched: false });
      assert.deepEqual(evaluate('occurred_at.getFullYear() == 2025 && occurred_at - duration("1h") < timestamp("2025-03-01T10:00:00Z")'), { matched: true });
    });

    it('tests presence with has()', () => {
      assert.deepEqual(evaluate('has(data.customer.email) && !has(data.coupon)'), { matched: true });
    });

    it('reports a missing key as an error at its position instead of throwing', () => {
      assert.deepEqual(evaluate('data.currency == "EUR" && data.shipping.country == "DE"'), { error: 'No such key: shipping at line 1, column 32' });
    });

    it('reports a value of the wrong type at run time', () => {
      assert.deepEqual(evaluate('data.total >= 100', { data: { total: '120' } }), { error: 'no such overload: dyn<string> >= int at line 1, column 1' });
    });
  });
});
