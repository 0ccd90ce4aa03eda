import { scopeNames } from '@merx/contracts';
import { buildEvent, newId, trustedMerchantId, type Outbox } from '@merx/kit';
import { presentApiKey } from '../domain/api-key.js';
import { presentMerchant, validateMerchantProvisioning } from '../domain/merchant.js';
import { generateApiKey, hashApiKey } from '../provider/index.js';
import { insertApiKeyForMerchant, insertMerchant } from '../store/accounts-store.js';

/**
 * The operator creates a merchant and its first API key in one transaction: there is never a
 * merchant nobody can authenticate as, nor a key without its merchant. The key is returned once.
 */
export async function provisionMerchant(outbox: Outbox, body: unknown, now: Date = new Date()) {
  const input = validateMerchantProvisioning(body);
  const merchantId = trustedMerchantId(newId('mch'));
  const generated = generateApiKey(input.mode === 'live' ? 'live' : 'test');
  return outbox.transaction(async (tx, emit) => {
    const merchant = await insertMerchant(tx, { id: merchantId, ...input, status: 'active', version: 1, createdAt: now, updatedAt: now });
    const key = await insertApiKeyForMerchant(tx, merchantId, {
      id: newId('key'),
      name: 'Default key',
      clientId: generated.clientId,
      secretHash: hashApiKey(generated.apiKey),
      scopes: [...scopeNames],
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    });
    emit(buildEvent('merchants.created', merchantId, { object: presentMerchant(merchant) }));
    emit(buildEvent('api_keys.created', merchantId, { object: presentApiKey(key) }));
    return { object: 'merchant_provisioning' as const, merchant: presentMerchant(merchant), api_key: presentApiKey(key, generated.apiKey) };
  });
}
