import { scopeNames } from '@merx/contracts';
import { fieldPath, schemaErrors, ValidationFailed } from '@merx/kit';

export interface ApiKeyRecord {
  id: string;
  merchantId: string;
  name: string;
  /** The OAuth client id `mx_<mode>_<keyid>`, safe to show: it identifies but cannot authenticate. */
  clientId: string;
  secretHash: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface NewApiKey {
  name: string;
  scopes: string[];
}

/**
 * The structure (name, a non-empty list of distinct Merx scopes, nothing else) is the OpenAPI
 * schema's, the same check the HTTP edge runs. What a schema cannot say stays here: a name of
 * spaces alone, and that a key never holds more than the token that creates it (otherwise a narrow
 * key with `api_keys:write` could mint itself a key with every scope).
 */
export function validateNewApiKey(input: unknown, callerScopes: ReadonlySet<string>): NewApiKey {
  const errors = schemaErrors('ApiKeyCreate', input);
  if (errors.some((error) => error.field === '(body)')) throw new ValidationFailed(errors);
  const { name, scopes } = input as { name?: unknown; scopes?: unknown };
  if (typeof name === 'string' && name.length > 0 && name.trim().length === 0)
    errors.push({ field: 'name', code: 'too_short', message: 'name must not be blank' });
  if (Array.isArray(scopes)) {
    scopes.forEach((scope, index) => {
      if (typeof scope === 'string' && (scopeNames as readonly string[]).includes(scope) && !callerScopes.has(scope)) {
        errors.push({
          field: fieldPath('scopes', index),
          code: 'scope_not_held',
          message: `a key cannot get ${scope}: the token creating it does not hold it`,
        });
      }
    });
  }
  if (errors.length > 0) throw new ValidationFailed(errors);
  // Catalogue order, so the same set of scopes always looks the same.
  return { name: name as string, scopes: scopeNames.filter((scope) => (scopes as string[]).includes(scope)) };
}

export function presentApiKey(key: ApiKeyRecord, secret?: string) {
  return {
    id: key.id,
    object: 'api_key' as const,
    name: key.name,
    prefix: key.clientId,
    scopes: key.scopes,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt ? key.lastUsedAt.toISOString() : null,
    revoked_at: key.revokedAt ? key.revokedAt.toISOString() : null,
    ...(secret === undefined ? {} : { secret }),
  };
}
