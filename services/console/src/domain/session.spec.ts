import assert from 'node:assert/strict';
import { needsRefresh, safeReturnPath, sessionIsLive } from './session.js';
import { Sealer } from './sealing.js';

describe('console sessions', () => {
  it('returns only to paths inside the console after sign-in (no open redirect)', () => {
    assert.equal(safeReturnPath('/console/webhooks?status=dead'), '/console/webhooks?status=dead');
    for (const hostile of [
      'https://evil.example/console',
      '//evil.example/console',
      '/\\evil.example',
      '/docs',
      '/console\r\nSet-Cookie: x',
      undefined,
      ['/console'],
      '/console/../oauth/token',
    ]) {
      const path = safeReturnPath(hostile);
      assert.ok(path.startsWith('/console') && !path.startsWith('//') && !path.includes('..') && !path.includes('\n'), `${String(hostile)} → ${path}`);
    }
  });

  it('ends idle sessions and sessions past their absolute end', () => {
    const now = new Date('2026-01-01T12:00:00Z');
    assert.equal(sessionIsLive({ lastSeenAt: new Date('2026-01-01T11:30:00Z'), expiresAt: new Date('2026-01-01T20:00:00Z') }, now, 3600), true);
    assert.equal(sessionIsLive({ lastSeenAt: new Date('2026-01-01T10:30:00Z'), expiresAt: new Date('2026-01-01T20:00:00Z') }, now, 3600), false, 'idle');
    assert.equal(sessionIsLive({ lastSeenAt: now, expiresAt: now }, now, 3600), false, 'past its end');
  });

  it('refreshes an access token a minute before it expires', () => {
    const now = new Date('2026-01-01T12:00:00Z');
    assert.equal(needsRefresh({ accessExpiresAt: new Date('2026-01-01T12:05:00Z') }, now), false);
    assert.equal(needsRefresh({ accessExpiresAt: new Date('2026-01-01T12:00:59Z') }, now), true);
  });

  it('seals tokens so that only the same secret opens them, and a changed byte opens nothing', () => {
    const sealer = new Sealer('a'.repeat(43));
    const sealed = sealer.seal('refresh-token-value');
    assert.ok(!sealed.includes('refresh-token-value'));
    assert.notEqual(sealer.seal('refresh-token-value'), sealed, 'a fresh nonce each time');
    assert.equal(sealer.unseal(sealed), 'refresh-token-value');
    assert.equal(new Sealer('b'.repeat(43)).unseal(sealed), undefined);
    const [iv, tag, body] = sealed.split('.');
    const flipped = Buffer.from(body!, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    assert.equal(sealer.unseal([iv, tag, flipped.toString('base64url')].join('.')), undefined);
    assert.equal(sealer.unseal('not sealed'), undefined);
  });
});
