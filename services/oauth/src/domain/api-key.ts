import { scopeNames } from '@merx/contracts';
import { fieldPath, ValidationFailed, type FieldError } from '@merx/kit';

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

const FIELDS = ['name', 'scopes'];

/**
 * A key never holds more than the token that creates it: otherwise a narrow key with
 * `api_keys:write` could mint itself a key with every scope.
 */
export function validateNewApiKey(input: unknown, callerScopes: ReadonlySet<string>): NewApiKey {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  }
  const body = input as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(body)) if (!FIELDS.includes(key)) errors.push({ field: fieldPath('', key), code: 'unknown_field', message: `${key} is not an API key field` });
  const { name, scopes } = body;
  if (typeof name !== 'string' || name.trim().length === 0) errors.push({ field: 'name', code: name === undefined ? 'required' : 'invalid_type', message: 'name is required: a non-empty string' });
  else if ([...name].length > 255) errors.push({ field: 'name', code: 'too_long', message: 'name must be at most 255 characters' });
  if (!Array.isArray(scopes) || scopes.length === 0) {
    errors.push({ field: 'scopes', code: scopes === undefined ? 'required' : 'invalid_type', message: 'scopes is required: a non-empty array of scope names' });
  } else {
    scopes.forEach((scope, index) => {
      if (typeof scope !== 'string' || !(scopeNames as readonly string[]).includes(scope)) {
        errors.push({ field: fieldPath('scopes', index), code: 'invalid_scope', message: `${String(scope)} is not a Merx scope` });
      } else if (!callerScopes.has(scope)) {
        errors.push({ field: fieldPath('scopes', index), code: 'scope_not_held', message: `a key cannot get ${scope}: the token creating it does not hold it` });
      }
    });
    if (new Set(scopes).size !== scopes.length) errors.push({ field: 'scopes', code: 'duplicate', message: 'scopes must not repeat a scope' });
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
