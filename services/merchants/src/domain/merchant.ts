import { isCurrency, isTimeZone } from '@merx/kit';
import { FieldChecks, structureOf } from './field-checks.js';

/**
 * The merchant as this service serves it at /api/v1/merchant. The profile (name, currency,
 * time zone) is the merchant's to change here; the standing (mode, plan, status) is the
 * operator's, kept by the oauth service and copied from its events.
 */
export interface Merchant {
  id: string;
  name: string;
  mode: 'sandbox' | 'live';
  plan: string;
  default_currency: string;
  timezone: string;
  status: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export type MerchantProfile = Pick<Merchant, 'name' | 'default_currency' | 'timezone'>;
export const PROFILE_FIELDS = ['name', 'default_currency', 'timezone'] as const;
/** The operator's fields, kept by the oauth service; this service copies them from its events. */
export const STANDING_FIELDS = ['mode', 'plan', 'status'] as const;
export type StandingField = (typeof STANDING_FIELDS)[number];

export function validateProfileChanges(input: unknown): Partial<MerchantProfile> {
  // plan, status and mode are the operator's: MerchantUpdate does not have them, so they are refused as unknown members.
  const body = structureOf('MerchantUpdate', input);
  const check = new FieldChecks();
  const changes: Partial<MerchantProfile> = {};
  if (body.name !== undefined) changes.name = check.text(body.name, 'name', { max: 255 });
  if (body.default_currency !== undefined) {
    if (isCurrency(body.default_currency)) changes.default_currency = body.default_currency;
    else check.fail('default_currency', 'invalid_currency', 'default_currency must be an ISO 4217 code in upper case');
  }
  if (body.timezone !== undefined) {
    if (isTimeZone(body.timezone)) changes.timezone = body.timezone;
    else check.fail('timezone', 'invalid_timezone', 'timezone must be an IANA time zone such as Europe/Berlin');
  }
  check.throwIfAny();
  return changes;
}

export function presentMerchant(merchant: Merchant) {
  return {
    id: merchant.id,
    object: 'merchant' as const,
    name: merchant.name,
    mode: merchant.mode,
    plan: merchant.plan,
    default_currency: merchant.default_currency,
    timezone: merchant.timezone,
    status: merchant.status,
    version: merchant.version,
    created_at: merchant.createdAt.toISOString(),
    updated_at: merchant.updatedAt.toISOString(),
  };
}

export type MerchantResource = ReturnType<typeof presentMerchant>;

/** A merchant object from another service's event (merchants.created / .updated) as this service stores it. */
export function merchantFromEvent(object: MerchantResource): Merchant {
  return {
    id: object.id,
    name: object.name,
    mode: object.mode,
    plan: object.plan,
    default_currency: object.default_currency,
    timezone: object.timezone,
    status: object.status,
    version: object.version,
    createdAt: new Date(object.created_at),
    updatedAt: new Date(object.updated_at),
  };
}
