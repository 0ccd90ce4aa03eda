import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { createJwksCache, createTokenVerifier, Unavailable } from '../src/index.js';

const ISSUER = 'http://localhost:8080/oauth';
const AUDIENCE = 'urn:merx:api';

async function signingKey(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const sign = () =>
    new SignJWT({ merchant_id: 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g', client_id: 'mx_test_4fJk2LmN8pQr', scope: 'products:read' })
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
  return { jwk, sign };
}

describe('signing keys through an outage of the service that publishes them', () => {
  let server: Server;
  let published: JWK[] = [];
  let fetches = 0;
  let url = '';

  beforeEach(async () => {
    fetches = 0;
    server = createServer((_req, res) => {
      fetches += 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/jwks`;
  });
  afterEach(() => new Promise((resolve) => server.close(resolve)));

  it('fetches the keys at once, and keeps verifying with them while the publisher is down', async () => {
    const current = await signingKey('k1');
    published = [current.jwk];
    const keys = createJwksCache({ url });
    await keys.refresh();
    const verifier = createTokenVerifier(keys, { issuer: ISSUER, audience: AUDIENCE });
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await keys.refresh().then(
      () => assert.fail('the publisher is down'),
      () => undefined,
    );
    const claims = await verifier.verify(await current.sign());
    assert.equal(claims.clientId, 'mx_test_4fJk2LmN8pQr', 'the last keys fetched still verify');
    keys.close();
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  it("fetches again for a key id it has not seen (a rotation's next key)", async () => {
    const first = await signingKey('k1');
    const next = await signingKey('k2');
    published = [first.jwk];
    const keys = createJwksCache({ url, cooldownMs: 0 });
    await keys.refresh();
    const verifier = createTokenVerifier(keys, { issuer: ISSUER, audience: AUDIENCE });
    published = [first.jwk, next.jwk];
    const before = fetches;
    await verifier.verify(await next.sign());
    assert.equal(fetches, before + 1);
    keys.close();
  });

  it('answers Unavailable, not Unauthenticated, when it never had keys and cannot fetch them', async () => {
    const keys = createJwksCache({ url: 'http://127.0.0.1:9/oauth/jwks', fetchTimeoutMs: 500 });
    const verifier = createTokenVerifier(keys, { issuer: ISSUER, audience: AUDIENCE });
    await assert.rejects(verifier.verify(await (await signingKey('k1')).sign()), (error: unknown) => error instanceof Unavailable);
    keys.close();
  });
});
