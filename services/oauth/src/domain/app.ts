import { scopeNames } from '@merx/contracts';
import { fieldPath, schemaErrors, ValidationFailed } from '@merx/kit';

export interface App {
  id: string;
  name: string;
  clientId: string;
  /** `hashClientSecret(secret)`; the secret itself is shown once and never stored. */
  secretHash: string;
  redirectUris: string[];
  scopes: string[];
  createdAt: Date;
}

export interface AppRegistration {
  name: string;
  redirectUris: string[];
  scopes: string[];
}

/** One merchant's grant to one app, as the merchant sees it. */
export interface AppInstallation {
  merchantId: string;
  appId: string;
  appName: string;
  clientId: string;
  grantId: string;
  userId: string;
  scopes: string[];
  installedAt: Date;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** https anywhere; plain http only to the developer's own machine (RFC 8252 loopback redirects). */
export function redirectUriProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 2000) return 'must be an absolute URL of at most 2000 characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.hash) return 'must not have a fragment';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return 'must use https (http only for localhost or 127.0.0.1)';
}

/**
 * The structure (a name, 1-10 redirect URIs, a non-empty list of distinct Merx scopes, nothing
 * else) is the OpenAPI schema's, the same check the HTTP edge runs; the redirect URI policy and a
 * name of spaces alone are what a schema cannot say.
 */
export function validateAppRegistration(input: unknown): AppRegistration {
  const errors = schemaErrors('AppCreate', input);
  if (errors.some((error) => error.field === '(body)')) throw new ValidationFailed(errors);
  const { name, redirect_uris: redirectUris, scopes } = input as { name?: unknown; redirect_uris?: unknown; scopes?: unknown };
  if (typeof name === 'string' && name.length > 0 && name.trim().length === 0)
    errors.push({ field: 'name', code: 'too_short', message: 'name must not be blank' });
  if (Array.isArray(redirectUris)) {
    redirectUris.forEach((uri, index) => {
      const field = fieldPath('redirect_uris', index);
      // A URI the schema already refused (not a string, too long, not a URI) is named once.
      if (errors.some((error) => error.field === field)) return;
      const problem = redirectUriProblem(uri);
      if (problem) errors.push({ field, code: 'invalid_redirect_uri', message: `redirect URI ${problem}` });
    });
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
  return {
    name: (name as string).trim(),
    redirectUris: [...new Set(redirectUris as string[])],
    scopes: scopeNames.filter((scope) => (scopes as string[]).includes(scope)),
  };
}

export function presentApp(app: App, clientSecret?: string) {
  return {
    id: app.id,
    object: 'app' as const,
    name: app.name,
    client_id: app.clientId,
    ...(clientSecret === undefined ? {} : { client_secret: clientSecret }),
    redirect_uris: app.redirectUris,
    scopes: app.scopes,
    created_at: app.createdAt.toISOString(),
  };
}

export function presentInstallation(installation: AppInstallation) {
  return {
    id: installation.appId,
    object: 'installed_app' as const,
    name: installation.appName,
    client_id: installation.clientId,
    scopes: installation.scopes,
    installed_at: installation.installedAt.toISOString(),
  };
}

/** What `apps.grant_revoked` carries: enough for a revocation list to reject that app's tokens for that merchant. */
export function presentRevokedGrant(installation: Pick<AppInstallation, 'appId' | 'clientId' | 'merchantId' | 'scopes'>, revokedAt: Date) {
  return {
    id: installation.appId,
    object: 'app_grant' as const,
    client_id: installation.clientId,
    merchant_id: installation.merchantId,
    scopes: installation.scopes,
    revoked_at: revokedAt.toISOString(),
  };
}
