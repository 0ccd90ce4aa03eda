import { buildEvent, newId, NotFound, parsePageRequest, toListPage, type Db, type MerchantId, type Outbox } from '@merx/kit';
import { presentApiKey, validateNewApiKey, type ApiKeyRecord } from '../domain/api-key.js';
import { generateApiKey, hashApiKey } from '../provider/index.js';
import { findMerchant, insertApiKeyForMerchant } from '../store/accounts-store.js';
import { findApiKeyForMerchant, listApiKeysForMerchant, revokeApiKeyForMerchant } from '../store/api-keys-store.js';

export interface ApiKeyUseCaseDeps {
  db: Db;
  outbox: Outbox;
  now?: () => Date;
}

export function apiKeyUseCases({ db, outbox, now = () => new Date() }: ApiKeyUseCaseDeps) {
  return {
    /** The key string exists only in this answer; the table keeps its SHA-256. */
    async createApiKey(merchantId: MerchantId, callerScopes: ReadonlySet<string>, body: unknown) {
      const input = validateNewApiKey(body, callerScopes);
      const merchant = await findMerchant(db, merchantId);
      if (!merchant) throw new NotFound('merchant');
      const generated = generateApiKey(merchant.mode === 'live' ? 'live' : 'test');
      return outbox.transaction(async (tx, emit) => {
        const key = await insertApiKeyForMerchant(tx, merchantId, {
          id: newId('key'),
          name: input.name,
          clientId: generated.clientId,
          secretHash: hashApiKey(generated.apiKey),
          scopes: input.scopes,
          createdAt: now(),
          lastUsedAt: null,
          revokedAt: null,
        });
        emit(buildEvent('api_keys.created', merchantId, { object: presentApiKey(key) }));
        return presentApiKey(key, generated.apiKey);
      });
    },

    async getApiKey(merchantId: MerchantId, id: string): Promise<ApiKeyRecord> {
      const key = await findApiKeyForMerchant(db, merchantId, id);
      if (!key) throw new NotFound('api_key', id);
      return key;
    },

    async listApiKeys(merchantId: MerchantId, query: Record<string, unknown>) {
      const page = parsePageRequest(query);
      return toListPage(await listApiKeysForMerchant(db, merchantId, page), page.limit, (key) => presentApiKey(key));
    },

    /** Revoking twice is no error and no second event: the key stays revoked as of the first time. */
    async revokeApiKey(merchantId: MerchantId, id: string): Promise<void> {
      await outbox.transaction(async (tx, emit) => {
        const current = await findApiKeyForMerchant(tx, merchantId, id, { forUpdate: true });
        if (!current) throw new NotFound('api_key', id);
        if (current.revokedAt) return;
        const revoked = await revokeApiKeyForMerchant(tx, merchantId, id, now());
        emit(buildEvent('api_keys.revoked', merchantId, { object: presentApiKey(revoked) }));
      });
    },
  };
}

export type ApiKeyUseCases = ReturnType<typeof apiKeyUseCases>;
