import assert from 'node:assert/strict';
import { canonicalPath } from './canonical-path.js';

describe('canonical request paths', () => {
  it('decodes escaped unreserved characters and upper-cases the other escapes, keeping case', () => {
    assert.deepEqual(canonicalPath('/api/v1/sandbox/r%65set'), { path: '/api/v1/sandbox/reset' });
    assert.deepEqual(canonicalPath('/api/v1/sandbox/%52ESET'), { path: '/api/v1/sandbox/RESET' });
    assert.deepEqual(canonicalPath('/api/v1/products/prod_1%3a'), { path: '/api/v1/products/prod_1%3A' });
    assert.deepEqual(canonicalPath('/api/v1/products/'), { path: '/api/v1/products/' });
    assert.deepEqual(canonicalPath('/'), { path: '/' });
  });

  it('refuses the forms parsers disagree on', () => {
    for (const path of [
      '/api/v1/webhooks%2Fsubscriptions',
      '/api/v1/x%5Cy',
      '/api/v1/products/%00',
      '/api//v1',
      '/api/v1/./sandbox/reset',
      '/api/v1/x/../sandbox/reset',
      '/api/v1/%2e%2e/sandbox/reset',
      '/a\\b',
      '/api/v1/100%',
      'api/v1',
    ]) {
      assert.ok('refused' in canonicalPath(path), path);
    }
  });
});
