import assert from 'node:assert/strict';
import { canonicalJson } from './canonical-json.js';

describe('canonicalJson (RFC 8785)', () => {
  it('sorts members, drops whitespace and undefined members, keeps arrays in order', () => {
    assert.equal(canonicalJson({ b: 1, a: [3, { d: true, c: null }], u: undefined }), '{"a":[3,{"c":null,"d":true}],"b":1}');
  });
  it('serialises numbers and strings the ECMAScript way (the RFC 8785 test vectors)', () => {
    // The RFC's vector is written with more digits than a double holds, on purpose.
    // eslint-disable-next-line no-loss-of-precision
    assert.equal(canonicalJson({ numbers: [333333333.33333329, 1e30, 4.5, 0.002, 0.000001] }), '{"numbers":[333333333.3333333,1e+30,4.5,0.002,0.000001]}');
    assert.equal(canonicalJson({ string: '€$\u000f\nA\'B"\\\\"/' }), '{"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}');
  });
  it('sorts keys by UTF-16 code units, not by locale', () => {
    assert.equal(canonicalJson({ '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3, '1': 4, é: 5 }), '{"\\r":2,"1":4,"é":5,"\u20ac":1,"\ud83d\ude00":3}');
  });
  it('gives the same text however many distinct member names it has seen (more than it remembers quoted)', () => {
    const names = Array.from({ length: 5_000 }, (_, n) => `k${n}"\\${n % 7 === 0 ? '\u2028' : ''}`);
    const wide = Object.fromEntries(names.map((name, n) => [name, n]));
    const expected = `{${[...names]
      .sort()
      .map((name) => `${JSON.stringify(name)}:${wide[name]}`)
      .join(',')}}`;
    assert.equal(canonicalJson(wide), expected);
    assert.equal(canonicalJson(wide), expected, 'the second time, from remembered names, too');
    assert.equal(canonicalJson([undefined, () => 1, { f: () => 1, u: undefined, d: new Date(0) }]), '[null,null,{"d":"1970-01-01T00:00:00.000Z","f":null}]');
  });
  it('refuses non-finite numbers', () => {
    assert.throws(() => canonicalJson({ n: Number.NaN }), TypeError);
  });
});
