import assert from 'node:assert/strict';
import { canonicalPrice, formatAmount, isCurrency, minorUnitsOf, parseAmount } from './money.js';

describe('money', () => {
  it('knows the minor units of each currency', () => {
    assert.equal(minorUnitsOf('JPY'), 0);
    assert.equal(minorUnitsOf('USD'), 2);
    assert.equal(minorUnitsOf('EUR'), 2);
    assert.equal(minorUnitsOf('KWD'), 3);
    assert.equal(minorUnitsOf('CLF'), 4);
    assert.equal(minorUnitsOf('XXX'), undefined);
    assert.equal(minorUnitsOf('usd'), undefined);
    assert.equal(isCurrency('USD'), true);
    assert.equal(isCurrency('usd'), false);
    assert.equal(isCurrency(840), false);
  });

  it('parses decimal strings into minor units', () => {
    assert.deepEqual(parseAmount('19.99', 'USD'), { minor: 1999n });
    assert.deepEqual(parseAmount('19.9', 'USD'), { minor: 1990n });
    assert.deepEqual(parseAmount('19', 'USD'), { minor: 1900n });
    assert.deepEqual(parseAmount('0', 'USD'), { minor: 0n });
    assert.deepEqual(parseAmount('0.05', 'USD'), { minor: 5n });
    assert.deepEqual(parseAmount('1500', 'JPY'), { minor: 1500n });
    assert.deepEqual(parseAmount('1.234', 'KWD'), { minor: 1234n });
    assert.deepEqual(parseAmount('999999999999999.99', 'USD'), { minor: 99999999999999999n });
  });

  it('refuses strings that are not plain decimals', () => {
    for (const value of ['1e3', '.5', '01', '00', '-1', '-0.5', '+1', '1.', '1,50', ' 1', '1 ', '', 'NaN', 'Infinity', '0x10', '1.2.3', '١٢']) {
      assert.deepEqual(parseAmount(value, 'USD'), { problem: 'invalid_decimal' }, value);
    }
  });

  it('refuses more decimals than the currency has instead of rounding', () => {
    assert.deepEqual(parseAmount('19.999', 'USD'), { problem: 'too_many_decimals', allowedDecimals: 2 });
    assert.deepEqual(parseAmount('100.5', 'JPY'), { problem: 'too_many_decimals', allowedDecimals: 0 });
    assert.deepEqual(parseAmount('100.0', 'JPY'), { problem: 'too_many_decimals', allowedDecimals: 0 });
    assert.deepEqual(parseAmount('1.2345', 'KWD'), { problem: 'too_many_decimals', allowedDecimals: 3 });
  });

  it('refuses amounts with more than 15 integer digits', () => {
    assert.deepEqual(parseAmount('1000000000000000', 'USD'), { problem: 'too_large' });
    assert.deepEqual(parseAmount('1' + '0'.repeat(40), 'JPY'), { problem: 'too_large' });
    assert.ok('minor' in parseAmount('100000000000000', 'USD'));
  });

  it('formats minor units with exactly the currency decimals', () => {
    assert.equal(formatAmount(1999n, 'USD'), '19.99');
    assert.equal(formatAmount(5n, 'USD'), '0.05');
    assert.equal(formatAmount(0n, 'USD'), '0.00');
    assert.equal(formatAmount(1500n, 'JPY'), '1500');
    assert.equal(formatAmount(0n, 'JPY'), '0');
    assert.equal(formatAmount(1n, 'KWD'), '0.001');
    assert.equal(formatAmount(12345n, 'KWD'), '12.345');
  });

  it('round-trips parse and format', () => {
    for (const [value, currency] of [
      ['19.99', 'USD'],
      ['0.01', 'EUR'],
      ['7', 'JPY'],
      ['3.141', 'KWD'],
      ['999999999999999.99', 'USD'],
    ] as const) {
      const parsed = parseAmount(value, currency);
      assert.ok('minor' in parsed);
      assert.equal(formatAmount(parsed.minor, currency), value);
    }
  });

  it('re-expresses stored NUMERIC values with the currency decimals', () => {
    assert.equal(canonicalPrice('19.9900', 'USD'), '19.99');
    assert.equal(canonicalPrice('19.9000', 'USD'), '19.90');
    assert.equal(canonicalPrice('20.0000', 'USD'), '20.00');
    assert.equal(canonicalPrice('0.0000', 'USD'), '0.00');
    assert.equal(canonicalPrice('100', 'USD'), '100.00');
    assert.equal(canonicalPrice('100', 'JPY'), '100');
    assert.equal(canonicalPrice('1500.0000', 'JPY'), '1500');
    assert.equal(canonicalPrice('1.2340', 'KWD'), '1.234');
    assert.throws(() => canonicalPrice('19.9950', 'USD'), /not exact in USD/);
  });

  it('re-expresses prices with many decimals, and refuses the ones that are not exact or too large', () => {
    assert.equal(canonicalPrice('19.99000000000000000000', 'USD'), '19.99');
    assert.equal(canonicalPrice('0.0500', 'USD'), '0.05');
    assert.equal(canonicalPrice('0.5', 'USD'), '0.50');
    assert.equal(canonicalPrice('7.0000', 'JPY'), '7');
    assert.equal(canonicalPrice('1.2345', 'CLF'), '1.2345');
    assert.equal(canonicalPrice('1.2', 'CLF'), '1.2000');
    assert.equal(canonicalPrice('999999999999999.9900', 'USD'), '999999999999999.99');
    assert.equal(canonicalPrice('12.3400', 'XXX'), '12.34', 'a currency we do not know has two decimals, as parseAmount reads it');
    assert.throws(() => canonicalPrice('0.0001', 'USD'), /not exact in USD/);
    assert.throws(() => canonicalPrice('19.5000', 'JPY'), /not exact in JPY/);
    assert.throws(() => canonicalPrice('1.23456', 'CLF'), /not exact in CLF/);
    assert.throws(() => canonicalPrice('1000000000000000.0000', 'USD'), /not exact in USD/);
    assert.throws(() => canonicalPrice('-1.0000', 'USD'), /not exact in USD/);
    assert.throws(() => canonicalPrice('abc', 'USD'), /not exact in USD/);
  });

  it('re-expresses a stored NUMERIC exactly as parsing and formatting its amount would', () => {
    const reference = (numeric: string, currency: string) => {
      const trimmed = numeric.includes('.') ? numeric.replace(/0+$/, '').replace(/\.$/, '') : numeric;
      const parsed = parseAmount(trimmed, currency);
      return 'minor' in parsed ? formatAmount(parsed.minor, currency) : 'refused';
    };
    const integers = ['0', '1', '10', '19', '100', '999999999999999', '1000000000000000', '007'];
    const fractions = ['', '.', '.0', '.5', '.05', '.50', '.0000', '.9900', '.9950', '.1230', '.1234', '.12345', '.10000000'];
    for (const currency of ['USD', 'JPY', 'KWD', 'CLF', 'XXX']) {
      for (const integer of integers) {
        for (const fraction of fractions) {
          const numeric = integer + fraction;
          let actual: string;
          try {
            actual = canonicalPrice(numeric, currency);
          } catch {
            actual = 'refused';
          }
          assert.equal(actual, reference(numeric, currency), `${numeric} ${currency}`);
        }
      }
    }
  });
});
