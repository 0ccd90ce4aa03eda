import assert from 'node:assert/strict';
import { applyTransform } from './transform.js';
import { TRANSFORM_LIMITS, validateTransform } from './transform-validation.js';
import type { TransformSpec } from './types.js';

/** The errors of a refused transform, as `field:code`. */
function errorsOf(value: unknown, field?: string): string[] {
  const { spec, errors } = validateTransform(value, field);
  assert.equal(spec, undefined);
  return errors.map((error) => `${error.field}:${error.code}`);
}

const ORDER = {
  total: 120,
  currency: 'EUR',
  customer: { email: 'ada@example.com', name: 'Ada', address: { city: 'Berlin', zip: '10115' } },
  items: [{ sku: 'A-1', qty: 2 }],
};

describe('rule transforms', () => {
  describe('validateTransform', () => {
    it('accepts each operation and returns only those given', () => {
      const value = {
        keep: ['customer.email', 'total'],
        remove: ['customer.address'],
        rename: { total: 'amount.value' },
        set: { 'meta.source': 'merx', flags: [1, { a: null }] },
      };
      assert.deepEqual(validateTransform(value), { spec: value, errors: [] });
      assert.deepEqual(validateTransform({ remove: ['a'] }), { spec: { remove: ['a'] }, errors: [] });
    });

    it('accepts the documented path alphabet', () => {
      assert.deepEqual(validateTransform({ keep: ['a_b-c.D9', '0.1'] }).errors, []);
    });

    it('wants an object with at least one known operation', () => {
      assert.deepEqual(errorsOf(null), ['transform:invalid_type']);
      assert.deepEqual(errorsOf(['keep']), ['transform:invalid_type']);
      assert.deepEqual(errorsOf({}), ['transform:required']);
      assert.deepEqual(errorsOf({ drop: ['a'] }), ['transform.drop:unknown_field', 'transform:required']);
      assert.deepEqual(errorsOf({ keep: ['a'], map: {} }), ['transform.map:unknown_field']);
    });

    it('checks keep and remove lists', () => {
      assert.deepEqual(errorsOf({ keep: 'a' }), ['transform.keep:invalid_type']);
      assert.deepEqual(errorsOf({ keep: [] }), ['transform.keep:too_short']);
      assert.deepEqual(errorsOf({ remove: Array.from({ length: TRANSFORM_LIMITS.maxEntries + 1 }, (_, i) => `f${i}`) }), ['transform.remove:too_long']);
      assert.deepEqual(errorsOf({ keep: ['a', 'a'] }), ['transform.keep:duplicate_items']);
      assert.deepEqual(errorsOf({ keep: ['ok', 'customer..email', 'a b', '.a', 'a.', 7] }), [
        'transform.keep[1]:invalid_format',
        'transform.keep[2]:invalid_format',
        'transform.keep[3]:invalid_format',
        'transform.keep[4]:invalid_format',
        'transform.keep[5]:invalid_type',
      ]);
      assert.deepEqual(errorsOf({ remove: ['a'.repeat(TRANSFORM_LIMITS.maxPathLength + 1)] }), ['transform.remove[0]:too_long']);
      assert.deepEqual(validateTransform({ remove: ['a'.repeat(TRANSFORM_LIMITS.maxPathLength)] }).errors, []);
    });

    it('checks rename sources and targets', () => {
      assert.deepEqual(errorsOf({ rename: ['a'] }), ['transform.rename:invalid_type']);
      assert.deepEqual(errorsOf({ rename: {} }), ['transform.rename:too_short']);
      assert.deepEqual(errorsOf({ rename: { 'bad key': 'b', c: 'bad value', d: 5 } }), [
        'transform.rename["bad key"]:invalid_format',
        'transform.rename.c:invalid_format',
        'transform.rename.d:invalid_type',
      ]);
    });

    it('checks set paths and the size of set values', () => {
      assert.deepEqual(errorsOf({ set: {} }), ['transform.set:too_short']);
      assert.deepEqual(errorsOf({ set: { 'a..b': 1 } }), ['transform.set["a..b"]:invalid_format']);
      const big = 'x'.repeat(TRANSFORM_LIMITS.maxSetValueBytes);
      assert.deepEqual(errorsOf({ set: { note: big } }), ['transform.set.note:too_long']);
      assert.deepEqual(validateTransform({ set: { note: big.slice(2) } }).errors, []);
      assert.deepEqual(errorsOf({ set: { 'customer.email': big } }), ['transform.set["customer.email"]:too_long'], 'a dotted key is quoted, not split');
    });

    it('names fields under the prefix it is given', () => {
      assert.deepEqual(errorsOf({ keep: [''] }, 'rules[2].transform'), ['rules[2].transform.keep[0]:invalid_format']);
    });
  });

  describe('applyTransform', () => {
    it('keeps only the listed paths; a nested path keeps its branch alone', () => {
      assert.deepEqual(applyTransform(ORDER, { keep: ['customer.address.city', 'total', 'missing.path'] }), {
        total: 120,
        customer: { address: { city: 'Berlin' } },
      });
    });

    it('keeps a whole branch when both it and a path inside it are listed', () => {
      assert.deepEqual(applyTransform(ORDER, { keep: ['customer.email', 'customer'] }), { customer: ORDER.customer });
    });

    it('removes paths, ignoring missing ones', () => {
      assert.deepEqual(applyTransform(ORDER, { remove: ['customer.address', 'items', 'nope', 'total.cents'] }), {
        total: 120,
        currency: 'EUR',
        customer: { email: 'ada@example.com', name: 'Ada' },
      });
    });

    it('renames into new nested paths, creating the objects they need', () => {
      const result = applyTransform(ORDER, { rename: { total: 'amount.value', currency: 'amount.currency', 'customer.email': 'contact', nothing: 'x' } });
      assert.deepEqual(result, {
        amount: { value: 120, currency: 'EUR' },
        customer: { name: 'Ada', address: ORDER.customer.address },
        contact: 'ada@example.com',
        items: ORDER.items,
      });
    });

    it('renames all at once, so a mapping can swap two fields', () => {
      assert.deepEqual(applyTransform({ a: 1, b: 2 }, { rename: { a: 'b', b: 'a' } }), { a: 2, b: 1 });
    });

    it('sets JSON values, replacing whatever is in the way of the path', () => {
      const result = applyTransform(ORDER, { set: { 'meta.source': 'merx', 'total.cents': 12000, currency: null, 'customer.tags': ['vip'] } });
      assert.deepEqual(result, {
        total: { cents: 12000 },
        currency: null,
        customer: { ...ORDER.customer, tags: ['vip'] },
        items: ORDER.items,
        meta: { source: 'merx' },
      });
    });

    it('applies keep, then remove, then rename, then set', () => {
      const spec: TransformSpec = { set: { b: 'set' }, rename: { a: 'c' }, remove: ['b'], keep: ['a', 'b'] };
      assert.deepEqual(applyTransform({ a: 1, b: 2, z: 3 }, spec), { c: 1, b: 'set' });
      // remove runs after keep, rename after remove: a removed path is not there to rename.
      assert.deepEqual(applyTransform({ a: 1, b: 2 }, { remove: ['a'], rename: { a: 'x' } }), { b: 2 });
    });

    it('never changes its inputs and shares nothing with them', () => {
      const data = structuredClone(ORDER);
      const spec: TransformSpec = { keep: ['customer', 'items'], rename: { 'customer.name': 'name' }, set: { 'customer.tags': ['vip'] } };
      const specBefore = structuredClone(spec);
      const result = applyTransform(data, spec);
      assert.deepEqual(data, ORDER);
      assert.deepEqual(spec, specBefore);
      (result.items as Array<{ qty: number }>)[0]!.qty = 99;
      (result.customer as { tags: string[] }).tags.push('changed');
      assert.deepEqual(data, ORDER);
      assert.deepEqual(spec, specBefore);
    });

    it('treats __proto__ as an ordinary key and never reaches Object.prototype', () => {
      const data = JSON.parse('{"__proto__": {"admin": false}, "a": 1}') as Record<string, unknown>;
      const result = applyTransform(data, { set: { '__proto__.admin': true, 'x.__proto__.polluted': true }, rename: { a: '__proto__.a' } });
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(({} as Record<string, unknown>).admin, undefined);
      assert.deepEqual(Object.keys(result), ['__proto__', 'x']);
      assert.deepEqual(JSON.parse(JSON.stringify(result)), JSON.parse('{"__proto__": {"admin": true, "a": 1}, "x": {"__proto__": {"polluted": true}}}'));
    });
  });
});
