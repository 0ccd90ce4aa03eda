import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createTokenVerifier } from '@merx/kit';

/** The issuer the gateway's tests sign as: the oauth service behind a gateway at localhost:8080. */
export const TEST_ISSUER = 'http://localhost:8080/oauth';

export interface TestTokens {
  /** An access token with these claims, as the oauth service would issue it, valid for five minutes. */
  sign(claims: Record<string, unknown>): Promise<string>;
  /** A verifier that trusts only this signer's key. */
  verifier: ReturnType<typeof createTokenVerifier>;
}

/** A fresh ES256 key: tokens signed with it and the verifier that accepts them (and no others). */
export async function testTokens(): Promise<TestTokens> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'test', alg: 'ES256' };
  return {
    sign: (claims) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'test', typ: 'at+jwt' })
        .setIssuer(TEST_ISSUER)
        .setAudience('urn:merx:api')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey),
    verifier: createTokenVerifier(createLocalJWKSet({ keys: [publicJwk] }), { issuer: TEST_ISSUER, audience: 'urn:merx:api' }),
  };
}
