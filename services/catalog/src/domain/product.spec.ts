import assert from 'node:assert/strict';
import { Conflict, ValidationFailed } from '@merx/kit';
import { assertTransition, effectiveChanges, validateNewProduct, validateProductChanges, type Product, type ProductStatus } from './product.js';

const VALID = { sku: 'TSHIRT-BLK-M', title: 'Black T-shirt', price: '19.99', currency: 'USD' };

function existing(overrides: Partial<Product> = {}): Product {
  return {
    id: 'prod_01jd3k7q8m2x4v6b9c0d1e2f3g',
    merchantId: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g',
    sku: 'SKU-1',
    title: 'Title',
    description: null,
    price: '19.99',
    currency: 'USD',
    status: 'active',
    inventoryQuantity: null,
    attributes: { size: 'M', color: 'black' },
    version: 1,
    createdAt: new Date('2026-01-01T00:00:00.000Z'),
    updatedAt: new Date('2026-01-01T00:00:00.000Z'),
    ...overrides,
  };
}

/** The field errors a validation throws, as `field:code`, sorted. */
function errorsOf(work: () => unknown): string[] {
  try {
    work();
  } catch (error) {
    assert.ok(error instanceof ValidationFailed, String(error));
    return error.errors.map((e) => `${e.field}:${e.code}`).sort();
  }
  assert.fail('expected a ValidationFailed');
}

