import { scopeNames } from '@merx/contracts';
import { buildEvent, newId, trustedMerchantId, type Outbox } from '@merx/kit';
import { presentApiKey } from '../domain/api-key.js';
import { presentMerchant, validateMerchantProvisioning } from '../domain/merchant.js';
import { generatePassword, hashPassword } from '../domain/password.js';
import { presentOwner } from '../domain/user.js';
import { generateApiKey, hashApiKey } from '../provider/index.js';
import { insertApiKeyForMerchant, insertMerchant } from '../store/accounts-store.js';
import { insertUserForMerchant } from '../store/users-store.js';

/**
 * The operator creates a merchant, its owner (who logs in on the consent pages) and its first
 * API key in one transaction: there is never a merchant nobody can authenticate as, nor a key
 * without its merchant. The key, and a generated password, are returned once.
 */
export async function provisionMerchant(outbox: Outbox, body: unknown, now: Date = new Date()) {
  const { owner, ...input } = validateMerchantProvisioning(body);
  const merchantId = trustedMerchantId(newId('mch'));
  const generated = generateApiKey(input.mode === 'live' ? 'live' : 'test');
  const generatedPassword = owner.password === undefined ? generatePassword() : undefined;
  // Hashing takes ~100 ms of CPU: done before the transaction so no connection waits on it.
  const passwordHash = await hashPassword(owner.password ?? generatedPassword!);
  return outbox.transaction(async (tx, emit) => {
    const merchant = await insertMerchant(tx, { id: merchantId, ...input, status: 'active', createdAt: now });
    const user = await insertUserForMerchant(tx, merchantId, { id: newId('usr'), email: owner.email, passwordHash, createdAt: now });
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
    return {
      object: 'merchant_provisioning' as const,
      merchant: presentMerchant(merchant),
      owner: presentOwner(user, generatedPassword),
      api_key: presentApiKey(key, generated.apiKey),
    };
  });
}
