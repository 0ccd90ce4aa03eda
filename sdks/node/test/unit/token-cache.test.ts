// The token cache's timing on a clock of our own: the integration tests see 10 s tokens (the
// half-lifetime rule); these check the minute-before-expiry rule of real 15-minute tokens.
import assert from 'node:assert/strict';
import { TokenCache, type StoredToken } from '../../src/core/tokens.js';

describe('TokenCache', () => {
  let now: number;
  let exchanges: number;
  const exchange = async () => {
    exchanges += 1;
    return { accessToken: `token-${exchanges}`, expiresIn: 900 };
  };

  beforeEach(() => {
    now = 1_000_000;
    exchanges = 0;
  });

  it('reuses a 15-minute token until a minute before it expires', async () => {
    const cache = new TokenCache(exchange, undefined, () => now);
    assert.equal(await cache.get(), 'token-1');
    now += 839_000;
    assert.equal(await cache.get(), 'token-1');
    now += 1_000; // 840 s: 60 s before expiry
    assert.equal(await cache.get(), 'token-2');
  });

  it('shares one exchange between concurrent callers, and a failed one is not cached', async () => {
    let fail = true;
    const cache = new TokenCache(
      async () => {
        exchanges += 1;
        if (fail) throw new Error('token endpoint down');
        return { accessToken: 'ok', expiresIn: 900 };
      },
      undefined,
      () => now,
    );
    const results = await Promise.allSettled([cache.get(), cache.get(), cache.get()]);
    assert.deepEqual(
      results.map((result) => result.status),
      ['rejected', 'rejected', 'rejected'],
    );
    assert.equal(exchanges, 1);
    fail = false;
    assert.deepEqual(await Promise.all([cache.get(), cache.get()]), ['ok', 'ok']);
    assert.equal(exchanges, 2);
  });

  it('invalidate drops only the token it names', async () => {
    const cache = new TokenCache(exchange, undefined, () => now);
    await cache.get();
    cache.invalidate('token-0');
    assert.equal(await cache.get(), 'token-1');
    cache.invalidate('token-1');
    assert.equal(await cache.get(), 'token-2');
  });

  it('reads the store once, uses a stored token until its refreshAt, and saves each new one', async () => {
    const saved: StoredToken[] = [];
    let loads = 0;
    const store = {
      load: () => {
        loads += 1;
        return { accessToken: 'stored', expiresAt: now + 120_000, refreshAt: now + 60_000 };
      },
      save: (token: StoredToken) => void saved.push(token),
    };
    const cache = new TokenCache(exchange, store, () => now);
    assert.equal(await cache.get(), 'stored');
    now += 60_000;
    assert.equal(await cache.get(), 'token-1');
    assert.equal(loads, 1);
    assert.deepEqual(saved, [{ accessToken: 'token-1', expiresAt: now + 900_000, refreshAt: now + 840_000 }]);
  });
});
