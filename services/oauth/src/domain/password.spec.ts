import assert from 'node:assert/strict';
import { generatePassword, hashPassword, verifyPassword } from './password.js';

describe('password hashing (scrypt)', () => {
  it('verifies the right password and refuses a wrong one, with the parameters in the hash', async () => {
    const hash = await hashPassword('correct horse battery');
    assert.match(hash, /^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.equal(await verifyPassword('correct horse battery', hash), true);
    assert.equal(await verifyPassword('correct horse battery!', hash), false);
  });

  it('salts every hash and keeps old cost parameters verifiable', async () => {
    const cheap = { N: 1024, r: 8, p: 1 };
    const [a, b] = [await hashPassword('same password', cheap), await hashPassword('same password', cheap)];
    assert.notEqual(a, b);
    assert.equal(await verifyPassword('same password', a), true);
    assert.match(a, /^scrypt\$1024\$/);
  });

  it('treats malformed stored values as a mismatch', async () => {
    for (const stored of ['', 'bcrypt$x', 'scrypt$0$8$1$AAAA$AAAA', 'scrypt$1024$8$1$AAAA$']) {
      assert.equal(await verifyPassword('anything long', stored), false);
    }
  });

  it('generates long random passwords', () => {
    const password = generatePassword();
    assert.match(password, /^[0-9A-Za-z]{24}$/);
    assert.notEqual(password, generatePassword());
  });
});
