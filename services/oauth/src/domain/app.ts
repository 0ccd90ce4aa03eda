import { scopeNames } from '@merx/contracts';
import { fieldPath, ValidationFailed, type FieldError } from '@merx/kit';

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

const FIELDS = ['name', 'redirect_uris', 'scopes'];
const KNOWN_SCOPES: ReadonlySet<string> = new Set(scopeNames);
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

export function validateAppRegistration(input: unknown): AppRegistration {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  }
  const body = input as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(body)) if (!FIELDS.includes(key)) errors.push({ field: fieldPath('', key), code: 'unknown_field', message: `${key} is not an app field` });
  const { name, redirect_uris: redirectUris, scopes } = body;
  if (typeof name !== 'string' || name.trim().length === 0 || [...name].length > 100) {
    errors.push({ field: 'name', code: name === undefined ? 'required' : 'invalid_value', message: 'name is required: a non-empty string of at most 100 characters' });
  }
  if (!Array.isArray(redirectUris) || redirectUris.length === 0 || redirectUris.length > 10) {
    errors.push({ field: 'redirect_uris', code: redirectUris === undefined ? 'required' : 'invalid_value', message: 'redirect_uris must be a list of 1 to 10 URLs' });
  } else {
    redirectUris.forEach((uri, index) => {
      const problem = redirectUriProblem(uri);
      if (problem) errors.push({ field: fieldPath('redirect_uris', index), code: 'invalid_redirect_uri', message: `redirect URI ${problem}` });
    });
  }
  if (!Array.isArray(scopes) || scopes.length === 0) {
    errors.push({ field: 'scopes', code: scopes === undefined ? 'required' : 'invalid_value', message: 'scopes must be a non-empty list of Merx scopes' });
  } else {
    scopes.forEach((scope, index) => {
      if (typeof scope !== 'string' || !KNOWN_SCOPES.has(scope)) errors.push({ field: fieldPath('scopes', index), code: 'unknown_scope', message: `${String(scope)} is not a Merx scope` });
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
