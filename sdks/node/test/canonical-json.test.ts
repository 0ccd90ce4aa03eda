import assert from 'node:assert/strict';
import { webhooks } from '@merx/sdk';
import { canonicalJson as serverCanonicalJson } from '@merx/kit';

describe('canonical JSON: the same text the server signs for hmac_sha256', () => {
  // Parsed from text, as a receiver has them: key order, escapes, numbers and odd member names.
  const samples = [
    '{"b":1,"a":[3,2,{"z":null,"y":true}],"c":"x"}',
    '{"\\u00e9":1,"e":2,"\\ud83d\\ude00":3,"\\uff61":4,"":5}',
    '{"n":[1.0,1e21,1e-7,-0,0.1,123456789012345678901234567890,5e-324]}',
    '{"__proto__":{"polluted":true},"constructor":"c","toString":"t"}',
    '{"s":"line\\nbreak \\"quoted\\" \\u0001 \\u2028 tab\\t","nested":{"b":{"d":1,"c":2},"a":[]}}',
  ];

  for (const text of samples) {
    it(`matches @merx/kit for ${text.slice(0, 40)}`, () => {
      const parsed: unknown = JSON.parse(text);
      assert.equal(webhooks.canonicalJson(parsed), serverCanonicalJson(parsed));
    });
  }

  it('keeps a parsed "__proto__" member as a member', () => {
    assert.equal(webhooks.canonicalJson(JSON.parse('{"__proto__":{"x":1},"a":2}')), '{"__proto__":{"x":1},"a":2}');
  });
});
