import { fieldPath, isCurrency, isTimeZone } from '@merx/kit';
import { bodyObject, FieldChecks, nonEmptyChanges } from './field-checks.js';

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
const NOT_THE_MERCHANTS = [...STANDING_FIELDS, 'id', 'object', 'version', 'created_at', 'updated_at'];

export function validateProfileChanges(input: unknown): Partial<MerchantProfile> {
  const body = bodyObject(input);
  nonEmptyChanges(body);
  const check = new FieldChecks();
  const changes: Partial<MerchantProfile> = {};
  for (const key of Object.keys(body)) {
    if (NOT_THE_MERCHANTS.includes(key)) check.fail(fieldPath('', key), 'read_only', `${key} is set by the operator and cannot be changed here`);
    else if (!(PROFILE_FIELDS as readonly string[]).includes(key)) check.fail(fieldPath('', key), 'unknown_field', `${key} is not a merchant field`);
  }
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
