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

export function presentApiKey(key: ApiKeyRecord, secret?: string) {
  return {
    id: key.id,
    object: 'api_key' as const,
    name: key.name,
    prefix: key.clientId,
    scopes: key.scopes,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt ? key.lastUsedAt.toISOString() : null,
    ...(secret === undefined ? {} : { secret }),
  };
}
