import assert from 'node:assert/strict';
import { Browser, formAction, hiddenField } from '@merx/kit/testing';

export { Browser, formAction, hiddenField } from '@merx/kit/testing';

/**
 * Registers an app and installs it for `owner` through the real login and consent pages, as
 * the merchant's browser would; the code is left unexchanged. For tests that need an installed app.
 */
export async function installTestApp(
  stack: { baseUrl: string; operatorToken: string },
  owner: { ownerEmail: string; ownerPassword: string },
  scopes = ['products:read'],
): Promise<{ appId: string; clientId: string }> {
  const redirectUri = 'http://127.0.0.1:9/callback';
  const registered = await fetch(`${stack.baseUrl}/admin/v1/apps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Fixture app', redirect_uris: [redirectUri], scopes }),
  });
  const app = (await registered.json()) as { id: string; client_id: string };
  assert.equal(registered.status, 201, JSON.stringify(app));
  const { createHash, randomBytes } = await import('node:crypto');
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const authorize = `/oauth/auth?${new URLSearchParams({ response_type: 'code', client_id: app.client_id, redirect_uri: redirectUri, scope: scopes.join(' '), state: 'fixture', code_challenge: challenge, code_challenge_method: 'S256' })}`;
  const browser = new Browser(stack.baseUrl);
  const login = await browser.navigate(authorize);
  const consent = await browser.navigate(formAction(login.text, '/login'), {
    method: 'POST',
    form: { csrf: hiddenField(login.text, 'csrf'), email: owner.ownerEmail, password: owner.ownerPassword },
  });
  const landed = await browser.navigate(formAction(consent.text, '/confirm'), { method: 'POST', form: { csrf: hiddenField(consent.text, 'csrf') } });
  assert.ok(
    landed.location?.startsWith(redirectUri) && new URL(landed.location).searchParams.has('code'),
    `installing the fixture app failed: ${landed.status}`,
  );
  return { appId: app.id, clientId: app.client_id };
}
