import assert from 'node:assert/strict';
import { fieldPath } from './errors.js';

describe('fieldPath', () => {
  it('writes members with dots, positions in brackets and odd names quoted in brackets', () => {
    assert.equal(fieldPath('', 'price'), 'price');
    assert.equal(fieldPath('scopes', 0), 'scopes[0]');
    assert.equal(fieldPath('settings', 'url'), 'settings.url');
    assert.equal(fieldPath('records', 2, 'data', 'total'), 'records[2].data.total');
    assert.equal(fieldPath('transform.set', 'customer.email'), 'transform.set["customer.email"]');
    assert.equal(fieldPath('', 'my field'), '["my field"]');
    assert.equal(fieldPath('attributes', 'line-items'), 'attributes.line-items');
    assert.equal(fieldPath('attributes', '2fa'), 'attributes["2fa"]');
    assert.equal(fieldPath('x', 'say "hi"'), 'x["say \\"hi\\""]');
  });
});
