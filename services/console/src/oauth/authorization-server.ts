import { CONSOLE_CLIENT_ID, consoleRedirectUri, scopeNames } from '@merx/contracts';
import { issuerOf } from '@merx/kit';
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import type { SessionTokens } from '../domain/session.js';

export interface AuthorizationServerOptions {
  publicUrl: string;
  /** The oauth service on the service network: the token and revocation endpoints are called there. */
  oauthUrl: string;
  clientSecret: string;
}

/** The authorization server refused a refresh (the grant was revoked, the user or merchant can no longer sign in). */
export class SignInEnded extends Error {
  constructor(readonly reason: string) {
    super(`the sign-in ended: ${reason}`);
    this.name = 'SignInEnded';
  }
}

/**
 * The console's side of authorization code + PKCE, through openid-client. The browser is sent to
 * the public authorization endpoint (the login page); the code exchange, refreshes and revocation
 * go straight to the oauth service from the server, the way a backend-for-frontend keeps tokens
 * out of the browser. Those back-channel calls skip the gateway's per-client token throttle, which
 * would otherwise make every merchant's console share one budget of 10 a minute.
 */
export class AuthorizationServer {
  readonly #config: client.Configuration;
  readonly redirectUri: string;

  constructor(options: AuthorizationServerOptions) {
    const issuer = issuerOf(options.publicUrl);
    this.redirectUri = consoleRedirectUri(options.publicUrl);
    this.#config = new client.Configuration(
      {
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${options.oauthUrl}/oauth/token`,
        revocation_endpoint: `${options.oauthUrl}/oauth/token/revocation`,
        // oidc-provider names itself in the authorization response (RFC 9207); openid-client checks it.
        authorization_response_iss_parameter_supported: true,
        code_challenge_methods_supported: ['S256'],
      },
      CONSOLE_CLIENT_ID,
      { redirect_uris: [this.redirectUri] },
      client.ClientSecretBasic(options.clientSecret),
    );
    const plainHttp = [issuer, options.oauthUrl].some((url) => url.startsWith('http:'));
    if (plainHttp) client.allowInsecureRequests(this.#config);
  }

  /** Where to send the browser, and what to keep until it comes back. */
  async beginSignIn(): Promise<{ url: string; state: string; codeVerifier: string }> {
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(this.#config, {
      redirect_uri: this.redirectUri,
      scope: scopeNames.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      // Every console sign-in asks for the password, even while the browser still has a provider
      // session from an earlier one: signing out of the console must mean signed out.
      prompt: 'login',
    });
    return { url: url.toString(), state, codeVerifier };
  }

  /** The code from the callback URL (as the browser requested it) for tokens. */
  async finishSignIn(callbackUrl: URL, expected: { state: string; codeVerifier: string }): Promise<SessionTokens> {
    const response = await client.authorizationCodeGrant(this.#config, callbackUrl, {
      expectedState: expected.state,
      pkceCodeVerifier: expected.codeVerifier,
      idTokenExpected: false,
    });
    return tokensOf(response);
  }

  async refresh(refreshToken: string): Promise<SessionTokens> {
    try {
      return tokensOf(await client.refreshTokenGrant(this.#config, refreshToken));
    } catch (error) {
      if (error instanceof client.ResponseBodyError && (error.error === 'invalid_grant' || error.error === 'invalid_client'))
        throw new SignInEnded(error.error);
      throw error;
    }
  }

  /** Revoking the refresh token ends the whole grant at the authorization server. */
  async revoke(refreshToken: string): Promise<void> {
    await client.tokenRevocation(this.#config, refreshToken, { token_type_hint: 'refresh_token' });
  }
}

function tokensOf(response: client.TokenEndpointResponse): SessionTokens {
  // The token came straight from the authorization server over the back channel: its claims are
  // read, not verified (the gateway and every service verify it on each API call).
  const claims = decodeJwt(response.access_token);
  if (typeof claims.merchant_id !== 'string' || typeof claims.sub !== 'string' || !response.refresh_token) {
    throw new Error('the authorization server answered without a merchant user token or a refresh token');
  }
  const expiresIn = response.expires_in ?? (typeof claims.exp === 'number' ? claims.exp - Math.floor(Date.now() / 1000) : 0);
  return {
    accessToken: response.access_token,
    accessExpiresAt: new Date(Date.now() + expiresIn * 1000),
    refreshToken: response.refresh_token,
    merchantId: claims.merchant_id,
    userId: claims.sub,
    scopes: typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [],
  };
}
