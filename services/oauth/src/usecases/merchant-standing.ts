import { buildEvent, fieldPath, NotFound, trustedMerchantId, ValidationFailed, type FieldError, type Outbox } from '@merx/kit';
import { MERCHANT_PLANS, presentMerchant, presentStanding, type Merchant } from '../domain/merchant.js';
import { findMerchantForUpdate, updateMerchantStanding } from '../store/accounts-store.js';

function validateStanding(input: unknown): { status?: Merchant['status']; plan?: Merchant['plan'] } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  }
  const body = input as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(body))
    if (key !== 'status' && key !== 'plan') errors.push({ field: fieldPath('', key), code: 'unknown_field', message: `${key} cannot be changed here` });
  if (body.status !== undefined && body.status !== 'active' && body.status !== 'suspended')
    errors.push({ field: 'status', code: 'invalid_value', message: 'status must be active or suspended' });
  if (body.plan !== undefined && !(MERCHANT_PLANS as readonly unknown[]).includes(body.plan))
    errors.push({ field: 'plan', code: 'invalid_value', message: 'plan must be sandbox, standard or scale' });
  if (Object.keys(body).length === 0) errors.push({ field: '(body)', code: 'required', message: 'send status and/or plan' });
  if (errors.length > 0) throw new ValidationFailed(errors);
  return body as { status?: Merchant['status']; plan?: Merchant['plan'] };
}

/**
 * The operator suspends, reactivates or re-plans a merchant. The standing is oauth's alone: its
 * version moves on by one and `merchants.standing_changed` carries the whole standing with that
 * version, so every copy (the merchants service's) replaces its own only with a newer one, and
 * every verifier hears of a suspension (a merchant-wide revocation of its tokens).
 */
export async function changeMerchantStanding(outbox: Outbox, id: string, body: unknown, now: Date = new Date()) {
  const changes = validateStanding(body);
  const merchantId = trustedMerchantId(id);
  return outbox.transaction(async (tx, emit) => {
    const current = await findMerchantForUpdate(tx, merchantId);
    if (!current) throw new NotFound('merchant', id);
    const effective = Object.fromEntries(Object.entries(changes).filter(([key, value]) => current[key as keyof typeof changes] !== value));
    if (Object.keys(effective).length === 0) return presentMerchant(current);
    const updated = await updateMerchantStanding(tx, merchantId, effective, now);
    const previous = Object.fromEntries(Object.keys(effective).map((key) => [key, current[key as 'status' | 'plan']]));
    emit(buildEvent('merchants.standing_changed', merchantId, { object: presentStanding(updated), previous }));
    return presentMerchant(updated);
  });
}