describe('product domain', () => {
  describe('validateNewProduct', () => {
    it('fills the defaults: active, no description, untracked inventory, no attributes', () => {
      assert.deepEqual(validateNewProduct(VALID), { ...VALID, description: null, status: 'active', inventoryQuantity: null, attributes: {} });
    });

    it('keeps the optional fields as given', () => {
      const input = { ...VALID, status: 'draft', description: 'Soft', inventory_quantity: 0, attributes: { a: 'b' } };
      assert.deepEqual(validateNewProduct(input), { ...VALID, status: 'draft', description: 'Soft', inventoryQuantity: 0, attributes: { a: 'b' } });
    });

    const prices: [string, string, string][] = [
      ['19.9', 'USD', '19.90'],
      ['19', 'USD', '19.00'],
      ['0', 'USD', '0.00'],
      ['1.234', 'KWD', '1.234'],
      ['1500', 'JPY', '1500'],
      ['999999999999999.99', 'USD', '999999999999999.99'],
    ];
    for (const [price, currency, canonical] of prices) {
      it(`accepts ${price} ${currency} as ${canonical}`, () => {
        assert.equal(validateNewProduct({ ...VALID, price, currency }).price, canonical);
      });
    }

    const refused: [string, Record<string, unknown>, string[]][] = [
      [
        'no required field',
        { sku: undefined, title: undefined, price: undefined, currency: undefined },
        ['currency:required', 'price:required', 'sku:required', 'title:required'],
      ],
      [
        'null required fields',
        { sku: null, title: null, price: null, currency: null },
        ['currency:invalid_currency', 'price:invalid_decimal', 'sku:invalid_type', 'title:invalid_type'],
      ],
      ['a float price', { price: 19.99 }, ['price:invalid_decimal']],
      ['too many decimals for USD', { price: '19.999' }, ['price:too_many_decimals']],
      ['any decimals for JPY', { price: '1.5', currency: 'JPY' }, ['price:too_many_decimals']],
      ['a negative price', { price: '-1' }, ['price:invalid_decimal']],
      ['letters', { price: 'abc' }, ['price:invalid_decimal']],
      ['a leading zero', { price: '01.00' }, ['price:invalid_decimal']],
      ['an exponent', { price: '1e3' }, ['price:invalid_decimal']],
      ['16 integer digits', { price: '1000000000000000' }, ['price:invalid_decimal']],
      ['lower-case currency', { currency: 'usd' }, ['currency:invalid_currency']],
      ['an unknown currency', { currency: 'XYZ' }, ['currency:invalid_currency']],
      ['a sku with spaces', { sku: 'A B' }, ['sku:invalid_format']],
      ['a sku of 65 characters', { sku: 'S'.repeat(65) }, ['sku:invalid_format']],
      ['an empty title', { title: '' }, ['title:too_short']],
      ['a blank title', { title: '   ' }, ['title:too_short']],
      ['a title of 256 characters', { title: 't'.repeat(256) }, ['title:too_long']],
      ['a description of 10,001 characters', { description: 'd'.repeat(10_001) }, ['description:too_long']],
      ['negative inventory', { inventory_quantity: -1 }, ['inventory_quantity:out_of_range']],
      ['fractional inventory', { inventory_quantity: 1.5 }, ['inventory_quantity:invalid_type']],
      ['inventory as a string', { inventory_quantity: '3' }, ['inventory_quantity:invalid_type']],
      ['51 attributes', { attributes: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, ['attributes:too_many_keys']],
      ['a non-string attribute', { attributes: { size: 42 } }, ['attributes.size:invalid_type']],
      ['an attribute value of 501 characters', { attributes: { note: 'n'.repeat(501) } }, ['attributes.note:too_long']],
      ['attributes as an array', { attributes: ['a'] }, ['attributes:invalid_type']],
      ['an unknown field', { colour: 'black' }, ['colour:unknown_field']],
      ['status archived', { status: 'archived' }, ['status:invalid_value']],
      [
        'non-string text fields',
        { sku: 42, title: 42, description: 42, currency: 840 },
        ['currency:invalid_currency', 'description:invalid_type', 'sku:invalid_type', 'title:invalid_type'],
      ],
      ['an attribute key of 65 characters', { attributes: { ['k'.repeat(65)]: 'v' } }, [`attributes.${'k'.repeat(65)}:invalid_key`]],
    ];
    for (const [name, change, expected] of refused) {
      it(`refuses ${name}`, () => {
        assert.deepEqual(
          errorsOf(() => validateNewProduct({ ...VALID, ...change })),
          expected,
        );
      });
    }

    it('counts characters, not UTF-16 units, in the title', () => {
      assert.equal(validateNewProduct({ ...VALID, title: '🧦'.repeat(255) }).title.length, 510);
    });

    it('refuses a body that is not an object', () => {
      assert.deepEqual(
        errorsOf(() => validateNewProduct([VALID])),
        ['(body):invalid_type'],
      );
      assert.deepEqual(
        errorsOf(() => validateNewProduct(null)),
        ['(body):invalid_type'],
      );
      assert.deepEqual(
        errorsOf(() => validateNewProduct(undefined)),
        ['(body):required'],
      );
    });
  });

  describe('validateProductChanges', () => {
    it('returns only the fields sent', () => {
      assert.deepEqual(validateProductChanges({ title: 'New' }, existing()), { title: 'New' });
      assert.deepEqual(validateProductChanges({}, existing()), {});
    });

    it('checks a new price against the current currency', () => {
      assert.deepEqual(validateProductChanges({ price: '5' }, existing()), { price: '5.00' });
      assert.deepEqual(
        errorsOf(() => validateProductChanges({ price: '5.5' }, existing({ currency: 'JPY', price: '5' }))),
        ['price:too_many_decimals'],
      );
    });

    it('checks a new price against a new currency sent with it', () => {
      assert.deepEqual(validateProductChanges({ price: '2500', currency: 'JPY' }, existing()), { price: '2500', currency: 'JPY' });
    });

    it('re-expresses the stored price in a new currency when it is exact there', () => {
      assert.deepEqual(validateProductChanges({ currency: 'JPY' }, existing({ price: '20.00' })), { currency: 'JPY', price: '20' });
      assert.deepEqual(validateProductChanges({ currency: 'KWD' }, existing({ price: '20.50' })), { currency: 'KWD', price: '20.500' });
    });

    it('refuses a new currency in which the stored price is inexact', () => {
      assert.deepEqual(
        errorsOf(() => validateProductChanges({ currency: 'JPY' }, existing({ price: '19.99' }))),
        ['price:too_many_decimals'],
      );
    });

    it('refuses null for required fields and accepts it for the nullable ones', () => {
      assert.deepEqual(
        errorsOf(() => validateProductChanges({ title: null, sku: null, price: null }, existing())),
        ['price:invalid_decimal', 'sku:invalid_type', 'title:invalid_type'],
      );
      assert.deepEqual(validateProductChanges({ description: null, inventory_quantity: null }, existing()), { description: null, inventoryQuantity: null });
    });

    it('accepts any status (the transition is checked separately) but no unknown one', () => {
      assert.deepEqual(validateProductChanges({ status: 'archived' }, existing()), { status: 'archived' });
      assert.deepEqual(
        errorsOf(() => validateProductChanges({ status: 'deleted' }, existing())),
        ['status:invalid_value'],
      );
    });

    it('refuses fields that are not product fields, such as version', () => {
      assert.deepEqual(
        errorsOf(() => validateProductChanges({ version: 3, id: 'x' }, existing())),
        ['id:unknown_field', 'version:unknown_field'],
      );
    });
  });

  describe('assertTransition', () => {
    const allowed: [ProductStatus, ProductStatus][] = [
      ['draft', 'active'],
      ['active', 'archived'],
      ['archived', 'active'],
      ['draft', 'draft'],
      ['active', 'active'],
      ['archived', 'archived'],
    ];
    const refused: [ProductStatus, ProductStatus][] = [
      ['draft', 'archived'],
      ['active', 'draft'],
      ['archived', 'draft'],
    ];
    for (const [from, to] of allowed) it(`allows ${from} → ${to}`, () => assertTransition(from, to));
    for (const [from, to] of refused) {
      it(`refuses ${from} → ${to} as a conflict`, () => {
        assert.throws(
          () => assertTransition(from, to),
          (error: unknown) => error instanceof Conflict && error.message.includes(`${from} product cannot become ${to}`),
        );
      });
    }
  });

  describe('effectiveChanges', () => {
    it('drops fields whose value does not change', () => {
      assert.deepEqual(effectiveChanges(existing(), { title: 'Title', price: '19.99', description: null, status: 'active' }), {});
    });

    it('keeps fields that do change, including to and from null', () => {
      assert.deepEqual(effectiveChanges(existing(), { title: 'Other', description: 'now set', inventoryQuantity: 0 }), {
        title: 'Other',
        description: 'now set',
        inventoryQuantity: 0,
      });
      assert.deepEqual(effectiveChanges(existing({ inventoryQuantity: 3 }), { inventoryQuantity: null }), { inventoryQuantity: null });
    });

    it('compares attribute maps whatever their key order', () => {
      assert.deepEqual(effectiveChanges(existing(), { attributes: { color: 'black', size: 'M' } }), {});
      assert.deepEqual(effectiveChanges(existing(), { attributes: { color: 'black', size: 'L' } }), { attributes: { color: 'black', size: 'L' } });
      assert.deepEqual(effectiveChanges(existing(), { attributes: { color: 'black' } }), { attributes: { color: 'black' } });
      assert.deepEqual(effectiveChanges(existing(), { attributes: { color: 'black', size: 'M', fit: 'slim' } }), {
        attributes: { color: 'black', size: 'M', fit: 'slim' },
      });
      assert.deepEqual(effectiveChanges(existing({ attributes: {} }), { attributes: {} }), {});
    });
  });
});
