import assert from 'node:assert/strict';
import { generateApiKey, hashApiKey, parseApiKey, parseClientId, randomBase62, verifyApiKey } from './api-keys.js';

describe('api keys', () => {
  it('generates mx_<mode>_<keyid>_<secret> with a 16-char key id and a 32-char secret', () => {
    for (const mode of ['test', 'live'] as const) {
      const key = generateApiKey(mode);
      assert.match(key.keyId, /^[0-9A-Za-z]{16}$/);
      assert.equal(key.clientId, `mx_${mode}_${key.keyId}`);
      assert.match(key.apiKey, new RegExp(`^${key.clientId}_[0-9A-Za-z]{32}$`));
      assert.equal(key.prefix, key.clientId);
      assert.ok(!key.prefix.includes(key.apiKey.slice(-32)));
    }
  });

  it('never repeats and uses the whole base62 alphabet evenly enough', () => {
    const sample = randomBase62(62 * 4000);
    const counts = new Map<string, number>();
    for (const char of sample) counts.set(char, (counts.get(char) ?? 0) + 1);
    assert.equal(counts.size, 62);
    // Each character is expected 4000 times (sd ~63); `byte % 62` would give the first eight ~4840.
    for (const count of counts.values()) assert.ok(count > 3600 && count < 4400, `count ${count}`);
    assert.notEqual(generateApiKey('test').apiKey, generateApiKey('test').apiKey);
  });

  it('parses a key back into its parts and rejects anything else', () => {
    const { apiKey, keyId, clientId } = generateApiKey('live');
    assert.deepEqual(parseApiKey(apiKey), { mode: 'live', keyId, clientId, secret: apiKey.slice(-32) });
    assert.deepEqual(parseClientId(clientId), { mode: 'live', keyId });
    for (const bad of ['', clientId, `${apiKey}x`, apiKey.replace('mx_live_', 'mx_prod_'), apiKey.replace(/.$/, '-'), ` ${apiKey}`]) {
      assert.equal(parseApiKey(bad), undefined, bad);
    }
    assert.equal(parseClientId(`${clientId}_`), undefined);
  });

  it('hashes with SHA-256 and verifies in constant time', () => {
    const { apiKey } = generateApiKey('test');
    const hash = hashApiKey(apiKey);
    assert.match(hash, /^[0-9a-f]{64}$/);
    assert.equal(verifyApiKey(apiKey, hash), true);
    assert.equal(verifyApiKey(generateApiKey('test').apiKey, hash), false);
    assert.equal(verifyApiKey(apiKey, hash.toUpperCase()), false);
    assert.equal(verifyApiKey(apiKey, 'not-a-hash'), false);
    assert.equal(verifyApiKey(apiKey, ''), false);
  });
});
