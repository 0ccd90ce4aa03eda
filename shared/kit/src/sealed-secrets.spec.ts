import assert from 'node:assert/strict';
import { configFields, loadConfig, ConfigError, z } from './config.js';
import { isSealed, newSecretKeyEntry, SecretKeyRing, SecretKeyRingError, sealedKeyId, UnsealError } from './sealed-secrets.js';

const secret = 'whsec_dGhpcyBpcyBhIHRlc3Qgc2lnbmluZyBzZWNyZXQ=';
const row = { merchantId: 'mch_a', recordId: 'wh_1' };

describe('sealed secrets', () => {
  const oldEntry = newSecretKeyEntry('old');
  const newEntry = newSecretKeyEntry('new');

  it('seals into a self-describing value that holds no plaintext and opens again', () => {
    const ring = SecretKeyRing.parse(oldEntry);
    const sealed = ring.seal(secret, row);
    assert.ok(sealed.startsWith('sealed:v1:old:'), sealed);
    assert.ok(!sealed.includes('whsec_'));
    assert.notEqual(ring.seal(secret, row), sealed, 'a fresh IV per seal');
    assert.equal(ring.open(sealed, row), secret);
    assert.equal(sealedKeyId(sealed), 'old');
  });

  it('reads a value without the sealed: prefix as plaintext (rows from before sealing)', () => {
    assert.equal(SecretKeyRing.parse(oldEntry).open(secret, row), secret);
    assert.equal(isSealed(secret), false);
  });

  it('refuses a value sealed under a key the ring does not list', () => {
    const sealed = SecretKeyRing.parse(oldEntry).seal(secret, row);
    assert.throws(
      () => SecretKeyRing.parse(newEntry).open(sealed, row),
      (error: Error) => error instanceof UnsealError && /key old/.test(error.message),
    );
  });

  it('refuses a key id that names other key bytes', () => {
    const sealed = SecretKeyRing.parse(oldEntry).seal(secret, row);
    assert.throws(() => SecretKeyRing.parse(newSecretKeyEntry('old')).open(sealed, row), UnsealError);
  });

  it('refuses tampered ciphertext', () => {
    const ring = SecretKeyRing.parse(oldEntry);
    const sealed = ring.seal(secret, row);
    const bytes = Buffer.from(sealed.split(':')[3]!, 'base64url');
    bytes[14] = bytes[14]! ^ 0x01;
    assert.throws(() => ring.open(`sealed:v1:old:${bytes.toString('base64url')}`, row), UnsealError);
    assert.throws(() => ring.open('sealed:v1:old:AAAA', row), UnsealError);
  });

  it('does not open for another record (the identity is associated data)', () => {
    const ring = SecretKeyRing.parse(oldEntry);
    const sealed = ring.seal(secret, row);
    assert.throws(() => ring.open(sealed, { merchantId: 'mch_b', recordId: 'wh_1' }), UnsealError);
    assert.throws(() => ring.open(sealed, { merchantId: 'mch_a', recordId: 'wh_2' }), UnsealError);
  });

  it('rotates: a new key first seals, the old one still opens, reseal moves values to the new key', () => {
    const before = SecretKeyRing.parse(oldEntry).seal(secret, row);
    const rotating = SecretKeyRing.parse(`${newEntry},${oldEntry}`);
    assert.equal(rotating.activeKeyId, 'new');
    assert.equal(rotating.open(before, row), secret);
    assert.equal(rotating.isCurrent(before), false);
    const resealed = rotating.reseal(before, row);
    assert.equal(sealedKeyId(resealed), 'new');
    assert.equal(rotating.reseal(resealed, row), resealed, 'a current value is left alone');
    assert.equal(sealedKeyId(rotating.reseal(secret, row)), 'new', 'plaintext is sealed');
    // Once everything is resealed, the old key can go.
    assert.equal(SecretKeyRing.parse(newEntry).open(resealed, row), secret);
  });

  it('combines rings: the first seals, keys of both open, one id never names two keys', () => {
    const sealedOld = SecretKeyRing.parse(oldEntry).seal(secret, row);
    const combined = SecretKeyRing.combine(SecretKeyRing.parse(newEntry), SecretKeyRing.parse(oldEntry));
    assert.equal(combined.activeKeyId, 'new');
    assert.equal(combined.open(sealedOld, row), secret);
    assert.throws(() => SecretKeyRing.combine(SecretKeyRing.parse(newEntry), SecretKeyRing.parse(newSecretKeyEntry('new'))), SecretKeyRingError);
  });

  it('rejects malformed key rings with a message that names the problem and never the key', () => {
    const schema = z.object({ MERX_SECRETS_KEYS: configFields.secretKeys });
    const problemOf = (value: string | undefined) => {
      try {
        loadConfig('webhooks', schema, { MERX_SECRETS_KEYS: value });
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        return error.message;
      }
      assert.fail(`accepted ${value}`);
    };
    assert.match(problemOf(undefined), /MERX_SECRETS_KEYS is required/);
    assert.match(problemOf('k1:c2hvcnQ='), /MERX_SECRETS_KEYS .*key k1 must be base64 of exactly 32 bytes/);
    assert.match(problemOf(Buffer.alloc(32).toString('base64')), /entry 1 must be keyId:base64/);
    assert.match(problemOf(`${oldEntry},${oldEntry}`), /key id old appears twice/);
    assert.match(problemOf(' , '), /lists no key/);
    assert.ok(!problemOf(`${oldEntry},bad key:xx`).includes(oldEntry.split(':')[1]!));
    const config = loadConfig('webhooks', schema, { MERX_SECRETS_KEYS: `${newEntry}, ${oldEntry}` });
    assert.deepEqual(config.MERX_SECRETS_KEYS.keyIds, ['new', 'old']);
  });
});
