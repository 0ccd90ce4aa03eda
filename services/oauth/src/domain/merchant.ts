import { fieldPath, isCurrency, isTimeZone, ValidationFailed, type FieldError } from '@merx/kit';
import { validateOwner, type OwnerInput } from './user.js';

export const MERCHANT_MODES = ['sandbox', 'live'] as const;
export const MERCHANT_PLANS = ['sandbox', 'standard', 'scale'] as const;
export type MerchantMode = (typeof MERCHANT_MODES)[number];
export type MerchantPlan = (typeof MERCHANT_PLANS)[number];

export interface Merchant {
  id: string;
  name: string;
  mode: MerchantMode;
  plan: MerchantPlan;
  defaultCurrency: string;
  timezone: string;
  status: 'active' | 'suspended';
  /** Every change of either half: `profileVersion + standingVersion - 1`. */
  version: number;
  /** The standing's (mode, plan, status) own count of changes; oauth owns it. */
  standingVersion: number;
  standingUpdatedAt: Date;
  /** The version of the profile copy oauth holds; the merchants service owns the profile. */
  profileVersion: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The merchant's `version`: one per change of either half, so both services show the same number once their copies agree. */
export function combinedVersion(profileVersion: number, standingVersion: number): number {
  return profileVersion + standingVersion - 1;
}

export type MerchantProvisioning = Pick<Merchant, 'name' | 'mode' | 'plan' | 'defaultCurrency' | 'timezone'> & { owner: OwnerInput };

const FIELDS = ['name', 'mode', 'plan', 'default_currency', 'timezone', 'owner'];

/** The operator's provisioning request; a sandbox merchant gets the sandbox plan unless told otherwise. */
export function validateMerchantProvisioning(input: unknown): MerchantProvisioning {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationFailed([{ field: '(body)', code: 'invalid_type', message: 'the body must be a JSON object' }]);
  }
  const body = input as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(body))
    if (!FIELDS.includes(key)) errors.push({ field: fieldPath('', key), code: 'unknown_field', message: `${key} is not a merchant field` });
  const name = body.name;
  if (typeof name !== 'string' || name.trim().length === 0)
    errors.push({ field: 'name', code: name === undefined ? 'required' : 'invalid_type', message: 'name is required: a non-empty string' });
  else if ([...name].length > 255) errors.push({ field: 'name', code: 'too_long', message: 'name must be at most 255 characters' });
  const mode = body.mode ?? 'sandbox';
  if (!(MERCHANT_MODES as readonly unknown[]).includes(mode)) errors.push({ field: 'mode', code: 'invalid_value', message: 'mode must be sandbox or live' });
  const plan = body.plan ?? (mode === 'live' ? 'standard' : 'sandbox');
  if (!(MERCHANT_PLANS as readonly unknown[]).includes(plan))
    errors.push({ field: 'plan', code: 'invalid_value', message: 'plan must be sandbox, standard or scale' });
  const defaultCurrency = body.default_currency ?? 'USD';
  if (!isCurrency(defaultCurrency))
    errors.push({ field: 'default_currency', code: 'invalid_currency', message: 'default_currency must be an ISO 4217 code in upper case' });
  const timezone = body.timezone ?? 'UTC';
  if (typeof timezone !== 'string' || !isTimeZone(timezone))
    errors.push({ field: 'timezone', code: 'invalid_timezone', message: 'timezone must be an IANA time zone such as Europe/Berlin' });
  const owner = validateOwner(body.owner, errors);
  if (errors.length > 0 || !owner) throw new ValidationFailed(errors);
  return {
    owner,
    name: name as string,
    mode: mode as MerchantMode,
    plan: plan as MerchantPlan,
    defaultCurrency: defaultCurrency as string,
    timezone: timezone as string,
  };
}

export function presentMerchant(merchant: Merchant) {
  return {
    id: merchant.id,
    object: 'merchant' as const,
    name: merchant.name,
    mode: merchant.mode,
    plan: merchant.plan,
    default_currency: merchant.defaultCurrency,
    timezone: merchant.timezone,
    status: merchant.status,
    version: merchant.version,
    profile_version: merchant.profileVersion,
    standing_version: merchant.standingVersion,
    created_at: merchant.createdAt.toISOString(),
    updated_at: merchant.updatedAt.toISOString(),
  };
}

/** The whole standing, as `merchants.standing_changed` carries it: only the half oauth owns, with its own version. */
export function presentStanding(merchant: Merchant) {
  return {
    object: 'merchant_standing' as const,
    id: merchant.id,
    mode: merchant.mode,
    plan: merchant.plan,
    status: merchant.status,
    version: merchant.standingVersion,
    updated_at: merchant.standingUpdatedAt.toISOString(),
  };
}

/** The merchant's own settings: the merchants service owns them, oauth keeps a copy to show. */
export interface MerchantProfile {
  name: string;
  defaultCurrency: string;
  timezone: string;
}

/** A profile as a merchants.updated carries it, with the profile's version and the time of that change. */
export interface MerchantProfileChange {
  profile: MerchantProfile;
  version: number;
  updatedAt: Date;
}

const PROFILE_FIELDS = ['name', 'default_currency', 'timezone'] as const;

/**
 * The profile a `merchants.updated` carries, or undefined when it carries no profile change: only
 * an event whose `previous` names a profile field is one (the merchant's PATCH in the merchants
 * service). The release before this one also announced the operator's changes as
 * merchants.updated (naming status or plan); one of those still on the bus is no profile change.
 * The version is `profile_version`; an event from before that field existed carries the merchants
 * service's `version`, which is where its profile numbering went on. A profile change that does
 * not hold together is a publisher's bug: throwing parks it on the poison queue.
 */
export function profileChangeOf(data: { object: Record<string, unknown>; previous?: Record<string, unknown> }): MerchantProfileChange | undefined {
  const previous = data.previous ?? {};
  if (!PROFILE_FIELDS.some((field) => Object.hasOwn(previous, field))) return undefined;
  const { name, default_currency: defaultCurrency, timezone, updated_at: updatedAt } = data.object;
  const version = data.object.profile_version ?? data.object.version;
  const problems: string[] = [];
  if (typeof name !== 'string' || name.trim().length === 0 || [...name].length > 255) problems.push('name');
  if (!isCurrency(defaultCurrency)) problems.push('default_currency');
  if (typeof timezone !== 'string' || !isTimeZone(timezone)) problems.push('timezone');
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) problems.push('profile_version');
  const changedAt = typeof updatedAt === 'string' ? new Date(updatedAt) : undefined;
  if (!changedAt || Number.isNaN(changedAt.getTime())) problems.push('updated_at');
  if (problems.length > 0) throw new Error(`merchants.updated carries an unusable profile (${problems.join(', ')})`);
  return {
    profile: { name: name as string, defaultCurrency: defaultCurrency as string, timezone: timezone as string },
    version: version as number,
    updatedAt: changedAt!,
  };
}
